/**
 * The step log as one attempt writes it: every intent and every outcome of every step, wait,
 * compensation and resolution goes through here. Each write carries the attempt's fence (the
 * store refuses it once another attempt holds the run, and the attempt then ends LEASE_LOST),
 * and keeps the attempt's view of each key's latest row up to date.
 */

import type { ErrorInfo } from "../base/errors.js";
import type { StepOutcome, StepRow } from "../store/types.js";
import type { Thrown } from "./handled-failures.js";
import type { AttemptState } from "./state.js";
import type { StepCall } from "./step-call.js";
import { MAX_CALL_ERRORS, parseResolution, withResolution } from "../workflow/step-resolution.js";

/** A new row for the call's key, intended now, at the next seq. */
export function newRow(state: AttemptState, call: StepCall, idempotencyKey: string): StepRow {
  return {
    runId: state.runId,
    seq: state.writes.nextSeq(),
    attempt: state.number,
    key: call.key,
    name: call.name,
    status: "intended",
    effect: call.options.effect ?? "idempotent",
    idempotencyKey,
    value: null,
    error: null,
    version: state.version,
    intendedAt: state.clock.now(),
    endedAt: null,
    calls: 0,
    resolution: null,
    usage: null,
    position: call.position,
  };
}

/** The outcome part of a row, as the store takes it. */
export function outcomeOf(row: StepRow): StepOutcome {
  return {
    seq: row.seq,
    status: row.status as Exclude<StepRow["status"], "intended">,
    value: row.value,
    error: row.error,
    endedAt: row.endedAt ?? 0,
    calls: row.calls,
    resolution: row.resolution,
    usage: row.usage,
  };
}

/**
 * Write a new row: an intent (a step's, a wait's, a compensation's), or a row already settled (a
 * value given on a continue). Durable when this resolves. A settled row becomes its key's latest;
 * an intent replaces the key's latest row if it has one (a new key's row comes in with its
 * outcome: nothing reads a key under way, and perf: a Map's only entry added then deleted
 * rebuilds its table, an allocation a step).
 */
export function writeIntent(state: AttemptState, row: StepRow): Promise<void> {
  // Chunks given to a stream before the intent are queued before it (streams.ts).
  if (state.streams !== undefined && !state.streams.queued()) return state.streams.idle().then(() => writeIntent(state, row));
  // perf: not async (an async function's own promise cost about 2,800 instructions a step on the step's path).
  try {
    return state.writes.store.writeIntent(state.writes.fence, row).then(
      () => {
        if (row.status === "intended") state.order.replaceLatest(row);
        else state.order.keepLatest(row);
      },
      (error: unknown) => {
        throw state.writes.failed(error);
      },
    );
  } catch (error) {
    return Promise.reject(state.writes.failed(error));
  }
}

/** Write a row's outcome and make it the key's latest; durable when this resolves. `consumes`: the event it takes. */
export async function writeOutcome(state: AttemptState, row: StepRow, consumes?: StepOutcome["consumes"]): Promise<void> {
  const outcome = outcomeOf(row);
  if (state.budget !== undefined && row.usage !== null) state.budget.charge(outcome, row.usage);
  if (state.streams !== undefined && !state.streams.queued()) await state.streams.idle();
  try {
    await state.writes.store.writeOutcome(state.writes.fence, consumes ? { ...outcome, consumes } : outcome);
  } catch (error) {
    throw state.writes.failed(error);
  }
  state.order.keepLatest(row);
}

/**
 * Write a read or idempotent step's outcome without waiting for it: it may commit with the next
 * write (group commit). The attempt's ending waits for it, and a crash before it re-drives the
 * step with the same key, which its effect allows.
 */
export function writeOutcomeLater(state: AttemptState, row: StepRow): void {
  const outcome = outcomeOf(row);
  if (state.budget !== undefined && row.usage !== null) state.budget.charge(outcome, row.usage);
  const streams = state.streams;
  if (streams !== undefined && !streams.queued()) {
    state.writes.track(streams.idle().then(() => state.writes.writeLater(outcome)));
    return;
  }
  state.writes.writeLater(outcome);
}

/** The mark of a failure thrown into the workflow's code now (handled-failures.ts). */
export function thrownNow(state: AttemptState): Thrown {
  return { attempt: state.number, entered: state.order.entered };
}

/** How a step that did not return a value ended: its error, and `thrown` when that error is thrown into the workflow's code (it may handle it and go on). */
export interface Unreturned {
  status: "failed" | "stopped";
  error: ErrorInfo;
  thrown?: Thrown;
}

/** Record a step that did not return a value: failed, or stopped by its attempt's end. */
export async function settle(state: AttemptState, row: StepRow, how: Unreturned): Promise<void> {
  if (how.thrown) row.resolution = withResolution(row.resolution, { thrown: how.thrown });
  row.error = await state.payloads.encodeError(how.error);
  row.status = how.status;
  row.endedAt = state.clock.now();
  state.emit({ type: "step-failed", runId: state.runId, step: row.key, error: how.error });
  await writeOutcome(state, row);
}

/**
 * Keep a failed call's error on the row (written with its outcome): short (name, code, message
 * up to 1,000 characters, no stack), encoded as the codec stores errors, at most
 * MAX_CALL_ERRORS a row (the first, then the latest).
 */
export async function noteCallError(state: AttemptState, row: StepRow, error: ErrorInfo): Promise<void> {
  const short: ErrorInfo = { name: error.name, message: error.message.length > 1000 ? `${error.message.slice(0, 1000)}…` : error.message };
  if (error.code !== undefined) short.code = error.code;
  const calls = parseResolution(row.resolution).callErrors ?? [];
  calls.push({ call: row.calls, error: await state.payloads.encodeError(short) });
  if (calls.length > MAX_CALL_ERRORS) calls.splice(1, 1);
  row.resolution = withResolution(row.resolution, { callErrors: calls });
}
