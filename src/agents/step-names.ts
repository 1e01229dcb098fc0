/**
 * Step names for agent work. A tool call is the step `tool:<tool name>:<call id>`; a model turn
 * is `model`, or `model:<label>`. Repeats are numbered by steplog as usual (`model#2`).
 *
 * Step names may not hold `#` (steplog numbers repeats with it), control or bidirectional-format
 * characters, or end in a space, and are at most 200 characters. Tool names and call ids come
 * from the app and the model, so the characters that could break that rule or the `:` layout
 * (`%`, `:`, `#`, whitespace, control and bidi characters) are percent-encoded; the mapping is
 * reversible (parseToolStepName). A name that is still too long is refused with INVALID_OPTION.
 */

import { InvalidOptionError } from "../base/errors.js";
import { MAX_NAME_LENGTH } from "../workflow/names.js";

/** Name of a model-turn step: `model`, or `model:<label>`. */
export const MODEL_STEP = "model";
/** Prefix of a tool-call step's name. */
export const TOOL_STEP_PREFIX = "tool:";

// eslint-disable-next-line no-control-regex -- control characters are what it escapes
const ESCAPED = /[%:#\s\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

function encodePart(text: string): string {
  return text.replace(ESCAPED, (ch) => encodeURIComponent(ch));
}

function decodePart(text: string): string {
  return decodeURIComponent(text);
}

/**
 * The step name of one tool call: `tool:<name>:<call id>`, each part percent-encoded where it
 * must be. Throws INVALID_OPTION when the result is longer than a step name may be.
 */
export function toolStepName(toolName: string, callId: string): string {
  if (typeof toolName !== "string" || toolName === "") {
    throw new InvalidOptionError(`steplog/agents: a tool name must be a non-empty string, got ${JSON.stringify(toolName)}.`);
  }
  const name = `${TOOL_STEP_PREFIX}${encodePart(toolName)}:${encodePart(String(callId))}`;
  if (name.length > MAX_NAME_LENGTH) {
    throw new InvalidOptionError(
      `steplog/agents: the step for tool ${JSON.stringify(toolName.slice(0, 60))} call ${JSON.stringify(String(callId).slice(0, 60))} ` +
        `would be named with ${name.length} characters; step names are at most ${MAX_NAME_LENGTH}. ` +
        `Use a shorter tool name, or give the call a shorter id (docs/agents.md, "Step names").`,
    );
  }
  return name;
}

/** The tool name and call id of a step named by toolStepName, or undefined for any other step. */
export function parseToolStepName(stepName: string): { toolName: string; callId: string } | undefined {
  if (!stepName.startsWith(TOOL_STEP_PREFIX)) return undefined;
  const rest = stepName.slice(TOOL_STEP_PREFIX.length);
  const colon = rest.indexOf(":");
  if (colon === -1) return undefined;
  try {
    return { toolName: decodePart(rest.slice(0, colon)), callId: decodePart(rest.slice(colon + 1)) };
  } catch {
    return undefined;
  }
}

/** The step name of a model turn: `model`, or `model:<label>` (the label encoded like a tool name). */
export function modelStepName(label?: string): string {
  if (label === undefined || label === "") return MODEL_STEP;
  const name = `${MODEL_STEP}:${encodePart(label)}`;
  if (name.length > MAX_NAME_LENGTH) {
    throw new InvalidOptionError(
      `steplog/agents: the model-turn label ${JSON.stringify(label.slice(0, 60))} is too long for a step name (at most ${MAX_NAME_LENGTH} characters in all).`,
    );
  }
  return name;
}

/** True for a step named by modelStepName (with the given label, when one is given). */
export function isModelStepName(stepName: string, label?: string): boolean {
  if (label !== undefined) return stepName === modelStepName(label);
  return stepName === MODEL_STEP || stepName.startsWith(`${MODEL_STEP}:`);
}

/** The key steplog gives the n-th use (1-based) of a step name in one run. */
export function keyOf(stepName: string, occurrence: number): string {
  return occurrence <= 1 ? stepName : `${stepName}#${occurrence}`;
}
