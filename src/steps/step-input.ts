/**
 * A step's input (ctx.step(name, { input }, fn)): what it acts on, encoded like a value at the
 * door, digested (keyed by the codec when there is one), compared with its record's digest for
 * the planner, and recorded with the intent (sealed by the codec). A step without one never
 * comes here.
 */

import { encodeValue } from "../payloads/values.js";
import { parseResolution, withResolution } from "../workflow/step-resolution.js";
import type { AttemptState } from "./state.js";
import type { GivenInput, InputChange, StepCall } from "./step-call.js";
import type { StepRow } from "../store/types.js";
import { StepInputChangedError } from "../base/errors.js";
import type { Resolved } from "./unknown-outcome.js";

const PREVIEW_CHARS = 200;

/** What an error calls the input; built only when there is an error (perf: not a string a step). */
const inputName = (details: { step?: string }) => `The input of step ${JSON.stringify(details.step)}`;

function preview(plain: string): string {
  return plain.length > PREVIEW_CHARS ? `${plain.slice(0, PREVIEW_CHARS)}…` : plain;
}

/**
 * Encode the call's input (VALUE_TOO_LARGE / VALUE_NOT_SERIALIZABLE naming it the input) and
 * digest it; what changed from its record's input, if the record has one that differs.
 */
export function takeInput(state: AttemptState, call: StepCall): InputChange | undefined {
  const details = { runId: state.runId, step: call.key };
  const plain = encodeValue(call.options.input, inputName, { maxBytes: state.payloads.maxBytes }, details);
  const record = call.record === undefined || call.record.resolution === null ? undefined : parseResolution(call.record.resolution);
  const digest = state.payloads.digest(plain, record?.inputDigest);
  const given: GivenInput = { plain, digest, value: call.options.input };
  call.input = given;
  if (record?.inputDigest === undefined || digest === undefined || digest === record.inputDigest) return undefined;
  given.change = { onChange: state.workflow.onInputChange, given: preview(plain), recorded: recordedPreview(state, record.input) };
  return given.change;
}

/** The recorded input's preview, opened by the codec when it can do so at once. */
function recordedPreview(state: AttemptState, stored: string | undefined): string {
  if (stored === undefined) return "(none)";
  try {
    const value = state.payloads.decode(stored);
    if (value instanceof Promise) {
      value.catch(() => undefined);
      return "(sealed)";
    }
    return preview(encodeValue(value, "input", { maxBytes: Number.MAX_SAFE_INTEGER }));
  } catch {
    return "(unreadable)";
  }
}

/**
 * Record the call's input on its new row (sealed by the codec): written with the intent. A
 * promise only when the codec seals asynchronously (perf: no await a step otherwise).
 */
export function recordInput(state: AttemptState, call: StepCall): Promise<void> | undefined {
  const { plain, stored } = call.input!;
  const sealed = stored ?? state.payloads.seal(plain);
  if (typeof sealed !== "string") return sealed.then((input) => setInput(call, input));
  setInput(call, sealed);
  return undefined;
}

function setInput(call: StepCall, input: string): void {
  const { digest, change } = call.input!;
  const row = call.row!;
  if (row.resolution === null) {
    // perf: the JSON written directly (a digest is [a-z0-9:-] only), not an object stringified.
    row.resolution = digest === undefined ? `{"input":${JSON.stringify(input)}}` : `{"input":${JSON.stringify(input)},"inputDigest":"${digest}"}`;
  } else {
    row.resolution = withResolution(row.resolution, digest === undefined ? { input } : { input, inputDigest: digest });
  }
  // Run again for another input than its record's: a key of its own (from the input's digest), so a
  // service that deduplicates on the key does not hand back the effect made for the old input.
  if (change !== undefined && digest !== undefined) {
    const idempotencyKey = `${row.idempotencyKey}:input-${digest.slice(-12)}`;
    row.idempotencyKey = idempotencyKey;
    call.identity = { ...call.identity!, idempotencyKey };
  }
}

/**
 * The input a cut-off row was recorded with, as the call's input while its policy settles it (a
 * query is asked, a re-drive is called, with the recorded input, never the call's new one);
 * undefined when the row recorded none.
 */
export async function recordedAsGiven(state: AttemptState, record: StepRow): Promise<GivenInput | undefined> {
  const { input: stored, inputDigest } = parseResolution(record.resolution);
  if (stored === undefined) return undefined;
  const value = await state.payloads.decode(stored);
  return { plain: "", digest: inputDigest, value, stored };
}

/**
 * A cut-off row whose input differs from the call's, settled by its policy for its recorded
 * input: a re-drive it owes is made with that input. Then, as for a settled record with another
 * input: the attempt stops (STEP_INPUT_CHANGED), or with onInputChange "redo" the step runs
 * again with the new input under a key of its own (an irreversible one only with `redo`).
 */
export async function afterChangedResolution(
  state: AttemptState,
  call: StepCall,
  resolved: Resolved,
  given: GivenInput,
  start: (state: AttemptState, call: StepCall) => Promise<unknown>,
): Promise<unknown> {
  const { key } = call;
  if (resolved.kind === "run") {
    call.identity = resolved.identity;
    await start(state, call);
  }
  const change = given.change!;
  const irreversible = call.options.effect === "irreversible" || call.record!.effect === "irreversible";
  if (change.onChange === "stop" || (irreversible && !state.order.redo.has(key))) {
    const error = new StepInputChangedError(state.runId, key, change.recorded, change.given, irreversible);
    state.ending.endWith("stopped", error);
    throw error;
  }
  call.input = given;
  // recordInput gives it a key of its own, from the new input's digest.
  call.identity = { idempotencyKey: state.idempotencyKeyFor(key) };
  return await start(state, call);
}
