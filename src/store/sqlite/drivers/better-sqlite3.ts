/**
 * The better-sqlite3 driver: its statements and transaction functions are handed to the store
 * as they are (its API is the one the connection interface follows), so the store runs as fast
 * on it as raw better-sqlite3 does. Loaded on first use: an app that never opens a SQLite store
 * never loads the native module.
 */

import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";
import type { SqliteConnection, SqliteDriver, SqliteStatement, SqliteTransaction } from "./connection.js";

type Db = BetterSqlite3.Database;

class BetterSqlite3Connection implements SqliteConnection {
  readonly driver = "better-sqlite3";
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }
  get readonly(): boolean {
    return this.#db.readonly;
  }
  get inTransaction(): boolean {
    return this.#db.inTransaction;
  }
  prepare(sql: string): SqliteStatement {
    return this.#db.prepare(sql);
  }
  prepareRaw(sql: string): SqliteStatement {
    return this.#db.prepare(sql).raw(true);
  }
  preparePluck(sql: string): SqliteStatement {
    return this.#db.prepare(sql).pluck();
  }
  exec(sql: string): void {
    this.#db.exec(sql);
  }
  pragma(text: string): unknown {
    return this.#db.pragma(text, { simple: true });
  }
  transaction<A extends unknown[], R>(fn: (...args: A) => R): SqliteTransaction<A, R> {
    return this.#db.transaction(fn) as unknown as SqliteTransaction<A, R>;
  }
  close(): void {
    this.#db.close();
  }
}

/**
 * Load better-sqlite3 and its native module (which it loads only when a first database is
 * made: an in-memory one is opened here, so a module built for another Node.js fails now, as
 * a driver that did not load, not later as a store that could not be read).
 */
export function loadBetterSqlite3(): SqliteDriver {
  const Database = createRequire(import.meta.url)("better-sqlite3") as typeof BetterSqlite3;
  new Database(":memory:").close();
  return {
    name: "better-sqlite3",
    open: (file, readonly) => new BetterSqlite3Connection(new Database(file, { fileMustExist: true, readonly })),
  };
}
