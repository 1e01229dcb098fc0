/**
 * The Postgres store's options, and their checks. postgresStore runs the checks when the store
 * is made, before anything connects, so a wrong option is an INVALID_OPTION at once rather than
 * a failure at the first query.
 */

import { InvalidOptionError } from "../../base/errors.js";
import { checkKnownKeys, type KnownKeys } from "../../base/options.js";
import type { PgPoolLike } from "./connection.js";
import { quoteSchema } from "./schema.js";

export const DEFAULT_PG_SCHEMA = "steplog";
const DEFAULT_IDLE_IN_TRANSACTION_MS = 5000;

const POSTGRES_KEYS: KnownKeys<PostgresStoreOptions> = {
  connectionString: true,
  pool: true,
  schema: true,
  ssl: true,
  poolSize: true,
  applicationName: true,
  retryForMs: true,
  idleInTransactionTimeoutMs: true,
  connectTimeoutMs: true,
};

export interface PostgresStoreOptions {
  /** `postgres://user@host:5432/db`. Default: libpq's PGHOST, PGUSER, PGDATABASE… variables. */
  connectionString?: string;
  /** Use this pg.Pool instead of making one (the store will not end it on close; give it an "error" listener). */
  pool?: PgPoolLike;
  /** The Postgres schema the tables live in. Default "steplog". */
  schema?: string;
  /**
   * Passed to pg as is: `true`, or node:tls ConnectionOptions (`ca`, `cert`, `key`,
   * `rejectUnauthorized`…). Typed as any object so these types need no @types/node.
   */
  ssl?: boolean | object;
  /** Connections in the store's pool. Default 10. */
  poolSize?: number;
  /** Shown in pg_stat_activity. Default "steplog". */
  applicationName?: string;
  /** How long to keep retrying on new connections when the server cannot be reached, in ms. Default 5000. */
  retryForMs?: number;
  /**
   * The server ends a transaction of this store that sat idle this long, in ms (default 5000, or
   * a third of the engine's leaseMs when that is less; see idleLimitFor). Transactions never
   * wait on user code, so one idle this long belongs to a frozen or cut-off process; ending it
   * frees its locks, so other workers can take its runs once its leases expire.
   */
  idleInTransactionTimeoutMs?: number;
  /** How long to wait for a new connection, in ms. Default 10000. */
  connectTimeoutMs?: number;
}

/** Check `options` (INVALID_OPTION on the first wrong one); returns the schema they name. */
export function checkPostgresOptions(options: PostgresStoreOptions): string {
  checkKnownKeys("postgresStore", options, POSTGRES_KEYS);
  const schema = options.schema ?? DEFAULT_PG_SCHEMA;
  const bad = (what: string) => new InvalidOptionError(`postgresStore: ${what}.`);
  try {
    quoteSchema(schema);
  } catch {
    throw bad(`schema must be a plain name (letters, digits, _; at most 63), got ${JSON.stringify(schema)}`);
  }
  if (options.pool && options.connectionString !== undefined) throw bad("pass either connectionString or pool, not both");
  for (const key of ["poolSize", "retryForMs", "idleInTransactionTimeoutMs", "connectTimeoutMs"] as const) {
    const v = options[key];
    if (v !== undefined && !(Number.isInteger(v) && v >= (key === "poolSize" || key === "idleInTransactionTimeoutMs" ? 1 : 0))) {
      throw bad(`${key} must be a whole number${key === "poolSize" ? " ≥ 1" : " of ms"}, got ${String(v)}`);
    }
  }
  return schema;
}

/**
 * The idle-in-transaction limit for a store used with leases of `leaseMs`: at most a third of
 * the lease (one renewal interval). A worker cut off by the network inside a transaction keeps
 * that transaction's locks until the server ends it; another worker's writes queued behind them
 * (its renewals among them) must still get through before its own lease runs out. The default
 * shrinks to fit; a limit given that is longer is refused (INVALID_OPTION), naming both.
 */
export function idleLimitFor(options: PostgresStoreOptions, leaseMs: number): number {
  const most = Math.max(1, Math.floor(leaseMs / 3));
  const given = options.idleInTransactionTimeoutMs;
  if (given === undefined) return Math.min(DEFAULT_IDLE_IN_TRANSACTION_MS, most);
  if (given > most) {
    throw new InvalidOptionError(
      `postgresStore: idleInTransactionTimeoutMs ${given} is longer than a lease of ${leaseMs} ms (createEngine's leaseMs) allows: a worker cut off by the network keeps its locks that long, and other workers whose writes wait behind them would lose their leases. Set idleInTransactionTimeoutMs to at most ${most} (a third of leaseMs), or leaseMs to at least ${given * 3}.`,
    );
  }
  return given;
}

/** The limit before any engine told the store its lease. */
export function idleLimitBeforeAnyLease(options: PostgresStoreOptions): number {
  return options.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_MS;
}
