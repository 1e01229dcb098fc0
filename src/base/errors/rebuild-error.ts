/**
 * rebuildError: the error an ErrorInfo describes, made again to be thrown (a replayed failure),
 * as one of the classes a step declares or as one of steplog's own.
 */

import type { ErrorInfo } from "./error-info.js";
import { SteplogError } from "./steplog-error.js";
import {
  ArgsRejectedError,
  DeadLetteredError,
  LeaseLostError,
  RunBusyError,
  FlowLimitedError,
  RunCompletedError,
  RunEscalatedError,
  RunExistsError,
  RunNotFoundError,
  WorkflowNotRegisteredError,
} from "./run-errors.js";
import { StoreFileGoneError, StoreReadOnlyError, StoreTooNewError, StoreUnreadableError, StoreWriteFailedError } from "./store-errors.js";
import { EngineClosedError, InvalidNameError, InvalidOptionError, NotEscalatedError, StepNotFoundError } from "./usage-errors.js";
import { CodecKeyMissingError, EffectUnrecordedError, ValueNotSerializableError, ValueTooLargeError } from "./value-errors.js";
import { PastPivotError, PivotOrderError, QueryAnswerInvalidError, QueryFailedError, StepTimedOutError } from "./step-errors.js";
import {
  AttemptEndedError,
  FromStepNotReachedError,
  OrderChangedError,
  RedoIrreversibleError,
  ResultRejectedError,
  RunCancelledError,
  RunTimedOutError,
  StoppedError,
  ValueMissingError,
  VersionChangedError,
} from "./stop-errors.js";
import { ChildFailedError, EventRejectedError, NotWaitingError, WaitTimedOutError } from "./wait-errors.js";

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
  // A CHILD_FAILED's cause is the child's error: a steplog error of the child's run, not this one's.
  const childRunId = info.code === "CHILD_FAILED" ? info.fields?.childRunId : undefined;
  if (info.cause !== undefined) define("cause", rebuildError(info.cause, classes, typeof childRunId === "string" ? { runId: childRunId } : context), false);
  return error;
}

/** steplog's own error classes, by which a recorded error of theirs is rebuilt. */
const OWN_CLASSES = (): readonly ErrorClass[] => [
  RunNotFoundError,
  RunExistsError,
  RunBusyError,
  FlowLimitedError,
  RunCompletedError,
  RunEscalatedError,
  DeadLetteredError,
  ArgsRejectedError,
  StoreUnreadableError,
  StoreFileGoneError,
  StoreTooNewError,
  StoreWriteFailedError,
  StoreReadOnlyError,
  LeaseLostError,
  WorkflowNotRegisteredError,
  StepNotFoundError,
  NotEscalatedError,
  ValueNotSerializableError,
  ValueTooLargeError,
  PivotOrderError,
  PastPivotError,
  InvalidNameError,
  InvalidOptionError,
  RedoIrreversibleError,
  EffectUnrecordedError,
  OrderChangedError,
  StepTimedOutError,
  RunTimedOutError,
  RunCancelledError,
  StoppedError,
  VersionChangedError,
  ResultRejectedError,
  FromStepNotReachedError,
  ValueMissingError,
  AttemptEndedError,
  EngineClosedError,
  QueryFailedError,
  QueryAnswerInvalidError,
  WaitTimedOutError,
  EventRejectedError,
  NotWaitingError,
  ChildFailedError,
  CodecKeyMissingError,
];
