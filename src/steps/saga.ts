/**
 * engine.compensate(id): the saga. The workflow's code is replayed from its records (every
 * succeeded step handed back, no function called) to find each step's `compensate`; then the
 * succeeded compensatable steps are compensated newest first. Each compensation is a step row
 * of its own under the step's key: intended before it runs, `compensated` after, so a crash in
 * the middle and a second compensate(id) compensate each step exactly once (a compensation cut
 * off inside is run again; it must tolerate that). Compensation is a new forward action, not an
 * undo; after an irreversible step (the pivot) has succeeded the saga is refused: go forward.
 */

import { SteplogError, toErrorInfo } from "../base/errors.js";
import type { StepRow } from "../store/types.js";
import { latestRows } from "../store/latest-rows.js";
import { replayFailure } from "./hand-back.js";
import { newRow, writeIntent, writeOutcome } from "./step-log.js";
import type { AttemptState, SagaEntry } from "./state.js";
import type { StepCall } from "./step-call.js";
import { formatResolution, isCompensation } from "../workflow/step-resolution.js";

export type { SagaEntry };

/** Thrown into the workflow's code to end the replay at the first step with nothing to hand back. */
export class ReplayDone extends Error {
  override name = "ReplayDone";
}

/**
 * Whether a key's rows leave an effect in the world to undo: a success, or a cut-off execution,
 * after the last compensation (or a compensation itself cut off). A success that a later
 * compensation already undid needs nothing, however the redo after it ended.
 */
export function needsCompensation(rows: StepRow[]): boolean {
  let lastEffect = -1;
  let lastCompensation = -1;
  rows.forEach((row, i) => {
    if (isCompensation(row)) {
      if (row.status === "compensated") lastCompensation = i;
      else if (row.status === "intended") lastEffect = Math.max(lastEffect, i); // cut off inside: run it again
    } else if (row.status === "succeeded" || row.status === "intended" || row.status === "escalated") {
      lastEffect = i;
    }
  });
  return lastEffect > lastCompensation;
}

/** ctx.step during the replay (the plan's "replay"): hand back the recorded value and note how to compensate the step. */
export async function replayForSaga(state: AttemptState, call: StepCall): Promise<unknown> {
  const { key } = call;
  const rows = state.stored.steps.filter((row) => row.key === key);
  const succeeded = rows.filter((row) => row.status === "succeeded").at(-1);
  if (call.options.effect === "compensatable" && call.options.compensate && needsCompensation(rows)) {
    const undone = succeeded && rows.indexOf(succeeded) < rows.findLastIndex((r) => r.status === "compensated");
    state.saga.push({ key, call, value: succeeded?.value && !undone ? await state.payloads.decode(succeeded.value) : undefined });
  }
  // A failure the workflow handled is thrown again, so the replay takes the handler's path as the run did.
  const latest = rows.at(-1);
  if (latest?.status === "failed" && state.order.handled.has(key)) return replayFailure(state, key, latest, call.options.errors);
  if (!succeeded) throw new ReplayDone(`replay reached ${key}, which has no value to hand back`);
  const value = succeeded.value === null ? undefined : await state.payloads.decode(succeeded.value);
  return call.options.upcast ? call.options.upcast(value, { version: succeeded.version }) : value;
}

/** Succeeded (or cut-off) compensatable steps the replay could not reach: the code no longer enters them. */
export function unreachable(state: AttemptState): string[] {
  const reached = new Set(state.saga.map((entry) => entry.key));
  return latestRows(state.stored.steps, (row) => row.effect === "compensatable" && !reached.has(row.key))
    .filter((row) => needsCompensation(state.stored.steps.filter((r) => r.key === row.key)))
    .map((row) => row.key);
}

/** Compensate newest first; skip what a previous saga already compensated. */
export async function runSaga(state: AttemptState): Promise<void> {
  for (const entry of [...state.saga].reverse()) {
    const rows = state.stored.steps.filter((row) => row.key === entry.key);
    if (!needsCompensation(rows)) continue;
    // Traced: each compensation is a step span of the saga's attempt.
    const span = state.trace?.step(entry.key, entry.call.name, "compensatable", "compensated");
    let done: StepRow;
    try {
      done = await compensateOne(state, entry, rows);
    } catch (error) {
      span?.end(error, undefined);
      throw error;
    }
    span?.end(undefined, done);
  }
}

/** One step's compensation, recorded as a row of its own under the step's key; that row, compensated. */
async function compensateOne(state: AttemptState, entry: SagaEntry, rows: StepRow[]): Promise<StepRow> {
  const clock = state.clock;
  const latest = rows.at(-1)!;
  let row: StepRow;
  if (isCompensation(latest) && latest.status === "intended") {
    row = latest; // a compensation cut off by a crash: run it again
    await state.confirmLease();
  } else {
    row = newRow(state, entry.call, latest.idempotencyKey);
    row.resolution = formatResolution({ policy: "compensate", found: "saga", attempt: state.number, compensation: true });
    await writeIntent(state, row);
  }
  state.hooks?.onCall?.(entry.key, "compensate");
  try {
    await entry.call.options.compensate!(entry.value, { idempotencyKey: row.idempotencyKey, runId: state.runId, step: entry.key });
  } catch (error) {
    // Left intended: the next compensate(id) runs it again.
    throw error instanceof SteplogError ? error : Object.assign(error instanceof Error ? error : new Error(String(error)), { step: entry.key });
  }
  const done: StepRow = { ...row, status: "compensated", endedAt: clock.now(), calls: row.calls + 1 };
  await writeOutcome(state, done);
  // A step that was cut off inside its effect is settled too: what it did was undone.
  const cutOff = rows.filter((r) => r.status === "intended" && !isCompensation(r)).at(-1);
  if (cutOff) {
    const settled: StepRow = {
      ...cutOff,
      status: "failed",
      error: await state.payloads.encodeError(
        toErrorInfo(
          Object.assign(new Error(`Attempt ${cutOff.attempt} was cut off inside its effect; compensated by the saga.`), { name: "OutcomeUnknown" }),
          entry.key,
        ),
      ),
      endedAt: clock.now(),
      resolution: formatResolution({ policy: "compensate", found: "unknown", attempt: state.number }),
    };
    await writeOutcome(state, settled);
  }
  state.addCompensation(entry.key);
  state.emit({ type: "step-resolved", runId: state.runId, step: entry.key, policy: "compensate", found: "saga" });
  return done;
}
