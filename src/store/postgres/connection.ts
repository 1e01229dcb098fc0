/**
 * The Postgres connection: transactions on a pooled client (the pool and loading `pg` are in
 * pool.ts, telling failures apart in error-kinds.ts), and retrying on a new connection when one
 * dies (a server restart, a failover, pg_terminate_backend). Whether a retry is safe is the caller's to say: a transaction that
 * lost its connection before COMMIT was sent was rolled back by the server and can simply run
 * again; one that lost it after is "maybe committed", and only writes that can recognise their
 * own earlier commit (see batch-writer.ts) may run again.
 */

import { isConnectionError, isDbError, isTransient } from "./error-kinds.js";
import type { PgClient, PgPoolLike, PgResult } from "./pool.js";

export { isConnectionError, isConnectionSettingsError, isDbError, isTransient, redact } from "./error-kinds.js";
export { createPool, describeTarget, guardCheckouts, loadPg, type PgClient, type PgPoolLike, type PgResult, type PoolSettings } from "./pool.js";

/** Where a transaction got to, for deciding whether running it again is safe. */
export interface TxState {
  /** COMMIT was sent on this try and no reply came. */
  commitSent: boolean;
  /** An earlier try of this transaction may have committed. */
  maybeCommitted: boolean;
}

export class CommitUnknownError extends Error {
  override name = "CommitUnknownError";
  constructor(cause: unknown) {
    super(`the connection was lost while committing, so whether it was recorded is unknown (${(cause as Error).message})`, { cause });
  }
}

export class Connection {
  constructor(
    private readonly pool: PgPoolLike,
    /** How long to keep retrying on new connections before giving up. */
    private readonly retryForMs: number,
    /** The server ends a transaction idle this long (a frozen or cut-off process) and frees its locks; it follows the lease. */
    private readonly idleInTransactionMs: () => number,
  ) {}

  /**
   * Run `fn` on a pooled connection, on a new one (from the start) if the connection dies.
   * `ambiguous: "retry"` runs it again even after a COMMIT that got no reply (with
   * `state.maybeCommitted` set); "fail" throws CommitUnknownError then.
   */
  async run<T>(fn: (client: PgClient, state: TxState) => Promise<T>, ambiguous: "retry" | "fail", held?: HeldClient): Promise<T> {
    const state: TxState = { commitSent: false, maybeCommitted: false };
    // The budget runs from the first failure: time spent frozen (SIGSTOP) before it must not use it up.
    let failedAt: number | undefined;
    const mayRetry = () => Date.now() - (failedAt ??= Date.now()) < this.retryForMs;
    // A held connection goes back first when someone waits for one (a pool of one would
    // otherwise never serve them while batches keep following one another).
    if (held?.client && (this.pool.waitingCount ?? 0) > 0) this.letGo(held);
    for (let tries = 0; ; tries++) {
      let client = held?.client;
      if (client === undefined) {
        try {
          client = await this.pool.connect();
        } catch (error) {
          if (isConnectionError(error) && mayRetry()) {
            await pause(tries);
            continue;
          }
          throw error;
        }
        // pg-pool drops its error listener while a client is checked out; a connection that dies
        // then (pg_terminate_backend, idle_in_transaction_session_timeout) would crash the process.
        // The failure reaches us through the query instead.
        client.on?.("error", ignore);
      }
      state.commitSent = false;
      const release = (destroy: boolean) => {
        if (held) held.client = undefined;
        releaseClient(client, destroy);
      };
      try {
        const result = await fn(client, state);
        if (held) held.client = client;
        else release(false);
        return result;
      } catch (error) {
        if (isConnectionError(error)) {
          release(true);
          if (state.commitSent && ambiguous === "fail") throw new CommitUnknownError(error);
          state.maybeCommitted ||= state.commitSent;
          if (mayRetry()) {
            await pause(tries);
            continue;
          }
          throw state.commitSent ? new CommitUnknownError(error) : error;
        }
        const usable = await rollback(client);
        release(!usable);
        if (isTransient(error) && mayRetry()) {
          await pause(tries);
          continue;
        }
        throw error;
      }
    }
  }

  /** Give a client kept between runs back to the pool. */
  letGo(held: HeldClient): void {
    const client = held.client;
    held.client = undefined;
    if (client) releaseClient(client, false);
  }

  async begin(client: PgClient): Promise<void> {
    await client.query(this.#begin);
  }

  /**
   * Begin, and run `text` (no parameters) in the same round trip; its rows. For statements whose
   * values are quoted with `literal`.
   */
  async beginWith(client: PgClient, text: string): Promise<any[]> {
    const results = await client.query(`${this.#begin}; ${text}`);
    return (results as unknown as PgResult[]).at(-1)!.rows;
  }

  /**
   * A whole transaction in one round trip: BEGIN, `text` (statements with no parameters),
   * COMMIT. The results of `text`'s statements, in order; or undefined when the server refused a
   * statement (it was rolled back: nothing of it committed, and the rest was not run), for the
   * caller to go the usual way. A lost connection, or a failure with no answer from the server,
   * is thrown with the transaction maybe committed, as with `commit`.
   */
  async transactOnce(client: PgClient, text: string, state: TxState): Promise<PgResult[] | undefined> {
    state.commitSent = true;
    let results: PgResult[];
    try {
      results = (await client.query(`${this.#begin}; ${text}; COMMIT`)) as unknown as PgResult[];
    } catch (error) {
      // Only an answer from the server settles it. Anything else leaves it maybe committed.
      if (isConnectionError(error) || !isDbError(error)) throw error;
      state.commitSent = false;
      await this.rollback(client);
      return undefined;
    }
    state.commitSent = false;
    return results.slice(2, -1);
  }

  /**
   * One named statement on its own (autocommit: it is its own transaction, so sending it is
   * sending COMMIT). Its result; or undefined when the server refused it (nothing of it was
   * recorded), for the caller to go another way. A lost connection, or a failure with no answer
   * from the server, is thrown with the transaction maybe committed, as with `commit`.
   */
  async runAlone(client: PgClient, query: { name: string; text: string; values: unknown[] }, state: TxState): Promise<PgResult | undefined> {
    state.commitSent = true;
    let result: PgResult;
    try {
      result = await client.query(query);
    } catch (error) {
      if (isConnectionError(error) || !isDbError(error)) throw error;
      state.commitSent = false;
      return undefined;
    }
    state.commitSent = false;
    return result;
  }

  /** BEGIN, with the idle-in-transaction limit for this transaction only (SET LOCAL ends with it). */
  get #begin(): string {
    return `BEGIN; SET LOCAL idle_in_transaction_session_timeout = ${this.idleInTransactionMs()}`;
  }

  async commit(client: PgClient, state: TxState): Promise<void> {
    state.commitSent = true;
    try {
      await client.query("COMMIT");
    } catch (error) {
      // An answer, even a refusal, settles it: the server rolled the transaction back. A lost
      // connection, or any failure without the server's answer, leaves it unknown.
      if (!isConnectionError(error) && isDbError(error)) state.commitSent = false;
      throw error;
    }
    state.commitSent = false;
  }

  async rollback(client: PgClient): Promise<void> {
    await client.query("ROLLBACK");
  }
}

/**
 * A pooled client one caller keeps between consecutive runs (the write queue, while batches
 * follow one another): no checkout and release a batch. `run` keeps it after a run that
 * succeeded and gives it back after one that failed; `letGo` gives it back.
 */
export interface HeldClient {
  client?: PgClient | undefined;
}

function releaseClient(client: PgClient, destroy: boolean): void {
  client.removeListener?.("error", ignore);
  if (destroy) client.on?.("error", ignore); // a destroyed client may still report its socket's end
  client.release(destroy);
}

/** ROLLBACK whatever is open; false when the connection is no longer usable. */
async function rollback(client: PgClient): Promise<boolean> {
  try {
    await client.query("ROLLBACK");
    return true;
  } catch {
    return false;
  }
}

function ignore(): void {}

function pause(tries: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** Math.min(tries, 6))));
}

/**
 * A string as an SQL literal: an E'' string, whose backslash escapes mean the same whatever the
 * server's standard_conforming_strings says, with a quote doubled (a backslash-quote is refused
 * when backslash_quote is off), and every character past ASCII written as a \u or \U escape,
 * so the literal is ASCII and no client_encoding can read a quote or a backslash into another
 * character. (A server whose encoding is not UTF8 refuses such escapes: the write then goes the
 * usual way, with parameters.) Any text but one holding a NUL (which ends a query string in the
 * protocol; Postgres text cannot hold one either).
 */
export function literal(text: string): string {
  const escaped = text.replace(/\\/g, "\\\\").replace(/'/g, "''");
  // eslint-disable-next-line no-control-regex -- the ASCII range, to escape everything beyond it
  return `E'${/[^\x00-\x7f]/.test(escaped) ? escaped.replace(/[^\x00-\x7f]/gu, unicodeEscape) : escaped}'`;
}

function unicodeEscape(char: string): string {
  const code = char.codePointAt(0)!;
  return code > 0xffff ? `\\U${code.toString(16).padStart(8, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}
