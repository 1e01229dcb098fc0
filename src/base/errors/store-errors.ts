/**
 * What a store reports: unreadable, too new, a failed write, read-only, its file gone, its driver
 * not loaded, closed; and StoreRefusedError (not a SteplogError: a bug in steplog) with
 * isStoreRefusal.
 */

import { SteplogError, type SteplogErrorDetails } from "./steplog-error.js";
import { q } from "./quote.js";

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

/** A driver tried for a store, and why it did not load. */
export interface DriverTried {
  readonly driver: string;
  readonly reason: string;
}

/** No driver of the store could be loaded (better-sqlite3's native module, node:sqlite, pg): the records themselves were not looked at. */
export class StoreDriverFailedError extends SteplogError {
  override name = "StoreDriverFailedError";
  /** Each driver tried, in the order tried, with why it did not load. */
  readonly tried: readonly DriverTried[];
  constructor(location: string, tried: readonly DriverTried[], fix: string, cause?: unknown) {
    super(
      "STORE_DRIVER_FAILED",
      `The ${location} could not be opened: ${tried.map((t) => `${t.driver} failed to load (${t.reason})`).join("; ")}. The store was not touched, and nothing is wrong with it. ${fix}`,
      { cause },
    );
    this.tried = tried;
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
  return (
    typeof error === "object" &&
    error !== null &&
    (error as { name?: unknown }).name === "StoreRefusedError" &&
    typeof (error as { sqlState?: unknown }).sqlState === "string"
  );
}

/** engine.prune, steplog prune or createEngine's retention on a store without pruneRuns; nothing was read or deleted. */
export class PruneUnsupportedError extends SteplogError {
  override name = "PruneUnsupportedError";
  constructor(kind: string, location: string) {
    super(
      "PRUNE_UNSUPPORTED",
      `The ${kind} store at ${location} cannot prune runs (it has no pruneRuns), so no run was read or deleted. ` +
        `Prune with steplog's SQLite, Postgres, JSONL or memory store, or implement pruneRuns (docs/stores.md, Retention).`,
    );
  }
}
