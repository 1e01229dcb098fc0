/**
 * Exit codes (documented in docs/cli.md) and the errors the command raises itself. Every
 * SteplogError maps to a code by its `code`; anything else is an internal error.
 */

import { isSteplogError } from "../base/errors.js";

export const EXIT = {
  /** Done: the command did what was asked (for run, compensate, work: the attempt completed). */
  ok: 0,
  /** The attempt ran and ended without completing: failed, stopped, timed-out, cancelled, waiting, escalated. */
  notCompleted: 1,
  /** The command line is wrong: unknown option, missing argument, a value that does not parse. */
  usage: 2,
  /** steplog refused (the SteplogError code is printed): RUN_BUSY, RUN_COMPLETED, NOT_ESCALATED, … */
  refused: 3,
  /** No such run or step (RUN_NOT_FOUND, STEP_NOT_FOUND). */
  notFound: 4,
  /** The store cannot be used: unreadable, too new, read-only, a write failed, Postgres not available. */
  store: 5,
  /** The workflow's code could not be loaded: no such file, it threw, no workflow in it, no source recorded. */
  workflow: 6,
  /** A bug in steplog: please report it with the output. */
  internal: 70,
  /** Interrupted by Ctrl-C (SIGINT) or SIGTERM. */
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the command raises itself, with its exit code and an optional code word for --json. */
export class CliError extends Error {
  override name = "CliError";
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    readonly code: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

export class UsageError extends CliError {
  override name = "UsageError";
  constructor(message: string, hint?: string) {
    super(message, EXIT.usage, "USAGE", hint);
  }
}

export class WorkflowLoadError extends CliError {
  override name = "WorkflowLoadError";
  constructor(message: string, hint?: string) {
    super(message, EXIT.workflow, "WORKFLOW_NOT_LOADED", hint);
  }
}

/** A reading command named a store file that does not exist. */
export class StoreMissingError extends CliError {
  override name = "StoreMissingError";
  constructor(message: string, hint?: string) {
    super(message, EXIT.store, "STORE_MISSING", hint);
  }
}

export class StoreUnavailableError extends CliError {
  override name = "StoreUnavailableError";
  constructor(message: string, hint?: string) {
    super(message, EXIT.store, "STORE_UNAVAILABLE", hint);
  }
}

const NOT_FOUND = new Set(["RUN_NOT_FOUND", "STEP_NOT_FOUND"]);
const STORE = new Set(["STORE_UNREADABLE", "STORE_TOO_NEW", "STORE_READ_ONLY", "STORE_WRITE_FAILED", "STORE_DRIVER_FAILED"]);
const WORKFLOW = new Set(["WORKFLOW_NOT_REGISTERED"]);
const USAGE = new Set(["INVALID_NAME", "INVALID_OPTION"]);

export function exitCodeOf(error: unknown): ExitCode {
  if (error instanceof CliError) return error.exitCode;
  if (isSteplogError(error)) {
    if (NOT_FOUND.has(error.code)) return EXIT.notFound;
    if (STORE.has(error.code)) return EXIT.store;
    if (WORKFLOW.has(error.code)) return EXIT.workflow;
    if (USAGE.has(error.code)) return EXIT.usage;
    return EXIT.refused;
  }
  return EXIT.internal;
}

/** The code word shown for an error: the SteplogError code, the CliError code, or INTERNAL. */
export function codeOf(error: unknown): string {
  if (error instanceof CliError) return error.code;
  if (isSteplogError(error)) return error.code;
  return "INTERNAL";
}
