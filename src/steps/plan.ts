/**
 * What a continue does with a call as the code enters it (a step, a wait, a sleep, a child),
 * decided from the attempt's state and the call's latest record alone: a pure function, so the
 * whole rule can be read (and tested as a table) in one place. Every call comes in by the door
 * (door.ts), which asks this; step-runner.ts and waits.ts carry the decision out.
 *
 * - In a saga's replay (engine.compensate) every call is replayed from its records (saga.ts).
 * - Before the start point, a settled record (a success, or a failure the workflow handled) is
 *   handed back; a call with none takes a value given on the continue, or stops the attempt.
 * - The start point is the first call entered with no settled record, the call fromStep names,
 *   a step named in `redo`, or the step the last attempt stopped before (REDO_IRREVERSIBLE).
 *   `redo` names steps only: a wait has no effect to redo, so a wait named in it is handed back
 *   like any settled record before the start point (WAITS_IGNORE_REDO; fromStep waits again).
 * - A step launched beside the start point (before it settled and before anything ran anew) is
 *   handed back as though before it, if its record is no older than any record handed back
 *   before it was launched. Only a step opens that window; any call run anew closes it.
 * - From the start point every step runs, except: a succeeded irreversible step needs consent
 *   (`redo` runs it, `reuse` hands it back, else the attempt stops); an escalation nobody
 *   resolved stays in force; a cut-off row from another attempt is an unknown outcome, settled
 *   by the step's policy before anything else.
 * - A settled step whose record was made for another input than the call's (its digest differs)
 *   is not handed back: the attempt stops before it (STEP_INPUT_CHANGED), unless the continue
 *   names it in `reuse` (handed back) or `redo`, or the workflow's onInputChange is "redo" (then
 *   it is a start point, and an irreversible one still needs consent).
 * - From the start point a wait whose row is still open (intended, waiting) is reopened, to go
 *   on waiting or take what arrived; any other wait begins anew.
 */

import { RedoIrreversibleError, RunEscalatedError, StepInputChangedError, ValueMissingError, type SteplogError } from "../base/errors.js";
import type { Effect, StepRow } from "../store/types.js";
import { parseResolution } from "../workflow/step-resolution.js";
import type { CallKind, InputChange } from "./step-call.js";

export type { InputChange } from "./step-call.js";

export type StepDecision =
  /** Hand the record back: a success's value, or a handled failure thrown again. */
  | { kind: "hand-back" }
  /** Record the value the continue gave for it (`values`) and hand that back. */
  | { kind: "supply" }
  /** An unknown outcome (cut off in another attempt): settle it by the step's policy first. */
  | { kind: "resolve" }
  /** Call the function. */
  | { kind: "run" }
  /** End the attempt before the step, with this error. */
  | { kind: "stop"; error: SteplogError; ending: "stopped" | "escalated" }
  /** A wait's row is still open (intended, waiting): wait on it again, or take what arrived meanwhile. */
  | { kind: "reopen" }
  /** A saga's replay: hand back what the records hold, calling nothing (saga.ts, waits.ts). */
  | { kind: "replay" };

// The decisions without data, made once (one is taken on every step).
const HAND_BACK: StepDecision = Object.freeze({ kind: "hand-back" });
const SUPPLY: StepDecision = Object.freeze({ kind: "supply" });
const RESOLVE: StepDecision = Object.freeze({ kind: "resolve" });
const RUN: StepDecision = Object.freeze({ kind: "run" });
const REOPEN: StepDecision = Object.freeze({ kind: "reopen" });
const REPLAY: StepDecision = Object.freeze({ kind: "replay" });

/** The attempt's state as the decision reads it. */
export interface PlanState {
  runId: string;
  /** "compensate" while a saga replays the code. */
  mode: "run" | "compensate";
  attempt: number;
  started: boolean;
  siblingsOf: string | undefined;
  newestReused: number;
  fromStep: string | undefined;
  redo: ReadonlySet<string>;
  reuse: ReadonlySet<string>;
  carriedStart: string | undefined;
  handled: ReadonlySet<string>;
  /** Keys given a value with continue({ values }). */
  values: Record<string, unknown> | undefined;
  /** For a VALUE_MISSING stop: the recorded keys not reached yet (asked only then). */
  notReached(): string[];
}

/** The call as it is entered. */
export interface PlanStep {
  /** A step, or one of the waits (waitForEvent, sleep, a child run). */
  kind: CallKind;
  key: string;
  /** The key's latest row, if it has one. */
  record: StepRow | undefined;
  /** The step's declared effect now (the record keeps the one it was recorded with). */
  effect: Effect | undefined;
  /** Set when an agent's tool call was launched beside the start point and runs later: IN_SIBLING_WINDOW's answer then. */
  launchedBeside: number | undefined;
  /** Set when the call's input differs from its record's (both digested): what the workflow does then, and both inputs' previews. */
  inputChange?: InputChange;
}

export interface Plan {
  decision: StepDecision;
  /** `started` from now on. */
  started: boolean;
  /** The window of steps launched beside the start point: opened at it, closed by anything else run anew. */
  siblings: "open" | "close" | "keep";
}

/** A record a continue hands back rather than run: a success, or a failure the workflow handled. */
export function isSettled(record: StepRow | undefined, handled: ReadonlySet<string>): boolean {
  return record?.status === "succeeded" || (record?.status === "failed" && handled.has(record.key));
}

/**
 * WAITS_IGNORE_REDO: whether a call named in `redo` is a start point. `redo` is consent to run a
 * succeeded irreversible step again; a wait has no effect to redo, so it is not a start point by
 * being named there (as before redo existed for steps); `fromStep` names a wait to wait again.
 */
const redoStarts = (kind: CallKind): boolean => kind === "step";

export function planStep(state: PlanState, step: PlanStep): Plan {
  const { key, record, kind } = step;
  if (state.mode === "compensate") return { decision: REPLAY, started: state.started, siblings: "keep" };
  const settled = isSettled(record, state.handled);
  // A settled record made for another input is handed back only with `reuse`.
  const change = settled && kind === "step" && !state.reuse.has(key) ? step.inputChange : undefined;
  let started = state.started;
  let startsHere = false;
  let siblings: Plan["siblings"] = "keep";
  if (!started) {
    const fromStep = state.fromStep;
    started =
      fromStep !== undefined
        ? key === fromStep
        : !settled || (redoStarts(kind) && state.redo.has(key)) || key === state.carriedStart || change?.onChange === "redo";
    startsHere = started && fromStep === undefined;
  } else if (kind === "step" && (state.siblingsOf !== undefined || step.launchedBeside !== undefined)) {
    const bound = step.launchedBeside ?? state.newestReused;
    if (change?.onChange === "stop") return { decision: inputChanged(state, step, change), started, siblings };
    if (record && settled && record.attempt >= bound && !change) return { decision: HAND_BACK, started, siblings };
    // Not handed back (run, re-driven, settled by a query): what follows may depend on its new value.
    siblings = "close";
  }
  if (kind !== "step") {
    // A wait at or after the start point takes what arrives now: calls after it are not siblings.
    return { decision: started ? decideWait(record) : decideBefore(state, step, settled, undefined), started, siblings: started ? "close" : "keep" };
  }
  const decision = started ? decide(state, step) : decideBefore(state, step, settled, change);
  if (startsHere && decision.kind !== "stop") siblings = "open";
  return { decision, started, siblings };
}

/** Before the start point: hand the record back, supply a given value, or stop for one (steps and waits alike). */
function decideBefore(state: PlanState, step: PlanStep, settled: boolean, change: InputChange | undefined): StepDecision {
  const { key, record } = step;
  if (record && settled) return change ? inputChanged(state, step, change) : HAND_BACK;
  if (state.values && Object.hasOwn(state.values, key)) return SUPPLY;
  return { kind: "stop", error: new ValueMissingError(state.runId, key, state.fromStep!, state.notReached()), ending: "stopped" };
}

/** STEP_INPUT_CHANGED: the attempt stops before a step whose record was made for another input. */
function inputChanged(state: PlanState, step: PlanStep, change: InputChange): StepDecision {
  const irreversible = step.record?.status === "succeeded" && (step.record.effect === "irreversible" || step.effect === "irreversible");
  return { kind: "stop", error: new StepInputChangedError(state.runId, step.key, change.recorded, change.given, irreversible), ending: "stopped" };
}

/** A step from the start point. */
function decide(state: PlanState, step: PlanStep): StepDecision {
  const { key, record } = step;
  // A succeeded irreversible step (a charge, an email) is never run again without consent; the step fromStep names has it.
  if (record?.status === "succeeded" && (record.effect === "irreversible" || step.effect === "irreversible") && key !== state.fromStep) {
    if (state.reuse.has(key)) return HAND_BACK;
    // Before STEP_INPUT_CHANGED when both apply: this stop carries the start point to the next
    // continue (what follows the step runs again, as the start point asked); its message tells the change.
    if (!state.redo.has(key)) {
      const error = new RedoIrreversibleError(state.runId, key, record.attempt, record.endedAt, step.inputChange);
      return { kind: "stop", error, ending: "stopped" };
    }
  }
  // An escalation nobody resolved (the run was cancelled or forced meanwhile) stays in force.
  if (record?.status === "escalated") return { kind: "stop", error: new RunEscalatedError(state.runId, key), ending: "escalated" };
  if (record?.status === "intended" && record.attempt !== state.attempt) return RESOLVE;
  return RUN;
}

/** A wait from the start point: its open row reopened, else a new wait. */
function decideWait(record: StepRow | undefined): StepDecision {
  return record?.status === "intended" && parseResolution(record.resolution).wait !== undefined ? REOPEN : RUN;
}
