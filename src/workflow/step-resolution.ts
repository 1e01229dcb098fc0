/**
 * A step row's `resolution`: how the row was settled when not by calling its function, and the
 * marks the engine keeps on it. Stored as JSON text; this module is the only place that reads or
 * writes that text, so the shapes below are all there is.
 *
 * - `policy`/`found`/`attempt`: a cut-off step settled by its policy (query, redrive,
 *   compensate, escalate), a value given on continue (`supplied`), a person's answer to an
 *   escalation (`escalate`, with `by` and `resolvedAt`), a saga's compensation (`found: "saga"`).
 * - `compensation`: the row is a compensation (its step's effect undone), not the step's result.
 * - `wait`: a wait's row, what it waits for.
 * - `thrown`: a failure thrown into the workflow's code (see steps/handled-failures.ts).
 * - `input`/`inputDigest`: what the step acts on, recorded with its intent (steps/step-input.ts).
 */

export type ResolutionPolicy = "query" | "redrive" | "compensate" | "escalate" | "supplied";

export interface WaitingFor {
  kind: "event" | "sleep" | "approval" | "child" | "turn" | "budget";
  /** The step key of the wait (or of the step that needs approval); "" for a run waiting for its turn (kind "turn": flow control, before its first step). */
  step: string;
  event?: string;
  /** The child run's id (kind "child": ctx.child, a child handle's result()), recorded before the child is started. */
  child?: string;
  /** Wall-clock ms: the timer, or the wait's timeout. */
  until?: number;
  /** Kind "budget" (the step that was about to start is `step`): what was spent, and the budget it reached. */
  spent?: { usd: number; tokens: number };
  budget?: { usd?: number; tokens?: number };
  /** Kind "budget", for a child run that draws on another run's budget: that run (raise its budget). */
  budgetRun?: string;
  /** Kind "approval" of a step given an `input`: the digest of the input to be approved (what `approve(id, step, { inputDigest })` must name). */
  inputDigest?: string;
  /** Kind "approval": the step was approved before for another input; that approval no longer holds (it is kept in the run's events). */
  stale?: StaleApproval;
}

/** An earlier approval of a step, given for another input than the one now to be approved. */
export interface StaleApproval {
  /** Who gave it, when it said so. */
  by?: string;
  /** When it was given (ISO time). */
  at: string;
  /** The digest of the input it approved; absent for an approval given before its step had an input. */
  inputDigest?: string;
}

/**
 * What a parked run's row records it waits for: a WaitingFor, and for an approval of a step given
 * an input that input as stored (sealed by the codec), and the one a stale approval approved.
 */
export interface StoredWait extends Omit<WaitingFor, "stale"> {
  input?: string;
  stale?: StaleApproval & { input?: string };
}

export interface Thrown {
  /** The attempt it was thrown in (a wait's row may have been written by an earlier one). */
  attempt: number;
  /** Steps (and waits) that attempt had entered when the error was thrown: a row at this position or later came after it. */
  entered: number;
}

export interface StepResolution {
  policy?: ResolutionPolicy;
  /** What the policy found: "done", "not done", "unknown", "saga", "done (resolved by a person)", … */
  found?: string;
  /** The attempt that settled the row. */
  attempt?: number;
  compensation?: true;
  /** Who resolved an escalation, and when (ISO time). */
  by?: string;
  resolvedAt?: string;
  wait?: WaitingFor;
  thrown?: Thrown;
  /**
   * The error of each call of the step that failed (a retried step's earlier calls, and its last
   * if it failed), by call number: each as the codec stores an error (so sealed with it), kept
   * short (name, code, message), at most MAX_CALL_ERRORS (the first, then the latest).
   */
  callErrors?: Array<{ call: number; error: string }>;
  /** The step's input (ctx.step(name, { input }, fn)), encoded as a value and sealed by the codec, when it was given one. */
  input?: string;
  /** The input's digest (keyed by the codec when there is one): what a continue compares the call's input with. */
  inputDigest?: string;
}

/** Call errors kept on one row, at most. */
export const MAX_CALL_ERRORS = 10;

/** What a parked run waits for, from its run row's `waitingFor` text; undefined for none (or text that is not an object). */
export function parseWaitingFor(text: string | null): StoredWait | undefined {
  if (text === null || text === "") return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as StoredWait) : undefined;
  } catch {
    return undefined;
  }
}

/** A stored wait as the views show it: without the stored (sealed) inputs, which engine.approvals() shows decoded. */
export function shownWaitingFor(wait: StoredWait): WaitingFor {
  const { input: _input, stale, ...shown } = wait;
  if (stale === undefined) return shown;
  const { input: _staleInput, ...staleShown } = stale;
  return { ...shown, stale: staleShown };
}

/** The resolution of a row's stored text; `{}` for none. A text that is not an object reads as none. */
export function parseResolution(text: string | null): StepResolution {
  if (text === null || text === "") return {};
  const parsed: unknown = JSON.parse(text);
  return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as StepResolution) : {};
}

/** The stored text of a resolution; null when it holds nothing. */
export function formatResolution(resolution: StepResolution): string | null {
  return Object.keys(resolution).length === 0 ? null : JSON.stringify(resolution);
}

/** `text` with `changes` laid over it. */
export function withResolution(text: string | null, changes: StepResolution): string | null {
  return formatResolution({ ...parseResolution(text), ...changes });
}

/** True when the row is a compensation (its step's effect undone), not the step's own result. */
export function isCompensation(row: { resolution: string | null }): boolean {
  return parseResolution(row.resolution).compensation === true;
}

/** The resolution as a run's view shows it: a failure's `thrown` mark is the engine's (the view says `handled`), the call errors and the input are shown decoded, so they are left out; undefined when nothing is left. */
export function shownResolution(text: string | null): Omit<StepResolution, "thrown" | "callErrors" | "input" | "inputDigest"> | undefined {
  const { thrown: _thrown, callErrors: _calls, input: _input, inputDigest: _digest, ...shown } = parseResolution(text);
  return Object.keys(shown).length > 0 ? shown : undefined;
}
