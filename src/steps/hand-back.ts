/**
 * Records handed back instead of a call: a succeeded value checked against the code as it is
 * now (the version rule, `upcast`, `result`), a handled failure thrown again, and a value given
 * with continue({ values }) recorded and handed back. Steps and waits both use these.
 */

import { rebuildError, ResultRejectedError, VersionChangedError } from "../base/errors.js";
import type { StepOptions } from "../workflow/context.js";
import { validate } from "../workflow/value-schemas.js";
import { isBreakingChange } from "../workflow/versions.js";
import { decodedOf } from "../payloads/payloads.js";
import type { StepRow } from "../store/types.js";
import { newRow, writeIntent } from "./step-log.js";
import { markFailedStep, type AttemptState } from "./state.js";
import type { StepCall } from "./step-call.js";
import { formatResolution } from "../workflow/step-resolution.js";

/**
 * Hand the call's settled record back: a success's value (a step's checked against the code as
 * it is now; a wait's payload as recorded), or a handled failure's error thrown again.
 */
export function handBack(state: AttemptState, call: StepCall): Promise<unknown> {
  const record = call.record!;
  if (record.status !== "succeeded") return replayFailure(state, call.key, record, call.options.errors);
  return call.kind === "step" ? reuse(state, call) : reuseWait(state, call.key, record);
}

/** A finished wait before the start point: its payload (event, timer, child's value) as recorded. */
async function reuseWait(state: AttemptState, key: string, record: StepRow): Promise<unknown> {
  state.order.checkOrder(key, record);
  noteReused(state, key, record);
  return record.value === null ? undefined : await state.payloads.decode(record.value);
}

/**
 * A succeeded record before the start point: its value, checked against the code as it is now.
 * Synchronous unless an upcast, a result schema or a codec needs awaiting (perf: a continue of a
 * long run passes through thousands of these).
 */
function reuse(state: AttemptState, call: StepCall): Promise<unknown> {
  const { key, options } = call;
  const record = call.record!;
  // Checked as the step is entered (before anything is awaited), so steps entered together keep their order.
  state.order.checkOrder(key, record);
  if (!options.upcast && !state.plan.ignoreVersion && isBreakingChange(record.version, state.workflow.version)) {
    state.ending.stopWith(new VersionChangedError(state.runId, key, record.version!, state.workflow.version!));
  }
  const decoded = record.value === null ? undefined : state.payloads.decode(record.value);
  if (options.upcast || options.result || decoded instanceof Promise) return checkReused(state, call, decoded);
  noteReused(state, key, record);
  return Promise.resolve(decoded);
}

async function checkReused(state: AttemptState, call: StepCall, decoded: unknown): Promise<unknown> {
  const { key, options } = call;
  const record = call.record!;
  let value = await decoded;
  if (options.upcast) {
    try {
      value = options.upcast(value, { version: record.version });
    } catch (error) {
      state.ending.stopWith(new ResultRejectedError(state.runId, key, [`upcast threw: ${(error as Error).message}`], true));
    }
  }
  if (options.result) {
    const checked = await validate(options.result, value);
    if (!checked.ok) state.ending.stopWith(new ResultRejectedError(state.runId, key, checked.issues, true));
    value = checked.value;
  }
  noteReused(state, key, record);
  return value;
}

/**
 * A failure the workflow handled, thrown again without calling the function: the recorded error
 * rebuilt (as one of the step's declared `errors` classes where its class is among them), so the
 * workflow's handler takes the same path it took the first time.
 */
export async function replayFailure(state: AttemptState, key: string, record: StepRow, classes: StepOptions["errors"]): Promise<never> {
  // Checked as the step is entered (before anything is awaited), so steps entered together keep their order.
  state.order.checkOrder(key, record);
  const info = await state.payloads.decodeError(record.error!);
  noteReused(state, key, record);
  throw markFailedStep(rebuildError(info, classes ?? [], { runId: state.runId }), key);
}

/** A record handed back instead of a call: counted, and told to listeners (steps and waits). */
export function noteReused(state: AttemptState, key: string, record: StepRow): void {
  state.order.noteReused(key, record);
  if (state.listening) {
    state.emit({ type: "step-reused", runId: state.runId, step: key, recordedBy: record.attempt, recordedAt: record.endedAt ?? record.intendedAt });
  }
}

/** A value given with `continue(id, { values })` for a call before the start point with no record. */
export async function supply(state: AttemptState, call: StepCall, given: unknown): Promise<unknown> {
  const { key } = call;
  const text = await state.payloads.encode(given, `The value given for step ${JSON.stringify(key)}`, { runId: state.runId, step: key });
  let value = decodedOf(given, text);
  if (call.options.result) {
    const checked = await validate(call.options.result, value);
    if (!checked.ok) state.ending.stopWith(new ResultRejectedError(state.runId, key, checked.issues, false));
    value = checked.value;
  }
  const row = newRow(state, call, state.idempotencyKeyFor(key));
  Object.assign(row, { status: "succeeded", value: text.stored, endedAt: row.intendedAt, resolution: formatResolution({ policy: "supplied" }) });
  await writeIntent(state, row);
  state.resolved++;
  state.emit({ type: "step-resolved", runId: state.runId, step: key, policy: "supplied", found: "value given on continue" });
  return value;
}
