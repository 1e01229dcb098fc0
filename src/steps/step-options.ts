/** A step's options, checked as it is entered: a wrong one is an INVALID_OPTION before anything runs. */

import { InvalidOptionError } from "../base/errors.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";
import type { StepOptions } from "../workflow/context.js";
import { EFFECTS } from "../store/types.js";
import type { AttemptState } from "./state.js";
import { NO_OPTIONS, type StepCall } from "./step-call.js";

const POLICIES = ["redrive", "query", "compensate", "escalate"];

const STEP_KEYS: KnownKeys<StepOptions> = {
  result: true,
  upcast: true,
  effect: true,
  onUnknown: true,
  query: true,
  compensate: true,
  retry: true,
  timeoutMs: true,
  approval: true,
  errors: true,
  input: true,
};

export function checkOptions(state: AttemptState, call: StepCall): void {
  if (typeof call.fn !== "function") throw badOption(state, call.name, "the last argument of ctx.step must be the step's function");
  if (call.options !== NO_OPTIONS) checkGivenOptions(state, call);
}

/** perf: kept apart from checkOptions, whose every call would otherwise allocate this one's closure. */
function checkGivenOptions(state: AttemptState, call: StepCall): void {
  const { options, name } = call;
  const bad = (what: string) => badOption(state, name, what);
  checkKnownKeys(() => `Run ${JSON.stringify(state.runId)}, step ${JSON.stringify(name)}`, options, STEP_KEYS, { runId: state.runId, step: name });
  if (options.errors !== undefined && !(Array.isArray(options.errors) && options.errors.every((c) => typeof c === "function"))) {
    throw bad("errors must be an array of error classes, e.g. [CardDeclined]");
  }
  if (options.effect !== undefined && !EFFECTS.includes(options.effect)) throw bad(`effect must be one of ${EFFECTS.join(", ")}`);
  if (options.onUnknown !== undefined && !POLICIES.includes(options.onUnknown)) throw bad(`onUnknown must be one of ${POLICIES.join(", ")}`);
  if (options.onUnknown === "query" && !options.query) throw bad(`onUnknown "query" needs a query function`);
  if (options.onUnknown === "compensate" && !options.compensate) throw bad(`onUnknown "compensate" needs a compensate function`);
  if (options.timeoutMs !== undefined && !(options.timeoutMs > 0)) throw bad("timeoutMs must be a number of milliseconds > 0");
}

function badOption(state: AttemptState, name: string, what: string): InvalidOptionError {
  return new InvalidOptionError(`Run ${JSON.stringify(state.runId)}, step ${JSON.stringify(name)}: ${what}.`, { runId: state.runId, step: name });
}
