/**
 * Refusals about a run as a whole: it is not there, already there, held by another attempt,
 * completed, escalated or dead-lettered; its args are rejected; its attempt lost its lease; its
 * workflow is not registered.
 */

import { SteplogError } from "./steplog-error.js";
import { q } from "./quote.js";

export class RunNotFoundError extends SteplogError {
  override name = "RunNotFoundError";
  constructor(runId: string, storeLocation: string) {
    super(
      "RUN_NOT_FOUND",
      `No run ${q(runId)} in ${storeLocation}. A missing record is not an empty one, so steplog will not start it over. ` +
        `Check that the app points at the same store; to run it from scratch, type engine.start(workflow, args, { id: ${q(runId)} }).`,
      { runId },
    );
  }
}

/**
 * What a start with `ifExists: "attach"` found different from the run that exists: its workflow,
 * or its args (`at`: the path of the first difference, "$" for the args themselves; the values
 * are not shown, they may be secrets the codec seals).
 */
export type RunExistsDifference =
  | { what: "workflow"; recorded: string; given: string }
  | { what: "args"; at: string }
  /** A child run's id is taken by a run that is not that parent's child. */
  | { what: "parent"; recorded: string | null; given: string };

export class RunExistsError extends SteplogError {
  override name = "RunExistsError";
  /** Set when a start with `ifExists: "attach"` was refused: what differs from the run that exists. */
  readonly differs: "workflow" | "args" | "parent" | undefined;
  constructor(runId: string, status: string, difference?: RunExistsDifference) {
    const id = q(runId);
    const only = `ifExists: "attach" hands back only a run of the same workflow started with the same args, and start never overwrites a run.`;
    super(
      "RUN_EXISTS",
      difference?.what === "workflow"
        ? `Run ${id} already exists (status ${status}) and belongs to workflow ${q(difference.recorded)}, not ${q(difference.given)}: ${only} ` +
            `To see it, type engine.get(${id}); for a run of ${q(difference.given)}, start with another id.`
        : difference?.what === "args"
          ? `Run ${id} already exists (status ${status}) with other args than this start's (they differ at ${difference.at}): ${only} ` +
            `To see its args, type (await engine.get(${id})).args; to go on with it as recorded, type engine.continue(${id}); for a run with these args, start with another id.`
          : difference?.what === "parent"
            ? `Run ${id} already exists (status ${status}) and is not a child of run ${q(difference.given)} (${difference.recorded === null ? "it has no parent" : `its parent is ${q(difference.recorded)}`}), so it cannot be that run's child. ` +
              `Give the child another id: ctx.child(name, workflow, args, { id }).`
            : `Run ${id} already exists (status ${status}); start never overwrites a run. To go on with it, type engine.continue(${id}); ` +
              `to get its result instead, start with { id: ${id}, ifExists: "attach" }; for a fresh run, start with another id.`,
      { runId },
    );
    this.differs = difference?.what;
  }
}

/**
 * engine.import refused: the store holds a run with an id of the document (or a run that has not
 * ended with its dedupe key). Nothing of the document was written.
 */
export class ImportRunExistsError extends SteplogError {
  override name = "ImportRunExistsError";
  /** The run of the document whose place is taken. */
  readonly importing: string;
  constructor(runId: string, status: string, storeLocation: string, importing: string = runId) {
    const id = q(runId);
    super(
      "IMPORT_RUN_EXISTS",
      (importing === runId
        ? `Run ${id} already exists in ${storeLocation} (status ${status}); import never overwrites a run, and nothing of the document was written. `
        : `Run ${q(importing)} of the document has a dedupe key that run ${id} (status ${status}) already holds in ${storeLocation}; nothing of the document was written. `) +
        `To look at the one there, type engine.get(${id}); to import the document anyway, import it into another store (a fresh one: steplog import FILE --db other.db), or remove that run from this one first.`,
      { runId },
    );
    this.importing = importing;
  }
}

/** Why engine.import refused a document: not a steplog run export, another version of it, a redacted one, or rows of the wrong shape. */
export type ImportInvalidReason = "format" | "version" | "redacted" | "shape";

/** engine.import refused the document itself (ImportInvalidReason); nothing was written. */
export class ImportInvalidError extends SteplogError {
  override name = "ImportInvalidError";
  readonly reason: ImportInvalidReason;
  constructor(reason: ImportInvalidReason, message: string, runId?: string) {
    const next =
      reason === "redacted"
        ? "A redacted document is for reading: export the run again without redaction (steplog export ID, with no --redact and STEPLOG_REDACT unset) to import it."
        : reason === "version"
          ? "Import it with the steplog version that exported it, or export the run again with this one."
          : "Give the file `engine.export(id)` or `steplog export ID` wrote, unchanged.";
    super("IMPORT_INVALID", `This document cannot be imported: ${message} Nothing was written. ${next}`, runId === undefined ? {} : { runId });
    this.reason = reason;
  }
}

export interface LeaseHolder {
  attempt: number;
  host: string;
  pid: number;
  expiresAt: number;
}

export class RunBusyError extends SteplogError {
  override name = "RunBusyError";
  readonly holder: LeaseHolder;
  /**
   * Set when the holder is judged by its lease alone: it counts as gone if the lease stays
   * unrenewed this many ms more (a continue waits that long and looks again).
   */
  readonly decidedInMs: number | undefined;
  /** `verdict`: why the holder counts as alive (owner.ts). */
  constructor(runId: string, holder: LeaseHolder, verdict?: { why: string; decidedInMs?: number }) {
    const why = verdict ? `: ${verdict.why}` : `; its lease runs to ${new Date(holder.expiresAt).toISOString()} by its own clock`;
    super(
      "RUN_BUSY",
      `Run ${q(runId)} is held by attempt ${holder.attempt} (host ${holder.host}, pid ${holder.pid})${why}. ` +
        `Two attempts of one run never run at once: wait for that attempt to end, or stop that process; once it is gone (or its lease has gone unrenewed for a full period) a continue takes the run over.`,
      { runId, attempt: holder.attempt },
    );
    this.holder = holder;
    this.decidedInMs = verdict?.decidedInMs;
  }
}

export class RunCompletedError extends SteplogError {
  override name = "RunCompletedError";
  constructor(runId: string, lastStep: string | undefined) {
    const hint = lastStep === undefined ? `{ fromStep: "<step>" }` : `{ fromStep: ${q(lastStep)} }`;
    super(
      "RUN_COMPLETED",
      `Run ${q(runId)} already completed; a continue would redo nothing. To redo a step and everything after it, type engine.continue(${q(runId)}, ${hint}).`,
      { runId },
    );
  }
}

export class RunEscalatedError extends SteplogError {
  override name = "RunEscalatedError";
  /** `unrecorded`: the step's function returned (its effect happened) but its value could not be recorded. */
  constructor(runId: string, step: string, unrecorded?: string) {
    super(
      "RUN_ESCALATED",
      unrecorded === undefined
        ? `Run ${q(runId)} waits for a person: step ${q(step)} was cut off inside an effect that must not be repeated blindly. ` +
            `Find out whether it happened, then type engine.resolve(${q(runId)}, ${q(step)}, { value }) if it did or engine.resolve(${q(runId)}, ${q(step)}, { redo: true }) if it did not; then continue.`
        : `Run ${q(runId)} waits for a person: step ${q(step)} returned, so its effect happened, but its value could not be recorded (${unrecorded}). ` +
            `Find what it produced, then type engine.resolve(${q(runId)}, ${q(step)}, { value }) with it (or { redo: true } to do it again); then continue.`,
      { runId, step },
    );
  }
}

export class DeadLetteredError extends SteplogError {
  override name = "DeadLetteredError";
  constructor(runId: string, attempts: number, maxAttempts: number, lastStep: string | undefined) {
    super(
      "DEAD_LETTERED",
      `Run ${q(runId)} is dead-lettered: ${attempts} attempts ended without completing (the workflow allows ${maxAttempts})` +
        (lastStep === undefined ? "" : `, the last one in step ${q(lastStep)}`) +
        `. Fix the cause, then type engine.continue(${q(runId)}, { force: true }) to give it a fresh budget.`,
      { runId },
    );
  }
}

export class ArgsRejectedError extends SteplogError {
  override name = "ArgsRejectedError";
  readonly issues: readonly string[];
  constructor(runId: string | undefined, workflow: string, issues: readonly string[], onContinue: boolean) {
    super(
      "ARGS_REJECTED",
      (runId === undefined ? `The args for workflow ${q(workflow)}` : `Run ${q(runId)}: the args`) +
        ` are rejected by the workflow's args schema: ${issues.join("; ")}. ` +
        (onContinue
          ? `The recorded args no longer fit the code, so this run cannot be continued: start a new run with args the schema accepts.`
          : `Nothing was recorded; pass args the schema accepts.`),
      runId === undefined ? {} : { runId },
    );
    this.issues = issues;
  }
}

export class LeaseLostError extends SteplogError {
  override name = "LeaseLostError";
  constructor(runId: string, attempt: number | undefined, why: string) {
    super(
      "LEASE_LOST",
      `Run ${q(runId)}: attempt ${attempt ?? "?"} lost its lease (${why}); it records nothing more and starts no step. ` +
        `Another attempt owns the run now; see it with engine.get(${q(runId)}).`,
      attempt === undefined ? { runId } : { runId, attempt },
    );
  }
}

export class WorkflowNotRegisteredError extends SteplogError {
  override name = "WorkflowNotRegisteredError";
  constructor(workflow: string, runId: string | undefined, known: readonly string[]) {
    super(
      "WORKFLOW_NOT_REGISTERED",
      (runId === undefined ? `Workflow ${q(workflow)}` : `Run ${q(runId)} belongs to workflow ${q(workflow)}, which`) +
        ` is not registered with this engine (registered: ${known.length === 0 ? "none" : known.map(q).join(", ")}). ` +
        `Pass it in createEngine({ workflows: [...] }).`,
      runId === undefined ? {} : { runId },
    );
  }
}

export class FlowLimitedError extends SteplogError {
  override name = "FlowLimitedError";
  /** Which limit: "concurrency" (attempts running with the key) or "rate" (attempts started in the period). */
  readonly limit: "concurrency" | "rate";
  readonly key: string;
  constructor(
    runId: string,
    limit: { kind: "concurrency"; key: string; running: string[]; max: number } | { kind: "rate"; key: string; started: number; max: number; periodMs: number },
  ) {
    const id = q(runId);
    const why =
      limit.kind === "concurrency"
        ? `key ${q(limit.key)} has ${limit.running.length} of ${limit.max} attempt${limit.max === 1 ? "" : "s"} running (${limit.running.map(q).slice(0, 5).join(", ")})`
        : `${limit.started} attempt${limit.started === 1 ? "" : "s"} of key ${q(limit.key)} started in the last ${limit.periodMs} ms (at most ${limit.max})`;
    super(
      "FLOW_LIMITED",
      `Run ${id} waits for its turn: ${why}. Nothing was started or counted. A worker (engine.work(), steplog work) takes it when its turn comes; or continue it then: engine.continue(${id}).`,
      { runId },
    );
    this.limit = limit.kind;
    this.key = limit.key;
  }
}
