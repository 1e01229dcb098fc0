/**
 * Why an attempt stopped or ended: a record that no longer fits the code (its order, version,
 * result schema, fromStep or a missing value), an irreversible step it would run again, a deadline,
 * a cancel, a stop; and AttemptEndedError, for ctx used after the attempt ended.
 */

import { SteplogError } from "./steplog-error.js";
import { q } from "./quote.js";

/** A continue reached a succeeded irreversible step after its start point and was given no consent to run it again. */
export class RedoIrreversibleError extends SteplogError {
  override name = "RedoIrreversibleError";
  /** `input`: set when the record was also made for another input (STEP_INPUT_CHANGED's finding, told here: reuse then hands back an effect made for the old one). */
  constructor(runId: string, step: string, recordedBy: number, ranAt: number | null, input?: { recorded: string; given: string }) {
    const when = ranAt === null ? `in attempt ${recordedBy}` : `in attempt ${recordedBy}, at ${new Date(ranAt).toISOString()}`;
    const changed = input
      ? `Its record was also made for another input than the code gives it now (recorded: ${input.recorded}; now: ${input.given}), so reuse hands back what was done for the recorded input. `
      : "";
    super(
      "REDO_IRREVERSIBLE",
      `Run ${q(runId)} stopped before step ${q(step)}: it is irreversible and already succeeded (${when}), and this continue's start point comes before it, so it would run again. ` +
        changed +
        `steplog never repeats an irreversible effect without being told to. To run it again${input ? " with the new input" : ""}, type engine.continue(${q(runId)}, { redo: [${q(step)}] }); ` +
        `to keep its record and go on after it, engine.continue(${q(runId)}, { reuse: [${q(step)}] }).`,
      { runId, step },
    );
  }
}

/** A continue reached a settled step whose recorded input differs from the input the code gives it now. */
export class StepInputChangedError extends SteplogError {
  override name = "StepInputChangedError";
  /** `irreversible`: the step's recorded effect is irreversible (a redo does it again: the message says so). */
  constructor(runId: string, step: string, recorded: string, given: string, irreversible = false) {
    super(
      "STEP_INPUT_CHANGED",
      `Run ${q(runId)} stopped before step ${q(step)}: its record was made for another input than the code gives it now ` +
        `(recorded: ${recorded}; now: ${given}), so handing it back would answer for something else (a list reordered or changed between attempts?). ` +
        (irreversible ? "It is irreversible and its effect happened: a redo does it again, for the new input. " : "") +
        `To run it with the new input, type engine.continue(${q(runId)}, { redo: [${q(step)}] }) (steplog run --continue --id ${runId} --redo ${step}); ` +
        `to keep its record and go on after it, engine.continue(${q(runId)}, { reuse: [${q(step)}] }) (--reuse ${step}).`,
      { runId, step },
    );
  }
}

/** A continue handed records back in another order than they were recorded in, and the workflow asked to stop on it. */
export class OrderChangedError extends SteplogError {
  override name = "OrderChangedError";
  constructor(runId: string, step: string, after: string, redoFrom: string) {
    super(
      "ORDER_CHANGED",
      `Run ${q(runId)} stopped at step ${q(step)}: its record was made before that of ${q(after)}, which this attempt reached first, so the code now enters its steps in another order ` +
        `(a list that was reordered between attempts?). Records are matched by key, so a record may belong to another item. ` +
        `Name such steps after their item (ctx.step(\`${step.replace(/#\d+$/, "")}:\${item.id}\`, …)); to redo them, type engine.continue(${q(runId)}, { fromStep: ${q(redoFrom)} }).`,
      { runId, step },
    );
  }
}

export class RunTimedOutError extends SteplogError {
  override name = "RunTimedOutError";
  constructor(runId: string, deadline: number, step: string | undefined) {
    super(
      "RUN_TIMED_OUT",
      `Run ${q(runId)} passed its deadline (${new Date(deadline).toISOString()})` +
        (step === undefined ? "" : ` in step ${q(step)}`) +
        `. Type engine.continue(${q(runId)}) to go on (with no deadline unless you give timeoutMs again).`,
      step === undefined ? { runId } : { runId, step },
    );
  }
}

export class RunCancelledError extends SteplogError {
  override name = "RunCancelledError";
  constructor(runId: string, step: string | undefined, reason: string) {
    super(
      "RUN_CANCELLED",
      `Run ${q(runId)} was cancelled (${reason})` + (step === undefined ? "" : ` in step ${q(step)}`) + `. Type engine.continue(${q(runId)}) to go on.`,
      step === undefined ? { runId } : { runId, step },
    );
  }
}

export class StoppedError extends SteplogError {
  override name = "StoppedError";
  readonly reason: string;
  constructor(runId: string, step: string | undefined, reason: string, next: string) {
    super("STOPPED", `Run ${q(runId)} stopped` + (step === undefined ? "" : ` at step ${q(step)}`) + `: ${reason}. ${next}`, {
      runId,
      ...(step === undefined ? {} : { step }),
    });
    this.reason = reason;
  }
}

/** The attempt stopped at a reused step because the code's version moved a major (0.x: minor) away from the record. */
export class VersionChangedError extends SteplogError {
  override name = "VersionChangedError";
  constructor(runId: string, step: string, recorded: string, current: string) {
    super(
      "VERSION_CHANGED",
      `Run ${q(runId)} stopped at step ${q(step)}: it was recorded by version ${recorded} of the workflow and the code is ${current}, a breaking change. ` +
        `To redo it and everything after it, type engine.continue(${q(runId)}, { fromStep: ${q(step)} }); or give the step an upcast.`,
      { runId, step },
    );
  }
}

export class ResultRejectedError extends SteplogError {
  override name = "ResultRejectedError";
  constructor(runId: string, step: string, issues: readonly string[], recorded: boolean, kind: "step" | "wait" = "step") {
    super(
      "RESULT_REJECTED",
      recorded
        ? `Run ${q(runId)} stopped at ${kind} ${q(step)}: its recorded value no longer fits the ${kind === "wait" ? "wait's schema" : "step's result schema"} (${issues.join("; ")}). ` +
            `To redo it and everything after it, type engine.continue(${q(runId)}, { fromStep: ${q(step)} })` +
            (kind === "step" ? `; or give the step an upcast.` : `.`)
        : `Run ${q(runId)}: step ${q(step)} returned a value its result schema rejects (${issues.join("; ")}).`,
      { runId, step },
    );
  }
}

export class FromStepNotReachedError extends SteplogError {
  override name = "FromStepNotReachedError";
  constructor(runId: string, fromStep: string, notReached: readonly string[]) {
    super(
      "FROM_STEP_NOT_REACHED",
      `Run ${q(runId)} stopped: fromStep ${q(fromStep)} was never reached by the code as it is now. ` +
        `Recorded steps this attempt never reached: ${notReached.length === 0 ? "none" : notReached.map(q).join(", ")}. ` +
        `A renamed step has no record; type engine.continue(${q(runId)}) to go on from the first step with no record, or give fromStep a step the code still enters.`,
      { runId, step: fromStep },
    );
  }
}

export class ValueMissingError extends SteplogError {
  override name = "ValueMissingError";
  constructor(runId: string, step: string, fromStep: string, notReached: readonly string[]) {
    super(
      "VALUE_MISSING",
      `Run ${q(runId)} stopped at step ${q(step)}: it is entered before fromStep ${q(fromStep)} is, and has no succeeded record to reuse (a new or renamed step?). ` +
        `Recorded steps this attempt has not reached: ${notReached.length === 0 ? "none" : notReached.map(q).join(", ")}. ` +
        `To run it (and everything after it), type engine.continue(${q(runId)}): a continue without fromStep starts at the first step with no record. ` +
        `To skip running it, give its value: engine.continue(${q(runId)}, { fromStep: ${q(fromStep)}, values: { ${q(step)}: … } }).`,
      { runId, step },
    );
  }
}

/** Thrown by ctx members once the attempt has ended (deadline, abort, lost lease): the workflow must not go on. */
export class AttemptEndedError extends SteplogError {
  override name = "AttemptEndedError";
  constructor(runId: string, attempt: number, why: string) {
    super("ATTEMPT_ENDED", `Run ${q(runId)}: attempt ${attempt} has already ended (${why}); no further step starts in it.`, {
      runId,
      attempt,
    });
  }
}
