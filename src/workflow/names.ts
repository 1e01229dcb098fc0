/**
 * What a name may be. Run ids, workflow names, step names and event names are stored and
 * shown exactly as given; the few things refused are those that make a terminal or a log
 * lie about what it shows (control and bidirectional-format characters) or that collide
 * with steplog's own notation (`#` in a step name; it numbers repeats; `steplog:` at the start
 * of an event name, its own events).
 */

import { InvalidNameError } from "../base/errors.js";

export const MAX_NAME_LENGTH = 200;

// C0 and C1 controls, DEL, and the Unicode bidi formatting characters.
// eslint-disable-next-line no-control-regex -- names may not hold control characters
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

export const NAME_RULE = `1 to ${MAX_NAME_LENGTH} characters of well-formed Unicode, no control or bidirectional-format characters, no leading or trailing spaces`;

export function checkName(kind: "run id" | "workflow name" | "step name" | "event name" | "event key" | "dedupe key" | "stream name", value: unknown): string {
  if (typeof value !== "string") throw new InvalidNameError(kind, String(value), `it must be a string of ${NAME_RULE}`);
  const rule = kind === "step name" ? `${NAME_RULE}, and no "#" (steplog numbers repeats as name#2)` : NAME_RULE;
  // A lone surrogate cannot be stored as UTF-8 and read back the same, so it is refused too.
  if (value.length === 0 || value.length > MAX_NAME_LENGTH || FORBIDDEN.test(value) || value.trim() !== value || !value.isWellFormed()) {
    throw new InvalidNameError(kind, value, `use ${rule}`);
  }
  if (kind === "step name" && value.includes("#")) throw new InvalidNameError(kind, value, `use ${rule}`);
  // steplog records approvals as events named steplog:approval:<step>; a sent one would approve.
  if (kind === "event name" && value.startsWith(RESERVED_EVENT_PREFIX)) {
    throw new InvalidNameError(kind, value, `names starting with "${RESERVED_EVENT_PREFIX}" are steplog's own (an approval is given with engine.approve)`);
  }
  return value;
}

export const RESERVED_EVENT_PREFIX = "steplog:";
