/**
 * The Postgres pool: loading `pg` lazily (steplog works without it installed), making a pool
 * (or guarding one the user gave), and naming its target in messages.
 */

import { StoreDriverFailedError } from "../../base/errors.js";

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

function ignore(): void {}
