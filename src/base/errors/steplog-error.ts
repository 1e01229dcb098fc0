/**
 * The base of every error a user can meet: SteplogError, with a stable `code` from ERROR_CODES.
 * Match on `code` (it survives being stored and read back), not on `instanceof`; isSteplogError
 * does that. The order of ERROR_CODES is the order of docs/errors.md.
 */

export const ERROR_CODES = [
  "RUN_NOT_FOUND",
  "RUN_EXISTS",
  "IMPORT_RUN_EXISTS",
  "IMPORT_INVALID",
  "RUN_BUSY",
  "FLOW_LIMITED",
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
  "PRUNE_UNSUPPORTED",
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
  "STEP_INPUT_CHANGED",
  "STEP_TIMED_OUT",
  "STEP_OUTCOME_UNKNOWN",
  "UNAWAITED_STEP_FAILED",
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
  "APPROVAL_STALE",
  "BUDGET_TOO_LOW",
  "BUDGET_OF_PARENT",
  "CHILD_FAILED",
  "CODEC_KEY_MISSING",
  "MODEL_TURN_FAILED",
  "TOOL_CALL_PENDING",
  "CLAUDE_SESSION_FAILED",
  "STREAM_CLOSED",
  "STREAMS_UNSUPPORTED",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

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
