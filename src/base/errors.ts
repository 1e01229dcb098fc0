/**
 * Every error a user can meet is a SteplogError with a stable `code`. Match on
 * `code` (it survives being stored and read back), not on `instanceof`.
 * Each message says what happened, to which run or step, and what to type next.
 *
 * This file is the one import path for them all; they live in errors/, by concept:
 *   steplog-error.ts  SteplogError, ERROR_CODES (in the order of docs/errors.md), isSteplogError
 *   error-info.ts     ErrorInfo and toErrorInfo, with its bounds on stacks, fields and causes
 *   rebuild-error.ts  ErrorClass and rebuildError, which throws a recorded error again
 *   run-errors.ts     a run refused as a whole: not found, exists, busy, completed, escalated, …
 *   store-errors.ts   what a store reports: unreadable, too new, write failed, read-only, …
 *   usage-errors.ts   a call made wrongly: no such step, not escalated, bad name or option, …
 *   value-errors.ts   a value that cannot be recorded or read back
 *   step-errors.ts    a step's rules: the pivot, its timeout, its query
 *   stop-errors.ts    why an attempt stopped or ended
 *   wait-errors.ts    waits for events, approvals and child runs
 *   stream-errors.ts  streams: a write after close, a store without streams
 * (errors/quote.ts is their shared message helper and is not exported.)
 */

export * from "./errors/steplog-error.js";
export * from "./errors/error-info.js";
export * from "./errors/rebuild-error.js";
export * from "./errors/run-errors.js";
export * from "./errors/store-errors.js";
export * from "./errors/usage-errors.js";
export * from "./errors/value-errors.js";
export * from "./errors/step-errors.js";
export * from "./errors/stop-errors.js";
export * from "./errors/wait-errors.js";
export * from "./errors/stream-errors.js";
