/**
 * A step found `intended` with no outcome: the process died inside the effect and nobody
 * knows whether it happened. It is answered by the step's declared policy, never by a guess:
 *
 *   query      ask the service by idempotency key: done → record its value; not done → re-drive
 *   redrive    call the function again with the same idempotency key (and `previous`)
 *   compensate run the compensation (it must tolerate "never happened"), then re-drive with a new key
 *   escalate   record the step escalated and end the attempt; a person resolves it
 */

import type { QueryInfo, UnknownOutcomePolicy } from "../workflow/context.js";
import { QueryAnswerInvalidError, QueryFailedError, ResultRejectedError, RunEscalatedError, toErrorInfo } from "../base/errors.js";
import { validate } from "../workflow/value-schemas.js";
import type { Effect, StepRow } from "../store/types.js";
import { decodedOf } from "../payloads/payloads.js";
import { newRow, writeIntent, writeOutcome } from "./step-log.js";
import type { AttemptState } from "./state.js";
import type { Identity, StepCall } from "./step-call.js";
import { formatResolution, isCompensation, parseResolution, type StepResolution } from "../workflow/step-resolution.js";

/** How an unknown outcome came out: found done (its value recorded), or the step is to be called with this identity. */
export type Resolved = { kind: "found"; value: unknown } | { kind: "run"; identity: Identity };

export function defaultPolicy(effect: Effect, hasQuery: boolean, hasCompensate: boolean): UnknownOutcomePolicy {
  switch (effect) {
    case "read":
    case "idempotent":
      return "redrive";
    case "compensatable":
      return hasQuery ? "query" : hasCompensate ? "compensate" : "escalate";
    case "irreversible":
      return hasQuery ? "query" : "escalate";
  }
}

/** How a cut-off row was settled by its policy (the row's StepResolution). */
type Resolution = StepResolution & { policy: UnknownOutcomePolicy; found: string; attempt: number };

/**
 * Settle a cut-off row by the step's policy: what the caller does next is in the answer (an
 * escalation, a failing query or an invalid answer end the attempt and throw). The caller keeps
 * the step in flight for the whole of it.
 */
export async function resolveUnknownOutcome(state: AttemptState, call: StepCall): Promise<Resolved> {
  const { options, key } = call;
  const record = call.record!;
  const effect = options.effect ?? "idempotent";
  const policy = options.onUnknown ?? defaultPolicy(effect, options.query !== undefined, options.compensate !== undefined);
  const previous = previousOf(record);
  const wasCompensating = isCompensation(record);

  // A crash inside a compensation: run the compensation again (it tolerates repeats), then re-drive.
  if (wasCompensating || policy === "compensate") return compensateThenRedrive(state, call, wasCompensating);

  if (policy === "query") {
    let answer;
    try {
      state.hooks?.onCall?.(key, "query");
      const info: QueryInfo = { idempotencyKey: record.idempotencyKey, runId: state.runId, step: key };
      // The recorded input (resolveThenRun set it): the query asks about the call that was cut off.
      if (call.input !== undefined) info.input = call.input.value;
      answer = await options.query!(info);
    } catch (error) {
      const failed = new QueryFailedError(state.runId, key, error);
      state.ending.endWith("failed", failed);
      throw failed;
    }
    // Anything but the two answers is refused: taking it for "not done" would re-drive an effect that may have happened.
    const invalid = invalidAnswer(answer);
    if (invalid !== undefined) {
      const refused = new QueryAnswerInvalidError(state.runId, key, invalid);
      state.ending.endWith("failed", refused);
      throw refused;
    }
    if (answer.done) return { kind: "found", value: await recordFound(state, call, answer.value) };
    await settle(state, record, {
      status: "failed",
      resolution: { policy, found: "not done", attempt: state.number },
      message: `Attempt ${record.attempt} was cut off inside its effect; its query found no effect, so it is re-driven.`,
    });
    return { kind: "run", identity: { idempotencyKey: record.idempotencyKey, previous } };
  }

  if (policy === "escalate") {
    const unrecorded = await unrecordedReason(state, record);
    const what =
      unrecorded === undefined
        ? `Attempt ${record.attempt} was cut off inside its effect; waits for a person.`
        : `In attempt ${record.attempt} the step returned, but its value could not be recorded (${unrecorded}); it waits for a person.`;
    await settle(state, record, { status: "escalated", resolution: { policy, found: "unknown", attempt: state.number }, message: what });
    const escalated = new RunEscalatedError(state.runId, key, unrecorded);
    state.ending.endWith("escalated", escalated);
    throw escalated;
  }

  await settle(state, record, {
    status: "failed",
    resolution: { policy: "redrive", found: "unknown", attempt: state.number },
    message: `Attempt ${record.attempt} was cut off inside its effect; re-driven.`,
  });
  state.emit({ type: "step-resolved", runId: state.runId, step: key, policy: "redrive", found: "unknown" });
  return { kind: "run", identity: { idempotencyKey: record.idempotencyKey, previous } };
}

/**
 * Why the row is intended when its function returned: its attempt ended with an
 * EffectUnrecordedError naming it (the value could not be recorded). Undefined for a cut-off.
 */
async function unrecordedReason(state: AttemptState, record: StepRow): Promise<string | undefined> {
  const ended = state.stored.attempts.find((a) => a.number === record.attempt)?.error;
  if (!ended) return undefined;
  try {
    const info = await state.payloads.decodeError(ended);
    return info.step === record.key && info.name === "EffectUnrecordedError" ? (info.code ?? "unrecorded") : undefined;
  } catch {
    return undefined;
  }
}

/** Why a query's answer is neither `{ done: true, value }` nor `{ done: false }` (a description of it), or undefined when it is one. */
export function invalidAnswer(answer: unknown): string | undefined {
  if (typeof answer === "object" && answer !== null && Object.getPrototypeOf(answer) === Object.prototype) {
    const keys = Object.keys(answer);
    const done = (answer as { done?: unknown }).done;
    if (done === false && keys.length === 1) return undefined;
    if (done === true && keys.length === 2 && keys.includes("value")) return undefined;
  }
  return describeAnswer(answer);
}

function describeAnswer(answer: unknown): string {
  if (answer === undefined) return "undefined";
  if (typeof answer === "function") return "a function";
  if (typeof answer === "object" && answer !== null) {
    const proto = Object.getPrototypeOf(answer);
    if (proto !== Object.prototype && proto !== null && !Array.isArray(answer)) return `an instance of ${proto?.constructor?.name || "an unknown class"}`;
  }
  let text: string;
  try {
    text = JSON.stringify(answer) ?? String(answer);
  } catch {
    text = String(answer);
  }
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * A step whose cut-off execution was settled for a re-drive that never got its own intent (the
 * attempt ended in between: a crash, a cancel): the re-drive is still owed `previous`. After
 * `redrive`, or a query that found nothing, the latest row is the settled cut-off, and the key
 * stays; after `compensate`, it is the compensation, and the key is the next one. Undefined for
 * any other row.
 */
export function owedRedrive(state: AttemptState, call: StepCall): Identity | undefined {
  const { key, record } = call;
  if (record?.resolution == null) return undefined;
  const resolution = parseResolution(record.resolution);
  if (
    record.status === "failed" &&
    ((resolution.policy === "redrive" && resolution.found === "unknown") || (resolution.policy === "query" && resolution.found === "not done"))
  ) {
    return { idempotencyKey: record.idempotencyKey, previous: previousOf(record) };
  }
  if (record.status === "compensated" && resolution.compensation === true && resolution.found === "unknown") {
    const cutOff = state.stored.steps.filter((row) => row.key === key && !isCompensation(row)).at(-1);
    if (cutOff) return { idempotencyKey: state.idempotencyKeyFor(key), previous: previousOf(cutOff) };
  }
  return undefined;
}

/** What a re-drive's function is told of the call that was cut off. */
function previousOf(cutOff: StepRow): NonNullable<Identity["previous"]> {
  return { attempt: cutOff.attempt, intendedAt: new Date(cutOff.intendedAt).toISOString(), idempotencyKey: cutOff.idempotencyKey };
}

/** The query said the effect happened: its value becomes the step's outcome; the function is not called. */
async function recordFound(state: AttemptState, call: StepCall, found: unknown): Promise<unknown> {
  const { key } = call;
  const record = call.record!;
  const text = await state.payloads.encode(found, `The value the query found for step ${JSON.stringify(key)}`, {
    runId: state.runId,
    step: key,
  });
  let value = decodedOf(found, text);
  if (call.options.result) {
    const checked = await validate(call.options.result, value);
    if (!checked.ok) {
      const rejected = new ResultRejectedError(state.runId, key, checked.issues, false);
      state.ending.endWith("failed", rejected);
      throw rejected;
    }
    value = checked.value;
  }
  const resolution: Resolution = { policy: "query", found: "done", attempt: state.number };
  const row: StepRow = { ...record, status: "succeeded", value: text.stored, endedAt: state.clock.now(), resolution: withInputOf(record, resolution) };
  await writeOutcome(state, row);
  state.resolved++;
  state.emit({ type: "step-resolved", runId: state.runId, step: key, policy: "query", found: "done" });
  return value;
}

/** Record how a cut-off row was settled; `message` is the whole sentence its error reads (shown by `steplog show`). */
async function settle(state: AttemptState, record: StepRow, how: { status: "failed" | "escalated"; resolution: Resolution; message: string }): Promise<void> {
  const { status, resolution, message } = how;
  const error = { name: "OutcomeUnknown", message, code: undefined, step: record.key };
  const row: StepRow = {
    ...record,
    status,
    error: await state.payloads.encodeError(toErrorInfo(Object.assign(new Error(error.message), { name: error.name }), record.key)),
    endedAt: state.clock.now(),
    resolution: withInputOf(record, resolution),
  };
  await writeOutcome(state, row);
}

/** A settled cut-off row's resolution, keeping the input it was recorded with. */
function withInputOf(record: StepRow, resolution: Resolution): string | null {
  const { input, inputDigest } = parseResolution(record.resolution);
  if (input === undefined) return formatResolution(resolution);
  return formatResolution(inputDigest === undefined ? { ...resolution, input } : { ...resolution, input, inputDigest });
}

async function compensateThenRedrive(state: AttemptState, call: StepCall, retrying: boolean): Promise<Resolved> {
  const { key } = call;
  const record = call.record!;
  const clock = state.clock;
  // The compensation is a step record of its own, intended before it runs, so a crash inside it is seen.
  let compensation: StepRow;
  if (retrying) {
    compensation = record;
    await state.confirmLease();
  } else {
    compensation = newRow(state, call, record.idempotencyKey);
    compensation.resolution = formatResolution({ policy: "compensate", found: "unknown", attempt: state.number, compensation: true } satisfies Resolution);
    await writeIntent(state, compensation);
  }
  // Ended while the compensation's intent was written (a cancel, a deadline): do not start it.
  const ended = state.writes.endIfFailed();
  if (ended) throw ended.error;
  state.hooks?.onCall?.(key, "compensate");
  await call.options.compensate!(undefined, { idempotencyKey: record.idempotencyKey, runId: state.runId, step: key });
  const done: StepRow = { ...compensation, status: "compensated", endedAt: clock.now(), calls: compensation.calls + 1 };
  await writeOutcome(state, done);
  // The cut-off execution itself is settled as failed: what it did was undone.
  const original = retrying ? state.stored.steps.filter((row) => row.key === key && row.status === "intended" && !isCompensation(row)).at(-1) : record;
  if (original) {
    const settled: StepRow = {
      ...original,
      status: "failed",
      error: await state.payloads.encodeError({
        name: "OutcomeUnknown",
        message: `Attempt ${original.attempt} was cut off inside its effect; compensated.`,
        step: key,
      }),
      endedAt: clock.now(),
      resolution: formatResolution({ policy: "compensate", found: "unknown", attempt: state.number } satisfies Resolution),
    };
    await writeOutcome(state, settled);
  }
  state.addCompensation(key);
  // The key's current row is the compensation (the cut-off row, settled above, lies under it).
  state.order.keepLatest(done);
  state.emit({ type: "step-resolved", runId: state.runId, step: key, policy: "compensate", found: "unknown" });
  return { kind: "run", identity: { idempotencyKey: state.idempotencyKeyFor(key), previous: previousOf(record) } };
}
