/**
 * The one SQLite connection the store talks to, whichever driver opened it (better-sqlite3,
 * node:sqlite, bun:sqlite): what the store actually uses of a driver, and no more. Statements
 * and transaction functions are the driver's own objects where its API already matches
 * (better-sqlite3's always), so the hot paths (a step's intent and outcome, a batch's commit)
 * call the driver with nothing in between.
 */

/** The drivers steplog can open a SQLite file with. */
export const SQLITE_DRIVERS = ["better-sqlite3", "node:sqlite", "bun:sqlite"] as const;
export type SqliteDriverName = (typeof SQLITE_DRIVERS)[number];

/** What `sqliteStore({ driver })` takes: a driver, or "auto" (better-sqlite3 where it loads, else the runtime's built-in). */
export type SqliteDriverChoice = "auto" | SqliteDriverName;

export interface SqliteRunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/**
 * A prepared statement. Parameters are positional (`run(a, b)`) or one object of named ones
 * (`run({ runId })` for `@runId` in the SQL; keys the SQL does not name are ignored). `get`
 * answers undefined when there is no row.
 */
export interface SqliteStatement {
  run(...params: unknown[]): SqliteRunResult;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

/**
 * `fn` in a transaction: called as is, BEGIN (DEFERRED) … COMMIT, or a savepoint when a
 * transaction is open already; `.immediate` takes the write lock at BEGIN. Rolled back when
 * `fn` throws (unless SQLite rolled it back itself), and the error thrown on.
 */
export interface SqliteTransaction<A extends unknown[], R> {
  (...args: A): R;
  immediate(...args: A): R;
}

export interface SqliteConnection {
  readonly driver: SqliteDriverName;
  /** Opened read-only: every write is refused by SQLite. */
  readonly readonly: boolean;
  /** A transaction is open on this connection (SQLite may have rolled one back on its own: disk full, I/O error). */
  readonly inTransaction: boolean;
  prepare(sql: string): SqliteStatement;
  /** Rows as arrays in the statement's column order (cheaper to make into objects of one shape than the driver's row objects). */
  prepareRaw(sql: string): SqliteStatement;
  /** Each row as its first column's value (`get` of a `max(…)` is the number, or null). */
  preparePluck(sql: string): SqliteStatement;
  /** One or more statements, no parameters, nothing returned. */
  exec(sql: string): void;
  /** `PRAGMA <text>`: its first row's first value, or undefined when it answers no row. */
  pragma(text: string): unknown;
  transaction<A extends unknown[], R>(fn: (...args: A) => R): SqliteTransaction<A, R>;
  close(): void;
}

/** A driver that has loaded: it opens connections. */
export interface SqliteDriver {
  readonly name: SqliteDriverName;
  /** Open an existing file (the store creates it first, owner-only). */
  open(file: string, readonly: boolean): SqliteConnection;
}
