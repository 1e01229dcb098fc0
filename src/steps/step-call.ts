/**
 * One call the workflow makes (a step, a wait, a sleep, a child), as one object carried from the
 * door (door.ts: its key, position and record) through the plan (plan.ts) to its ending: for a
 * step, resolve (unknown-outcome.ts), call (step-function.ts) and record (step-outcome.ts).
 * Everything a step's path needs is on it, so no function on the path takes a list of positional
 * parameters.
 */

import type { StepFunction, StepInfo, StepOptions } from "../workflow/context.js";
import type { StepRow } from "../store/types.js";
import type { RetryPolicy } from "../workflow/retry-policy.js";
import type { StepSpan } from "./step-spans.js";

/** What kind of call the workflow made: the planner's rules differ between a step and the waits. */
export type CallKind = "step" | "event" | "sleep" | "child";

/** The idempotency key a call is made with, and what it is told of a cut-off call it re-drives. */
export interface Identity {
  idempotencyKey: string;
  previous?: StepInfo["previous"];
}

/** A call's input as the door encoded it. */
export interface GivenInput {
  /** Its plain encoding (tagged JSON, as a value is encoded). */
  plain: string;
  /** Its digest; undefined under a codec that makes none (then it is not compared). */
  digest: string | undefined;
  /** What the function gets as `info.input`. */
  value: unknown;
  /** Set when it differs from its record's input. */
  change?: InputChange;
  /** Already sealed (a recorded input a cut-off row is re-driven with): written as it is. */
  stored?: string;
}

/** A step's input that differs from the one its record was made for (step-input.ts). */
export interface InputChange {
  /** The workflow's onInputChange. */
  onChange: "stop" | "redo";
  given: string;
  recorded: string;
}

/** One call as the protocol carries it. */
export interface StepCall {
  kind: CallKind;
  name: string;
  options: StepOptions;
  fn: StepFunction<unknown>;
  /** Its step key (name, name#2, …), given at the door. */
  key: string;
  /** Where it was entered in this attempt's call order (steps and waits, reused ones included), given at the door. */
  position: number;
  /** The key's latest row when it was entered, if it had one. */
  record: StepRow | undefined;
  /** The idempotency key (and cut-off call) its function is called with, once the plan runs it. */
  identity: Identity | undefined;
  /** The row this call writes (its intent, then its outcome). */
  row: StepRow | undefined;
  /** How often and when its function is called again after a failure (a step's `retry`). */
  policy: RetryPolicy | undefined;
  /** Its OpenTelemetry span, when the attempt is traced (step-spans.ts). */
  span: StepSpan | undefined;
  /** Its `input` as the door encoded it (step-input.ts), when it was given one. */
  input: GivenInput | undefined;
}

/** The options of a step called without any (shared: never written to). */
export const NO_OPTIONS: StepOptions = Object.freeze({});

const NO_FUNCTION: StepFunction<unknown> = () => undefined;
const WAIT_OPTIONS: StepOptions = Object.freeze({ effect: "read" });

/** A call as the workflow makes it, before the door: every field set, in one order (perf: one shape for every call). */
export function newCall(kind: CallKind, name: string, options: StepOptions, fn: StepFunction<unknown>): StepCall {
  return {
    kind,
    name,
    options,
    fn,
    key: "",
    position: -1,
    record: undefined,
    identity: undefined,
    row: undefined,
    policy: undefined,
    span: undefined,
    input: undefined,
  };
}

/** A wait's call (waitForEvent, sleep, a child): a read with no function of its own. */
export function newWaitCall(kind: Exclude<CallKind, "step">, name: string): StepCall {
  return newCall(kind, name, WAIT_OPTIONS, NO_FUNCTION);
}
