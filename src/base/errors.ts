/**
 * Every error a user can meet is a SteplogError with a stable `code`. Match on
 * `code` (it survives being stored and read back), not on `instanceof`.
 * Each message says what happened, to which run or step, and what to type next.
 */

export const ERROR_CODES = [
  "RUN_NOT_FOUND",
  "RUN_EXISTS",
  "RUN_BUSY",
  "RUN_COMPLETED",
  "RUN_ESCALATED",
  "DEAD_LETTERED",
  "ARGS_REJECTED",
  "STORE_UNREADABLE",
  "STORE_TOO_NEW",
  "STORE_WRITE_FAILED",
  "STORE_READ_ONLY",
  "STORE_FILE_GONE",
  "STORE_DRIVER_FAILED",
  "STORE_CLOSED",
  "LEASE_LOST",
  "WORKFLOW_NOT_REGISTERED",
  "STEP_NOT_FOUND",
  "NOT_ESCALATED",
  "VALUE_NOT_SERIALIZABLE",
  "VALUE_TOO_LARGE",
  "PIVOT_ORDER",
  "PAST_PIVOT",
  "INVALID_NAME",
  "INVALID_OPTION",
  "REDO_IRREVERSIBLE",
  "ORDER_CHANGED",
  "STEP_TIMED_OUT",
  "RUN_TIMED_OUT",
  "RUN_CANCELLED",
  "STOPPED",
  "VERSION_CHANGED",
  "RESULT_REJECTED",
  "FROM_STEP_NOT_REACHED",
  "VALUE_MISSING",
  "ATTEMPT_ENDED",
  "ENGINE_CLOSED",
  "QUERY_FAILED",
  "QUERY_ANSWER_INVALID",
  "WAIT_TIMED_OUT",
  "EVENT_REJECTED",
  "NOT_WAITING",
  "CODEC_KEY_MISSING",
  "MODEL_TURN_FAILED",
  "TOOL_CALL_PENDING",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** The plain shape every stored or handed-back error has. */
export interface ErrorInfo {
  name: string;
  message: string;
  code?: string;
  step?: string;
  /** The error's class when its name says otherwise (`class CardDeclined extends Error` is named "Error"). */
  className?: string;
  /** Where a user's error was thrown (bounded; steplog's own errors leave it out). */
  stack?: string;
  /** The error's own enumerable fields that are plain data (`status`, `declineCode`, …), within a size bound. */
  fields?: Record<string, unknown>;
  /** What caused it (error.cause), kept a few levels deep. */
  cause?: ErrorInfo;
}

export interface SteplogErrorDetails {
  runId?: string;
  step?: string;
  attempt?: number;
  cause?: unknown;
}

export class SteplogError extends Error {
  override name = "SteplogError";
  readonly code: ErrorCode;
  readonly runId: string | undefined;
  readonly step: string | undefined;
  readonly attempt: number | undefined;

  constructor(code: ErrorCode, message: string, details: SteplogErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.runId = details.runId;
    this.step = details.step;
    this.attempt = details.attempt;
  }
}

/** True when `error` carries a steplog code (optionally a given one), whichever copy of the class made it. */
export function isSteplogError(error: unknown, code?: ErrorCode): error is SteplogError {
  if (typeof error !== "object" || error === null) return false;
  const found = (error as { code?: unknown }).code;
  if (typeof found !== "string" || !(ERROR_CODES as readonly string[]).includes(found)) return false;
  return code === undefined || found === code;
}

const q = (s: string) => JSON.stringify(s);

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

export class RunExistsError extends SteplogError {
  override name = "RunExistsError";
  constructor(runId: string, status: string) {
    super(
      "RUN_EXISTS",
      `Run ${q(runId)} already exists (status ${status}); start never overwrites a run. To go on with it, type engine.continue(${q(runId)}); for a fresh run, start with another id.`,
      { runId },
    );
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

export class StoreUnreadableError extends SteplogError {
  override name = "StoreUnreadableError";
  /** `unreachable`: a server that could not be reached, not a store that is broken. `advice`: what to do, when it is not to find the right file. */
  constructor(location: string, reason: string, cause?: unknown, unreachable = false, advice?: string) {
    super(
      "STORE_UNREADABLE",
      unreachable
        ? `The ${location} could not be read (${reason}). Nothing was written. Check that the server is up and the connection settings are right, then try again.`
        : `The ${location} is not readable (${reason}). It was left untouched. ` +
            (advice ?? `Point the engine at the right file, or restore it from a backup; steplog never overwrites it.`),
      { cause },
    );
  }
}

export class StoreFileGoneError extends SteplogError {
  override name = "StoreFileGoneError";
  constructor(location: string, what: "deleted" | "replaced by another file", runId?: string) {
    super(
      "STORE_FILE_GONE",
      `The ${location} was ${what} while this process had it open${runId === undefined ? "" : ` (at run ${q(runId)})`}: ` +
        `what was recorded since went to the old file${what === "deleted" ? ", which went with it" : ""}, and nothing more is recorded through this store object. ` +
        `Stop every process that had it open before putting a file at that path (a backup, say): SQLite's -wal and -shm files beside it belong to the old one. Then start again.`,
      runId === undefined ? {} : { runId },
    );
  }
}

/** The store's driver (better-sqlite3's native module, say) could not be loaded: the records themselves were not looked at. */
export class StoreDriverFailedError extends SteplogError {
  override name = "StoreDriverFailedError";
  constructor(location: string, driver: string, reason: string, fix: string, cause?: unknown) {
    super(
      "STORE_DRIVER_FAILED",
      `The ${location} could not be opened: ${driver} failed to load (${reason}). The store was not touched, and nothing is wrong with it. ${fix}`,
      { cause },
    );
  }
}

export class StoreClosedError extends SteplogError {
  override name = "StoreClosedError";
  constructor(location: string, call: string) {
    super("STORE_CLOSED", `The ${location} was closed, so ${call} cannot use it; open a new store object (or a new engine with one) to go on.`);
  }
}

export class StoreTooNewError extends SteplogError {
  override name = "StoreTooNewError";
  constructor(location: string, found: number, supported: number) {
    super(
      "STORE_TOO_NEW",
      `The ${location} has schema version ${found}, written by a newer steplog; this one reads up to ${supported}. Upgrade steplog; the store was left untouched.`,
    );
  }
}

export class StoreWriteFailedError extends SteplogError {
  override name = "StoreWriteFailedError";
  /**
   * `command`: the write was not an attempt's (a new run, the store's schema, a run update by
   * send, approve, cancel, resolve or recover), so a continue is not the way on; `maybeRecorded`
   * when it may have committed all the same (a COMMIT got no reply, or a journal line began to
   * be written).
   */
  /** `fix`: what to mend before trying again (default: free space or fix the store — a file's advice). */
  constructor(location: string, what: string, details: SteplogErrorDetails, command?: { maybeRecorded: boolean }, fix = "free space or fix the store") {
    const reason = details.cause instanceof Error ? details.cause.message : String(details.cause);
    const id = q(details.runId ?? "<id>");
    const Fix = fix.charAt(0).toUpperCase() + fix.slice(1);
    const next =
      command === undefined
        ? `The attempt stopped there; a step whose outcome was not recorded is resolved by its policy on the next continue. ` +
          `${Fix}, then type engine.continue(${id}).`
        : command.maybeRecorded
          ? `It may have been recorded all the same: look with engine.get(${id}) before doing it again.`
          : `Nothing was changed: ${fix}, then do it again.`;
    super("STORE_WRITE_FAILED", `Could not record ${what}${details.runId === undefined ? "" : ` of run ${id}`} in ${location}: ${reason}. ${next}`, details);
  }
}

export class StoreReadOnlyError extends SteplogError {
  override name = "StoreReadOnlyError";
  /** `fix`: what makes it writable (default: a file's advice). */
  constructor(location: string, why: string, runId?: string, fix = "make the file and its folder writable by this user (and open it without readonly: true)") {
    super(
      "STORE_READ_ONLY",
      `The ${location} is read-only (${why}), so nothing can be recorded and no step was run. To start or continue runs, ${fix}.`,
      runId === undefined ? {} : { runId },
    );
  }
}

/**
 * The database server refused a statement steplog wrote (an SQL state that no operator can fix:
 * a value out of range, a broken statement): a bug in steplog, not a fault of the store. Not a
 * SteplogError on purpose: the steplog command reports it as INTERNAL, asking for a bug report.
 * An attempt that ends by it is not counted toward maxAttempts.
 */
export class StoreRefusedError extends Error {
  override name = "StoreRefusedError";
  constructor(
    location: string,
    what: string,
    readonly sqlState: string,
    reason: string,
    runId: string | undefined,
  ) {
    super(
      `steplog internal error: the ${location} refused ${what}${runId === undefined ? "" : ` of run ${q(runId)}`} (SQL state ${sqlState}: ${reason}). ` +
        `This is a bug in steplog, not a fault of the server: please report it with this message. Nothing of that write was recorded, and the attempt is not counted; a continue tries again.`,
    );
  }
}

/** True for an error that a store refusing steplog's own statement raised (see StoreRefusedError). */
export function isStoreRefusal(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { name?: unknown }).name === "StoreRefusedError" && typeof (error as { sqlState?: unknown }).sqlState === "string";
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

export class StepNotFoundError extends SteplogError {
  override name = "StepNotFoundError";
  constructor(runId: string, step: string, recorded: readonly string[], what: string) {
    super(
      "STEP_NOT_FOUND",
      `Run ${q(runId)} has no recorded step ${q(step)} (${what}). Recorded steps: ${recorded.length === 0 ? "none" : recorded.map(q).join(", ")}. ` +
        `Name one of those (a key such as "fetch#2", or a name for its first occurrence).`,
      { runId, step },
    );
  }
}

export class NotEscalatedError extends SteplogError {
  override name = "NotEscalatedError";
  constructor(runId: string, step: string, status: string) {
    super(
      "NOT_ESCALATED",
      `Run ${q(runId)}: step ${q(step)} is ${status}, not escalated, so there is nothing to resolve. See engine.escalations() for what waits for a person.`,
      { runId, step },
    );
  }
}

export class ValueNotSerializableError extends SteplogError {
  override name = "ValueNotSerializableError";
  readonly path: string;
  constructor(what: string, path: string, found: string, details: SteplogErrorDetails = {}) {
    super(
      "VALUE_NOT_SERIALIZABLE",
      `${what} cannot be recorded faithfully: ${path} is ${found}. ` +
        `Return plain data (objects, arrays, strings, numbers, booleans, null, undefined, Date, BigInt, Map, Set), e.g. convert it with a plain object first.`,
      details,
    );
    this.path = path;
  }
}

export class ValueTooLargeError extends SteplogError {
  override name = "ValueTooLargeError";
  constructor(what: string, bytes: number, limit: number, details: SteplogErrorDetails = {}) {
    super(
      "VALUE_TOO_LARGE",
      `${what} is ${bytes} bytes encoded, over the limit of ${limit}. Store large data elsewhere and return a reference, or raise maxValueBytes in createEngine.`,
      details,
    );
  }
}

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

export class InvalidNameError extends SteplogError {
  override name = "InvalidNameError";
  constructor(kind: string, value: string, rule: string) {
    const shown = value.length > 60 ? `${JSON.stringify(value.slice(0, 60))}… (${value.length} characters)` : JSON.stringify(value);
    super("INVALID_NAME", `Invalid ${kind} ${shown}: ${rule}.`);
  }
}

export class InvalidOptionError extends SteplogError {
  override name = "InvalidOptionError";
  constructor(message: string, details: SteplogErrorDetails = {}) {
    super("INVALID_OPTION", message, details);
  }
}

/** A continue reached a succeeded irreversible step after its start point and was given no consent to run it again. */
export class RedoIrreversibleError extends SteplogError {
  override name = "RedoIrreversibleError";
  constructor(runId: string, step: string, recordedBy: number, ranAt: number | null) {
    const when = ranAt === null ? `in attempt ${recordedBy}` : `in attempt ${recordedBy}, at ${new Date(ranAt).toISOString()}`;
    super(
      "REDO_IRREVERSIBLE",
      `Run ${q(runId)} stopped before step ${q(step)}: it is irreversible and already succeeded (${when}), and this continue's start point comes before it, so it would run again. ` +
        `steplog never repeats an irreversible effect without being told to. To run it again, type engine.continue(${q(runId)}, { redo: [${q(step)}] }); ` +
        `to keep its record and go on after it, engine.continue(${q(runId)}, { reuse: [${q(step)}] }).`,
      { runId, step },
    );
  }
}

/**
 * A compensatable or irreversible step's function returned (its effect happened) but its value
 * cannot be recorded: not serialisable, too large, or rejected by its result schema. Carries the
 * code of that reason. The step is left intended: the next continue settles it by its policy.
 */
export class EffectUnrecordedError extends SteplogError {
  override name = "EffectUnrecordedError";
  /** `policy`: how the next continue settles the step (its onUnknown, or its effect's default). */
  constructor(runId: string, step: string, effect: string, reason: unknown, policy: "query" | "redrive" | "compensate" | "escalate") {
    const settled = {
      query: "asking its query whether the effect happened",
      escalate: "the human queue (steplog escalations), where a person records what it produced",
      compensate: "running its compensate, then calling it again with a new idempotency key",
      redrive: "calling it again with the same idempotency key (its onUnknown is \"redrive\")",
    }[policy];
    // A codec that failed to seal the value: it could not be written, whatever the value.
    const code: ErrorCode = reason instanceof SteplogError ? reason.code : "STORE_WRITE_FAILED";
    const why = reason instanceof Error ? reason.message : String(reason);
    super(
      code,
      `${reason instanceof SteplogError ? why : `Could not record the value of step ${q(step)} of run ${q(runId)}: ${why}.`} Step ${q(step)} is ${effect} and its function returned, so its effect has already happened: ` +
        `it is recorded as an unknown outcome (intended, not failed), never as a failure a continue would simply redo. ` +
        `Fix what it returns, then type engine.continue(${q(runId)}): the step is settled by ${settled}.`,
      { runId, step, cause: reason },
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

export class StepTimedOutError extends SteplogError {
  override name = "StepTimedOutError";
  constructor(runId: string, step: string, timeoutMs: number) {
    super("STEP_TIMED_OUT", `Run ${q(runId)}: step ${q(step)} ran longer than its timeoutMs of ${timeoutMs} ms and was aborted.`, {
      runId,
      step,
    });
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

export class EngineClosedError extends SteplogError {
  override name = "EngineClosedError";
  constructor() {
    super("ENGINE_CLOSED", `This engine was closed; create a new one with createEngine(...) to go on.`);
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

/** The plain, storable form of any thrown value. */
export function toErrorInfo(error: unknown, step?: string): ErrorInfo {
  return infoOf(error, step, 0, { stackChars: ERROR_LIMITS.stackChars, fieldsChars: ERROR_LIMITS.fieldsChars });
}

/** How far a cause chain is kept, and how much stack and own fields the whole chain keeps. */
const ERROR_LIMITS = { causeDepth: 4, stackChars: 4000, fieldsChars: 8000 } as const;

/** What is left of the chain's budget for stacks and fields. */
interface Budget {
  stackChars: number;
  fieldsChars: number;
}

/** Keys an error keeps in its own slots of ErrorInfo, never among its fields. */
const OWN_SLOTS = new Set(["name", "message", "stack", "cause", "code", "step"]);
/** A SteplogError's context fields are in its message already. */
const STEPLOG_CONTEXT = new Set(["runId", "attempt"]);

function infoOf(error: unknown, step: string | undefined, depth: number, budget: Budget): ErrorInfo {
  if (!(error instanceof Error)) {
    const info: ErrorInfo = { name: "Error", message: typeof error === "string" ? error : safeString(error) };
    if (step !== undefined) info.step = step;
    return info;
  }
  const info: ErrorInfo = { name: error.name, message: error.message };
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") info.code = code;
  const ownStep = (error as { step?: unknown }).step;
  if (typeof ownStep === "string") info.step = ownStep;
  else if (step !== undefined) info.step = step;
  const className = error.constructor?.name;
  if (typeof className === "string" && className !== "" && className !== error.name) info.className = className;
  const ours = error instanceof SteplogError;
  // steplog's own stacks and causes say nothing its message does not; a user's error keeps where it came from.
  if (!ours && typeof error.stack === "string" && budget.stackChars > 0) {
    info.stack = bounded(error.stack, budget.stackChars);
    budget.stackChars -= Math.min(error.stack.length, budget.stackChars);
  }
  const fields = plainFields(error, ours, budget);
  if (fields) info.fields = fields;
  // A steplog error's message already says what caused it (and its record must stay small: it may be written to a full disk).
  if (!ours && "cause" in error && error.cause !== undefined && depth < ERROR_LIMITS.causeDepth) info.cause = infoOf(error.cause, undefined, depth + 1, budget);
  return info;
}

/** An error's own enumerable fields that are plain JSON data, within a size bound; the rest are left out. */
function plainFields(error: Error, ours: boolean, budget: Budget): Record<string, unknown> | undefined {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(error)) {
    if (OWN_SLOTS.has(key) || (ours && STEPLOG_CONTEXT.has(key))) continue;
    const text = plainJson((error as unknown as Record<string, unknown>)[key]);
    if (text === undefined || text.length > budget.fieldsChars) continue;
    budget.fieldsChars -= text.length;
    out ??= {};
    out[key] = JSON.parse(text);
  }
  return out;
}

/** The JSON text of a value that JSON carries exactly (no functions, instances, cycles, undefined, NaN); else undefined. */
function plainJson(value: unknown, depth = 0): string | undefined {
  const ok = (v: unknown, d: number): boolean => {
    if (v === null || typeof v === "string" || typeof v === "boolean") return true;
    if (typeof v === "number") return Number.isFinite(v);
    if (typeof v !== "object" || d > 16) return false;
    if (Array.isArray(v)) return v.every((item) => ok(item, d + 1));
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return false;
    return Object.values(v as Record<string, unknown>).every((item) => ok(item, d + 1));
  };
  return ok(value, depth) ? JSON.stringify(value) : undefined;
}

function bounded(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Classes a step declares (`errors: [CardDeclined]`) so a replayed error is rebuilt as one of them. */
export type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * The error an ErrorInfo describes, rebuilt to be thrown again: the same name, message, code,
 * fields, stack and cause chain. With the class it was made from among `classes` (matched by
 * class name), it is an instance of that class (its constructor is not called); else an Error.
 */
export function rebuildError(info: ErrorInfo, classes: readonly ErrorClass[] = [], context: { runId?: string } = {}): Error {
  const wanted = info.className ?? info.name;
  // steplog's own classes are always known (a caught STEP_TIMED_OUT comes back a StepTimedOutError).
  const Class = classes.find((c) => c.name === wanted) ?? (info.code !== undefined ? OWN_CLASSES().find((c) => c.name === wanted) : undefined);
  const error: Error = Class ? (Object.create(Class.prototype) as Error) : new Error(info.message);
  const define = (key: string, value: unknown, enumerable: boolean) =>
    Object.defineProperty(error, key, { value, enumerable, writable: true, configurable: true });
  if (error instanceof SteplogError) {
    // What its constructor would have set: its context fields are not among the recorded ones.
    define("runId", context.runId, true);
    define("step", info.step, true);
    define("attempt", undefined, true);
  }
  define("message", info.message, false);
  if (error.name !== info.name) define("name", info.name, false);
  define("stack", info.stack ?? `${info.name}: ${info.message}`, false);
  for (const [key, value] of Object.entries(info.fields ?? {})) define(key, value, true);
  if (info.code !== undefined) define("code", info.code, true);
  if (info.cause !== undefined) define("cause", rebuildError(info.cause, classes, context), false);
  return error;
}

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
  constructor(runId: string, asked: string, waitingFor: string, hint: "event" | "approval") {
    super(
      "NOT_WAITING",
      `Run ${q(runId)} is not waiting for ${asked} (it ${waitingFor}). Nothing was recorded. ` +
        (hint === "event"
          ? `If the event may arrive before the run waits for it, send it with { keep: true } to keep it for a later wait.`
          : `An approval is answered once, while the run waits for it; see engine.get(${q(runId)}).waitingFor.`),
      { runId },
    );
  }
}

export class CodecKeyMissingError extends SteplogError {
  override name = "CodecKeyMissingError";
  readonly keyId: string;
  constructor(keyId: string, known: readonly string[], details: { runId?: string; step?: string } = {}) {
    const where = details.runId === undefined ? "A stored payload" : `Run ${q(details.runId)}: ${details.step === undefined ? "a stored payload" : `the record of step ${q(details.step)}`}`;
    super(
      "CODEC_KEY_MISSING",
      `${where} was sealed with key ${q(keyId)}, which this engine's encryptedCodec does not have (it has ${known.length === 0 ? "none" : known.map(q).join(", ")}). ` +
        `Nothing was read or overwritten. Add that key to encryptedCodec({ keys }) (for the steplog command, to STEPLOG_KEYS); keep old keys after a rotation, and try again.`,
      details,
    );
    this.keyId = keyId;
  }
}

/** steplog's own error classes, by which a recorded error of theirs is rebuilt (a function: they are defined above). */
const OWN_CLASSES = (): readonly ErrorClass[] => [RunNotFoundError, RunExistsError, RunBusyError, RunCompletedError, RunEscalatedError, DeadLetteredError, ArgsRejectedError, StoreUnreadableError, StoreFileGoneError, StoreTooNewError, StoreWriteFailedError, StoreReadOnlyError, LeaseLostError, WorkflowNotRegisteredError, StepNotFoundError, NotEscalatedError, ValueNotSerializableError, ValueTooLargeError, PivotOrderError, PastPivotError, InvalidNameError, InvalidOptionError, RedoIrreversibleError, EffectUnrecordedError, OrderChangedError, StepTimedOutError, RunTimedOutError, RunCancelledError, StoppedError, VersionChangedError, ResultRejectedError, FromStepNotReachedError, ValueMissingError, AttemptEndedError, EngineClosedError, QueryFailedError, QueryAnswerInvalidError, WaitTimedOutError, EventRejectedError, NotWaitingError, CodecKeyMissingError];
