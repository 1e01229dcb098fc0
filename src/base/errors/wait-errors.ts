/**
 * Waits for events and approvals: a wait that timed out, an event payload its schema rejects, and
 * an event or approval sent to a run not waiting for it.
 */

import { SteplogError } from "./steplog-error.js";
import { q } from "./quote.js";

export class WaitTimedOutError extends SteplogError {
  override name = "WaitTimedOutError";
  constructor(runId: string, step: string, what: string, until: number) {
    super(
      "WAIT_TIMED_OUT",
      `Run ${q(runId)}: the wait ${q(step)} for ${what} timed out at ${new Date(until).toISOString()}. ` +
        `Catch it in the workflow to go another way (a continue then throws it again there); uncaught, a continue waits again from scratch.`,
      { runId, step },
    );
  }
}

export class EventRejectedError extends SteplogError {
  override name = "EventRejectedError";
  constructor(runId: string, step: string, event: string, issues: readonly string[]) {
    super(
      "EVENT_REJECTED",
      `Run ${q(runId)}: event ${q(event)} was consumed by wait ${q(step)} but its payload is rejected by the wait's schema (${issues.join("; ")}). ` +
        `Continue the run (it waits again), then send a payload the schema accepts — or send it first with { keep: true }.`,
      { runId, step },
    );
  }
}

export class NotWaitingError extends SteplogError {
  override name = "NotWaitingError";
  constructor(runId: string, asked: string, waitingFor: string, hint: "event" | "approval" | "budget") {
    super(
      "NOT_WAITING",
      `Run ${q(runId)} is not waiting for ${asked} (it ${waitingFor}). Nothing was recorded. ` +
        (hint === "event"
          ? `If the event may arrive before the run waits for it, send it with { keep: true } to keep it for a later wait.`
          : hint === "approval"
            ? `An approval is answered once, while the run waits for it; see engine.get(${q(runId)}).waitingFor.`
            : `A budget is raised while the run (or a child run drawing on its budget) is parked on it; see engine.get(${q(runId)}).waitingFor.`),
      { runId },
    );
  }
}

/** engine.raiseBudget with a limit at or below what the run has spent (it would park again at once). */
export class BudgetTooLowError extends SteplogError {
  override name = "BudgetTooLowError";
  constructor(runId: string, problems: string[], command: string) {
    super(
      "BUDGET_TOO_LOW",
      `Run ${q(runId)}: the new budget would not let it go on: ${problems.join("; ")}. Nothing was changed. ` +
        `Give limits above what it has spent, e.g. ${command}.`,
      { runId },
    );
  }
}

/** engine.raiseBudget on a child run that draws on another run's budget. */
export class BudgetOfParentError extends SteplogError {
  override name = "BudgetOfParentError";
  constructor(runId: string, owner: string) {
    super(
      "BUDGET_OF_PARENT",
      `Run ${q(runId)} draws on the budget of run ${q(owner)} (ctx.child(…, { budget: "parent" })), so it has none of its own to raise. Nothing was changed. ` +
        `Raise that run's: engine.raiseBudget(${q(owner)}, { usd, tokens }) or steplog budget ${owner} --usd N.`,
      { runId },
    );
  }
}

/** The child's message as the parent's quotes it: the error's `cause` carries more of it. */
const shortened = (message: string) => (message.length <= 1000 ? message : `${message.slice(0, 1000)}…`);

export class ChildFailedError extends SteplogError {
  override name = "ChildFailedError";
  /** The child run, and how it ended. */
  readonly childRunId: string;
  readonly childStatus: string;
  constructor(runId: string, step: string, child: { id: string; workflow: string; status: string; message: string | undefined }, cause?: unknown) {
    super(
      "CHILD_FAILED",
      `Run ${q(runId)}, step ${q(step)}: child run ${q(child.id)} (workflow ${q(child.workflow)}) ended ${child.status}` +
        (child.message ? `: ${shortened(child.message)}` : ".") +
        ` Catch it in the workflow to go another way; uncaught, engine.continue(${q(runId)}) redoes the step and continues the child (or continue the child alone: engine.continue(${q(child.id)})).`,
      { runId, step, cause },
    );
    this.childRunId = child.id;
    this.childStatus = child.status;
  }
}

/** engine.approve(id, step, { inputDigest }) naming another input than the one now waiting for approval. */
export class ApprovalStaleError extends SteplogError {
  override name = "ApprovalStaleError";
  constructor(runId: string, step: string, given: string, pending: string | undefined) {
    super(
      "APPROVAL_STALE",
      `Run ${q(runId)}: the approval of step ${q(step)} names the input with digest ${given}, but the input waiting for approval now ` +
        `${pending === undefined ? "is none (the step waits for approval without an input)" : `has digest ${pending}`}: it changed since it was shown. Nothing was recorded. ` +
        `Look again at what is to be approved (steplog approvals, or engine.approvals()) and approve that input's digest.`,
      { runId, step },
    );
  }
}
