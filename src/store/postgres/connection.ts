/**
 * The Postgres connection: loading `pg` lazily (steplog works without it installed), the pool,
 * transactions, and retrying on a new connection when one dies (a server restart, a failover,
 * pg_terminate_backend). Whether a retry is safe is the caller's to say: a transaction that
 * lost its connection before COMMIT was sent was rolled back by the server and can simply run
 * again; one that lost it after is "maybe committed", and only writes that can recognise their
 * own earlier commit (see write-queue.ts) may run again.
 */

import { SteplogError, StoreDriverFailedError } from "../../base/errors.js";

export interface PgResult {
  rows: any[];
  rowCount: number | null;
}

/** The part of a pg PoolClient the store uses. */
export interface PgClient {
  query(text: string, values?: unknown[]): Promise<PgResult>;
  /** A named statement: parsed and planned once per connection. */
  query(config: { name: string; text: string; values: unknown[] }): Promise<PgResult>;
  release(destroy?: Error | boolean): void;
  on?(event: "error", listener: (error: Error) => void): unknown;
  removeListener?(event: "error", listener: (error: Error) => void): unknown;
}

/** The part of a pg Pool the store uses (a `pg.Pool` is one). */
export interface PgPoolLike {
  connect(): Promise<PgClient>;
  end(): Promise<void>;
  on?(event: "error", listener: (error: Error) => void): unknown;
  on?(event: "acquire", listener: (client: PgClient) => void): unknown;
  options?: { host?: string; port?: number; database?: string; connectionString?: string };
  /** Callers waiting for a connection (pg-pool has it): a held connection goes back to them first. */
  readonly waitingCount?: number;
}

export interface PoolSettings {
  connectionString: string | undefined;
  ssl: boolean | object | undefined;
  max: number;
  applicationName: string;
  connectTimeoutMs: number;
}

type PgModule = {
  Pool: new (config: Record<string, unknown>) => PgPoolLike;
};

let pgModule: Promise<PgModule> | undefined;

/** `import("pg")` on first use; a missing package is a SteplogError that says what to install. */
export function loadPg(): Promise<PgModule> {
  pgModule ??= import("pg").then(
    (mod) => (mod as { default?: PgModule }).default ?? (mod as unknown as PgModule),
    (error: unknown) => {
      pgModule = undefined;
      const code = (error as { code?: string }).code;
      if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") {
        throw new StoreDriverFailedError(
          "Postgres store",
          [{ driver: "the pg package", reason: "it is not installed" }],
          "postgresStore needs it: type npm install pg (steplog lists it as an optional peer dependency), then start again.",
          error,
        );
      }
      throw error;
    },
  );
  return pgModule;
}

export async function createPool(settings: PoolSettings): Promise<PgPoolLike> {
  const pg = await loadPg();
  const pool = new pg.Pool({
    ...(settings.connectionString === undefined ? {} : { connectionString: settings.connectionString }),
    ...(settings.ssl === undefined ? {} : { ssl: settings.ssl }),
    max: settings.max,
    application_name: settings.applicationName,
    connectionTimeoutMillis: settings.connectTimeoutMs,
    // A connection through a dead network path is noticed, not waited on forever.
    keepAlive: true,
  });
  // An idle connection that dies (pg_terminate_backend, a restart) is dropped by the pool; the
  // next checkout gets a new one. Without a listener pg would crash the process.
  pool.on?.("error", () => {});
  guardCheckouts(pool);
  return pool;
}

/**
 * Give every client the pool hands out an error listener of its own before pg-pool takes its
 * idle one away. Between that and the caller's own listener lies a gap in which a connection
 * that dies (the server's "terminating connection" arriving with "ready for query") would emit
 * an unhandled 'error' and crash the process; the failure still reaches the caller through its
 * query. For the pools steplog makes and the ones it is given.
 */
export function guardCheckouts(pool: PgPoolLike): void {
  if (guardedPools.has(pool)) return;
  guardedPools.add(pool);
  pool.on?.("acquire", (client) => {
    if (guardedClients.has(client)) return;
    guardedClients.add(client);
    client.on?.("error", ignore);
  });
}

/** Once per pool (several stores may share one) and once per client. */
const guardedPools = new WeakSet<PgPoolLike>();
const guardedClients = new WeakSet<PgClient>();

const CONNECTION_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "57P01", // admin_shutdown: pg_terminate_backend, a fast shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: the server is starting
  "57P05", // idle_session_timeout
  "25P03", // idle_in_transaction_session_timeout
  "08000",
  "08001",
  "08003",
  "08004",
  "08006",
]);
// "Query read timeout": pg's client-side query_timeout. The statement may still run (and commit)
// on the server; the connection is in an unknown state, so it is treated as lost.
const CONNECTION_MESSAGES =
  /Connection terminated|connection error and is not queryable|not queryable|timeout exceeded when trying to connect|Connection ended|Query read timeout/i;

/** The connection (not the statement) failed: the transaction is gone with it. */
export function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && CONNECTION_CODES.has(code)) return true;
  return error instanceof Error && !(error instanceof SteplogError) && CONNECTION_MESSAGES.test(error.message);
}

/** The server is there but these connection settings cannot use it: no such host, database, or role, or a wrong password. */
export function isConnectionSettingsError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && SETTINGS_CODES.has(code);
}

const SETTINGS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "3D000", "28000", "28P01"]);

/** An error the server raised for one statement (it has a SQLSTATE): the server answered. */
export function isDbError(error: unknown): boolean {
  return typeof (error as { code?: unknown }).code === "string" && /^[0-9A-Z]{5}$/.test((error as { code: string }).code);
}

/** Deadlock or serialization failure: the server rolled the transaction back; run it again. */
export function isTransient(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return code === "40P01" || code === "40001";
}

/** Credentials never reach a message: strip `user:password@` from URLs and any known secret. */
export function redact(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 3) out = out.split(secret).join("***");
  return out.replace(/(postgres(?:ql)?:\/\/)[^@\s/]*@/gi, "$1***@").replace(/password=\S+/gi, "password=***");
}

/** "host:port/db" for messages, from the connection string, a given pool's options, or libpq's PG* variables. */
export function describeTarget(connectionString: string | undefined, pool: PgPoolLike | undefined): string {
  if (pool && !connectionString) connectionString = pool.options?.connectionString;
  if (connectionString) {
    try {
      // Without the user part (up to the last "@"): a password holding "/" would be read as the path.
      const userPart = /^[a-z][a-z0-9+.-]*:\/\/(.*)@/i.exec(connectionString)?.[1];
      const user = userPart === undefined ? "" : decodeURIComponent(userPart.split(":")[0] ?? "");
      const url = new URL(connectionString.replace(/^([a-z][a-z0-9+.-]*:\/\/).*@/i, "$1"));
      const db = decodeURIComponent(url.pathname.replace(/^\//, "")) || user || "postgres";
      const host = url.hostname || url.searchParams.get("host") || "localhost";
      return `${host}:${url.port || "5432"}/${db}`;
    } catch {
      return "a connection string that could not be parsed";
    }
  }
  const o = pool?.options ?? {};
  const host = o.host ?? process.env.PGHOST ?? "localhost";
  const port = o.port ?? process.env.PGPORT ?? "5432";
  const db = o.database ?? process.env.PGDATABASE ?? process.env.PGUSER ?? process.env.USER ?? "postgres";
  return `${host}:${port}/${db}`;
}

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
