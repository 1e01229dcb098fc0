/**
 * The step log as one attempt writes it: every intent and every outcome of every step, wait,
 * compensation and resolution goes through here. Each write carries the attempt's fence (the
 * store refuses it once another attempt holds the run, and the attempt then ends LEASE_LOST),
 * and keeps the attempt's view of each key's latest row up to date.
 */

import type { ErrorInfo } from "../base/errors.js";
import type { StepOutcome, StepRow } from "../store/types.js";
import type { Thrown } from "./handled-failures.js";
import type { AttemptState, StepCall } from "./state.js";
import { MAX_CALL_ERRORS, parseResolution, withResolution } from "../workflow/step-resolution.js";

/** A new row for the key, intended, at the next seq. */
export function newRow(state: AttemptState, key: string, call: StepCall, idempotencyKey: string, now: number): StepRow {
  return {
    runId: state.runId,
    seq: state.nextSeq++,
    attempt: state.number,
    key,
    name: call.name,
    status: "intended",
    effect: call.options.effect ?? "idempotent",
    idempotencyKey,
    value: null,
    error: null,
    version: state.version,
    intendedAt: now,
    endedAt: null,
    calls: 0,
    resolution: null,
    usage: null,
    position: call.position ?? null,
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
 * Write a new row (intended, or already settled as a supplied value is) and make it the key's
 * latest; durable when this resolves. (Plain promise chains, not async functions: these are on
 * every step's path, and each async layer would add ticks.)
 */
export function writeIntent(state: AttemptState, row: StepRow): Promise<void> {
  return state.settings.store.writeIntent(state.fence, row).then(
    () => state.keepLatest(row),
    (error: unknown) => {
      throw state.writeFailed(error);
    },
  );
}

/** Write a row's outcome and make it the key's latest; durable when this resolves. `consumes`: the event it takes. */
export function writeOutcome(state: AttemptState, row: StepRow, consumes?: StepOutcome["consumes"]): Promise<void> {
  const outcome = outcomeOf(row);
  return state.settings.store.writeOutcome(state.fence, consumes ? { ...outcome, consumes } : outcome).then(
    () => state.keepLatest(row),
    (error: unknown) => {
      throw state.writeFailed(error);
    },
  );
}

/**
 * Write a read or idempotent step's outcome without waiting for it: it may commit with the next
 * write (group commit). The attempt's ending waits for it, and a crash before it re-drives the
 * step with the same key, which its effect allows.
 */
export function writeOutcomeLater(state: AttemptState, row: StepRow): void {
  state.writeOutcomeLater(outcomeOf(row));
}

/** The mark of a failure thrown into the workflow's code now (handled-failures.ts). */
export function thrownNow(state: AttemptState): Thrown {
  return { attempt: state.number, entered: state.entered };
}

/**
 * Record a step that did not return a value: failed, or stopped by its attempt's end. `thrown`
 * when its own error is thrown into the workflow's code (the code may handle it and go on).
 */
export async function settle(state: AttemptState, key: string, row: StepRow, status: "failed" | "stopped", error: ErrorInfo, thrown?: Thrown): Promise<void> {
  if (thrown) row.resolution = withResolution(row.resolution, { thrown });
  row.error = await state.settings.payloads.encodeError(error);
  row.status = status;
  row.endedAt = state.settings.clock.now();
  state.emit({ type: "step-failed", runId: state.runId, step: key, error });
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
  calls.push({ call: row.calls, error: await state.settings.payloads.encodeError(short) });
  if (calls.length > MAX_CALL_ERRORS) calls.splice(1, 1);
  row.resolution = withResolution(row.resolution, { callErrors: calls });
}
