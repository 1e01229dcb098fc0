/**
 * continue's options checked before anything is read: fromStep, values, and the consent given
 * with redo and reuse. Apart from the claim so a bad option is refused at once, the same way
 * whether or not the run exists; the claim asks consentOf again for the consent it records.
 */

import { InvalidOptionError } from "../base/errors.js";
import { checkKnownKeys } from "../base/options.js";
import type { Consent } from "../store/types.js";
import { CONTINUE_KEYS, type ContinueOptions } from "./api.js";

/** Refuse continue's options that cannot mean anything (INVALID_OPTION), before the run is read. */
export function checkContinueOptions(id: string, options: ContinueOptions): void {
  checkKnownKeys(`continue(${JSON.stringify(id)})`, options, CONTINUE_KEYS, { runId: id });
  if (options.fromStep !== undefined && typeof options.fromStep !== "string") {
    throw new InvalidOptionError(`continue(${JSON.stringify(id)}): fromStep must be a step key or name.`, { runId: id });
  }
  if (options.values !== undefined && (typeof options.values !== "object" || options.values === null || Array.isArray(options.values))) {
    throw new InvalidOptionError(`continue(${JSON.stringify(id)}): values must be an object of step key → value.`, { runId: id });
  }
  if (options.values !== undefined && options.fromStep === undefined && Object.keys(options.values).length > 0) {
    // Without fromStep the first step with no record is the start point: it runs, and a value
    // given for it would be ignored without a word.
    throw new InvalidOptionError(
      `continue(${JSON.stringify(id)}): values are for steps before fromStep, and no fromStep was given. ` +
        `Type engine.continue(${JSON.stringify(id)}, { fromStep: "<the step to redo from>", values: { … } }); without values, a continue runs the first step with no record.`,
      { runId: id },
    );
  }
  consentOf(id, options);
}

/** continue's redo and reuse, checked: lists of step keys, none in both. Undefined when neither is given. */
export function consentOf(id: string, options: ContinueOptions): Consent | undefined {
  const q = JSON.stringify;
  const list = (name: "redo" | "reuse"): string[] => {
    const given = options[name];
    if (given === undefined) return [];
    if (!Array.isArray(given) || given.some((k) => typeof k !== "string" || k === "")) {
      throw new InvalidOptionError(`continue(${q(id)}): ${name} must be an array of step keys (or names), e.g. { ${name}: ["charge"] }.`, { runId: id });
    }
    return [...new Set(given)];
  };
  const redo = list("redo");
  const reuse = list("reuse");
  const both = redo.filter((k) => reuse.includes(k));
  if (both.length > 0) {
    throw new InvalidOptionError(
      `continue(${q(id)}): step ${q(both[0])} is in both redo and reuse; a step is either run again or handed back. Name it in one of them.`,
      { runId: id, step: both[0]! },
    );
  }
  return redo.length + reuse.length === 0 ? undefined : { redo, reuse };
}
