/**
 * What a failure from the server or the driver means, for the caller: a read that failed
 * (STORE_UNREADABLE), a write this role or server may not make (STORE_READ_ONLY), a write the
 * server could not carry out (STORE_WRITE_FAILED), or a statement it refused as wrong — a bug
 * in steplog (StoreRefusedError). Every message and cause shown is the driver's with the
 * connection's credentials taken out, so no password ends up in an error or a log.
 */

import { isStoreRefusal, SteplogError, StoreReadOnlyError, StoreRefusedError, StoreUnreadableError, StoreWriteFailedError } from "../../base/errors.js";
import { CommitUnknownError, isConnectionError, isConnectionSettingsError, isDbError, redact, type TxState } from "./connection.js";

/** A COMMIT sent without a reply, in the last try or an earlier one, may have been carried out. */
export const maybeCommitted = (error: unknown, tx: TxState | undefined) =>
  error instanceof CommitUnknownError || tx?.commitSent === true || tx?.maybeCommitted === true;

/**
 * SQL states that say the statement itself is wrong (a value out of range for its column, a
 * type mismatch, a syntax error): no operator can fix them, so they are steplog's bugs. Anything
 * else (a lost connection, a full disk, a lock timeout, a dropped table) is the server's state.
 */
const REFUSALS = /^(22|21|0A|42601|42804|42883|42P08|42P18)/;

/** The strings no message may show: the connection string, its password (as written and decoded), PGPASSWORD. */
export function secretsOf(connectionString: string | undefined, password: unknown): string[] {
  const secrets: string[] = typeof password === "string" ? [password] : [];
  if (connectionString) {
    secrets.push(connectionString);
    try {
      const url = new URL(connectionString);
      if (url.password) secrets.push(url.password, decodeURIComponent(url.password));
    } catch {
      // Unparseable: the whole string is already listed.
    }
  }
  if (process.env.PGPASSWORD) secrets.push(process.env.PGPASSWORD);
  return secrets;
}

/** The store's errors, for one store (its location in every message, its secrets out of them). */
export class Failures {
  readonly #location: string;
  readonly #secrets: string[];

  constructor(location: string, secrets: string[]) {
    this.#location = location;
    this.#secrets = secrets;
  }

  #reason(error: unknown): string {
    const e = error as { message?: string; code?: string };
    const message = redact(String(e.message ?? error), this.#secrets);
    return e.code && !message.includes(e.code) ? `${e.code}: ${message}` : message;
  }

  /** A cause safe to show: the driver's message with credentials stripped, and its code. */
  #cause(error: unknown): Error {
    const safe = new Error(this.#reason(error));
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string") Object.assign(safe, { code });
    return safe;
  }

  readError(error: unknown): Error {
    if (error instanceof SteplogError) return error;
    const unreachable = isConnectionError(error);
    const reason = unreachable ? `could not reach the server: ${this.#reason(error)}` : this.#reason(error);
    return new StoreUnreadableError(this.#location, reason, this.#cause(error), unreachable || isConnectionSettingsError(error));
  }

  /**
   * A write that failed, by cause: a role or a standby that may not write (STORE_READ_ONLY); the
   * server out of resources (a full disk, too many connections) or out of reach, once the retries
   * are spent (STORE_WRITE_FAILED, with server advice, never a file's); any other refusal of a
   * statement steplog wrote is a bug in steplog (StoreRefusedError: INTERNAL, attempt not counted).
   */
  writeError(error: unknown, what: string, runId: string | undefined, command?: { maybeRecorded: boolean }): Error {
    if (error instanceof SteplogError || isStoreRefusal(error)) return error as Error;
    const code = (error as { code?: unknown }).code;
    const details = { cause: this.#cause(error), ...(runId === undefined ? {} : { runId }) };
    if (code === "42501" || code === "25006") {
      return new StoreReadOnlyError(
        this.#location,
        `${this.#reason(error)}: this role may not write here, or the server is a read-only standby`,
        runId,
        "connect as a role that may write to steplog's schema, on the primary server",
      );
    }
    if (typeof code === "string" && /^53/.test(code)) {
      return new StoreWriteFailedError(this.#location, what, details, command, "free space on the database server (or raise its limits)");
    }
    if (isDbError(error) && REFUSALS.test(String(code))) {
      return new StoreRefusedError(this.#location, what, String(code), this.#reason(error), runId);
    }
    return new StoreWriteFailedError(this.#location, what, details, command, "check that the database server is up and reachable");
  }
}
