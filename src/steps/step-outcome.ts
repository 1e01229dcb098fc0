/**
 * Recording what a step's function returned: its value encoded (and checked against `result`),
 * the row settled succeeded, its outcome written (group-committed for a read or idempotent step,
 * durable before ctx.step returns for any other effect), and the value handed back. A value that
 * cannot be recorded fails the step, or leaves an effectful step's outcome unknown.
 */

import { EffectUnrecordedError, ResultRejectedError, toErrorInfo, type SteplogErrorDetails } from "../base/errors.js";
import { fault, faultArmed } from "../base/faults.js";
import { validate } from "../workflow/value-schemas.js";
import { decodedOf, type Encoded } from "../payloads/payloads.js";
import type { StepRow } from "../store/types.js";
import { defaultPolicy } from "./unknown-outcome.js";
import { settle, thrownNow, writeOutcome, writeOutcomeLater } from "./step-log.js";
import { markFailedStep, type AttemptState } from "./state.js";
import type { EndReason } from "./attempt-ending.js";
import type { StepCall } from "./step-call.js";

/**
 * The function returned `value`: its effect happened and its value is known, so it is recorded
 * even if the attempt ended meanwhile (a deadline, a cancel, another step's stop or escalation):
 * throwing it away would make a continue do the effect again. Only a lost lease forbids it.
 * Returns what the step hands back: at once on the common path (a read or idempotent step, no
 * `result` schema, a codec that answers at once), else a promise of it.
 */
export function recordValue(state: AttemptState, call: StepCall, value: unknown): unknown {
  const ended = state.writes.endIfFailed();
  if (ended?.ending === "lease-lost") throw ended.error;
  let encoded: Encoded | Promise<Encoded>;
  try {
    encoded = state.payloads.encode(value, stepValueName, { runId: state.runId, step: call.key });
  } catch (error) {
    return rejectWithValueFailure(state, call, error);
  }
  if ("then" in encoded || call.options.result || outcomeWaits(call)) return recordValueAwaited(state, call, { value, encoded, ended });
  // The step hands back what a continue would: the value decoded from its record (a plain
  // value's copy, made as it was encoded; a long model answer is not copied again).
  const decoded = decodedOf(value, encoded);
  const row = call.row!;
  succeeded(state, row, encoded.stored);
  writeOutcomeLater(state, row);
  return recorded(state, call, decoded, ended);
}

/**
 * Group commit: a read or idempotent step's outcome may commit with the next write (a crash
 * before it re-drives the step with the same key); any other effect's outcome is durable before
 * ctx.step returns (and so is one a crash test is to be killed after).
 */
function outcomeWaits(call: StepCall): boolean {
  const effect = call.row!.effect;
  return !(effect === "read" || effect === "idempotent") || faultArmed("after-outcome", call.key);
}

/** A value on its way to its record: what the function returned, as encoded, and how the attempt stood then. */
interface Returned {
  value: unknown;
  encoded: Encoded | Promise<Encoded>;
  ended: EndReason | undefined;
}

/** recordValue's paths that wait: a codec's seal, a `result` schema, or an outcome durable before ctx.step returns. */
async function recordValueAwaited(state: AttemptState, call: StepCall, returned: Returned): Promise<unknown> {
  const { encoded } = returned;
  const row = call.row!;
  let text: Encoded;
  let decoded: unknown;
  try {
    text = "then" in encoded ? await encoded : encoded;
    decoded = decodedOf(returned.value, text);
    if (call.options.result) {
      const checked = await validate(call.options.result, decoded);
      if (!checked.ok) throw new ResultRejectedError(state.runId, call.key, checked.issues, false);
      decoded = checked.value;
    }
  } catch (error) {
    throw await valueFailure(state, call, error);
  }
  succeeded(state, row, text.stored);
  if (outcomeWaits(call)) await writeOutcome(state, row);
  else writeOutcomeLater(state, row);
  return recorded(state, call, decoded, returned.ended);
}

function succeeded(state: AttemptState, row: StepRow, stored: string): void {
  row.status = "succeeded";
  row.value = stored;
  row.endedAt = state.clock.now();
}

/** The outcome is written (or queued for the next commit): counted, told, and handed back, unless the attempt ended meanwhile. */
function recorded(state: AttemptState, call: StepCall, decoded: unknown, ended: EndReason | undefined): unknown {
  const { key, row } = call;
  fault("after-outcome", key);
  state.ran++;
  // No key is entered twice in one attempt, so nothing reads this row again. perf: kept until the
  // run ends, every step's row would be a long-lived object the GC promotes and marks.
  state.order.dropLatest(key);
  if (state.listening) state.emit({ type: "step-succeeded", runId: state.runId, step: key, durationMs: row!.endedAt! - row!.intendedAt });
  // Recorded; but the attempt is over, so the workflow's code does not go on past this step.
  if (ended && ended.ending !== "waiting") throw ended.error;
  return decoded;
}

/** valueFailure's error, once what it means is recorded, as a rejection. */
async function rejectWithValueFailure(state: AttemptState, call: StepCall, error: unknown): Promise<never> {
  throw await valueFailure(state, call, error);
}

/**
 * The function returned but its value cannot be recorded (it does not encode, or `result`
 * rejects it): what the step throws, once what that means is recorded.
 */
async function valueFailure(state: AttemptState, call: StepCall, error: unknown): Promise<unknown> {
  const { key, options } = call;
  const row = call.row!;
  const effect = row.effect;
  if (effect === "compensatable" || effect === "irreversible") {
    // The effect happened and its value is lost: a failure would be redone, a second charge.
    // Left intended, it is an unknown outcome the next continue settles by the step's policy.
    const policy = options.onUnknown ?? defaultPolicy(effect, options.query !== undefined, options.compensate !== undefined);
    const unrecorded = new EffectUnrecordedError(state.runId, key, effect, error, policy);
    state.ending.endWith("failed", unrecorded);
    return markFailedStep(unrecorded, key);
  }
  await settle(state, row, { status: "failed", error: toErrorInfo(error, key), thrown: thrownNow(state) });
  return markFailedStep(error, key);
}

/** A step's value, named for an error message from the error's details (perf: no closure a step). */
const stepValueName = (details: SteplogErrorDetails): string => `The value of step ${JSON.stringify(details.step)} in run ${JSON.stringify(details.runId)}`;
