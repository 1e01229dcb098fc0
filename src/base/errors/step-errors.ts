/**
 * A step's own rules: an irreversible step (the pivot) goes last and cannot be compensated past;
 * a step's timeout; a step's query, which failed or gave an answer steplog cannot read.
 */

import { SteplogError } from "./steplog-error.js";
import { q } from "./quote.js";

export class PivotOrderError extends SteplogError {
  override name = "PivotOrderError";
  constructor(runId: string, step: string, inFlight: readonly string[]) {
    super(
      "PIVOT_ORDER",
      `Run ${q(runId)}: irreversible step ${q(step)} refused to start while ${inFlight.map(q).join(", ")} ${inFlight.length === 1 ? "is" : "are"} still in flight. ` +
        `Await those steps first: an irreversible step is the pivot and goes last.`,
      { runId, step },
    );
  }
}

export class PastPivotError extends SteplogError {
  override name = "PastPivotError";
  constructor(runId: string, pivot: string, unknown = false) {
    super(
      "PAST_PIVOT",
      `Run ${q(runId)}: irreversible step ${q(pivot)} ${unknown ? "may have happened (its outcome is unknown)" : "has already succeeded"}, so the run cannot be compensated; it must go forward. ` +
        (unknown ? `Settle that step first (engine.resolve, or a continue), then decide. ` : ``) +
        `Type engine.continue(${q(runId)}).`,
      { runId, step: pivot },
    );
  }
}

export class StepTimedOutError extends SteplogError {
  override name = "StepTimedOutError";
  constructor(runId: string, step: string, timeoutMs: number) {
    super("STEP_TIMED_OUT", `Run ${q(runId)}: step ${q(step)} ran longer than its timeoutMs of ${timeoutMs} ms and was aborted.`, {
      runId,
      step,
    });
  }
}

/**
 * Thrown by a step's function (or an adapter) when it cannot tell whether its effect happened: a
 * connection lost after the request was sent, a timeout with no reply. Not a failure a continue
 * would simply redo: the step is left intended and the next continue settles it by its policy,
 * as after a crash inside the effect. The attempt ends with StepOutcomeUnknownError.
 */
export class OutcomeUnknown extends Error {
  override name = "OutcomeUnknown";
  constructor(message = "the step's function cannot tell whether its effect happened", options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Whether `error` is an OutcomeUnknown, by name as well (one from another copy of steplog: ESM and CommonJS side by side). */
export const isOutcomeUnknown = (error: unknown): error is OutcomeUnknown =>
  error instanceof OutcomeUnknown || (error instanceof Error && error.name === "OutcomeUnknown");

/** The attempt's error when a step's function threw OutcomeUnknown. */
export class StepOutcomeUnknownError extends SteplogError {
  override name = "StepOutcomeUnknownError";
  constructor(runId: string, step: string, effect: string, reason: OutcomeUnknown, policy: "query" | "redrive" | "compensate" | "escalate") {
    const settled = {
      query: "asking its query whether the effect happened",
      escalate: "the human queue (steplog escalations), where a person records what happened",
      compensate: "running its compensate, then calling it again with a new idempotency key",
      redrive: "calling it again with the same idempotency key",
    }[policy];
    super(
      "STEP_OUTCOME_UNKNOWN",
      `Run ${q(runId)}: step ${q(step)} (${effect}) cannot tell whether its effect happened: ${reason.message}. ` +
        `It is left intended (an unknown outcome, not a failure a continue would simply redo), and the attempt ended. ` +
        `Type engine.continue(${q(runId)}): the step is settled by ${settled}.`,
      { runId, step, cause: reason },
    );
  }
}

/** A step failed and nothing observed it (a forgotten `await`): the attempt that would have completed fails instead. */
export class UnawaitedStepFailedError extends SteplogError {
  override name = "UnawaitedStepFailedError";
  constructor(runId: string, step: string, cause: unknown, others: readonly string[] = []) {
    const reason = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    const also = others.length === 0 ? "" : ` (so did ${others.length === 1 ? "step" : "steps"} ${others.map(q).join(", ")})`;
    super(
      "UNAWAITED_STEP_FAILED",
      `Run ${q(runId)}: step ${q(step)} failed (${reason}) and nothing awaited it, caught it or passed it on${also}, so the workflow went on as if it had succeeded; ` +
        `an \`await\` is likely missing before ctx.step(${q(step.replace(/#\d+$/, ""))}, …). The attempt failed instead of completing. ` +
        `Add the await (or handle the failure with .catch), then type engine.continue(${q(runId)}): the step runs again.`,
      { runId, step, cause },
    );
  }
}

export class QueryFailedError extends SteplogError {
  override name = "QueryFailedError";
  constructor(runId: string, step: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      "QUERY_FAILED",
      `Run ${q(runId)}: the query for step ${q(step)} failed (${reason}). The effect itself was not retried and the step is still intended. ` +
        `Fix the query's service, then type engine.continue(${q(runId)}).`,
      { runId, step, cause },
    );
  }
}

export class QueryAnswerInvalidError extends SteplogError {
  override name = "QueryAnswerInvalidError";
  constructor(runId: string, step: string, found: string) {
    super(
      "QUERY_ANSWER_INVALID",
      `Run ${q(runId)}: the query for step ${q(step)} returned ${found}, not { done: true, value } or { done: false }. ` +
        `steplog will not guess from it, so the effect was not retried and the step is still intended. ` +
        `Make the query return { done: true, value: … } when the service has the effect and { done: false } when it has not (e.g. found ? { done: true, value: found } : { done: false }), then type engine.continue(${q(runId)}).`,
      { runId, step },
    );
  }
}
