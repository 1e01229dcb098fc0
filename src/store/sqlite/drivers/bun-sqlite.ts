/**
 * The bun:sqlite driver (Bun's built-in SQLite). Its API is close to better-sqlite3's
 * (transactions with `.immediate`, savepoints when nested): statements are wrapped only where it
 * differs (`get` answers null for no row, rows as arrays are `values()`).
 */

import { createRequire } from "node:module";
import type { SqliteConnection, SqliteDriver, SqliteStatement, SqliteTransaction } from "./connection.js";

interface BunStatement {
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  values(...params: unknown[]): unknown[][];
}
interface BunDatabase {
  readonly inTransaction: boolean;
  prepare(sql: string): BunStatement;
  exec(sql: string): void;
  transaction<A extends unknown[], R>(fn: (...args: A) => R): SqliteTransaction<A, R>;
  close(): void;
}
type BunDatabaseClass = new (file: string, options: { readonly?: boolean; readwrite?: boolean; create: boolean; strict: boolean }) => BunDatabase;

class BunSqliteConnection implements SqliteConnection {
  readonly driver = "bun:sqlite";
  readonly readonly: boolean;
  readonly #db: BunDatabase;
  constructor(db: BunDatabase, readonly: boolean) {
    this.#db = db;
    this.readonly = readonly;
  }
  get inTransaction(): boolean {
    return this.#db.inTransaction;
  }
  prepare(sql: string): SqliteStatement {
    const statement = this.#db.prepare(sql);
    return {
      run: (...params) => statement.run(...params),
      get: (...params) => statement.get(...params) ?? undefined,
      all: (...params) => statement.all(...params),
    };
  }
  prepareRaw(sql: string): SqliteStatement {
    const statement = this.#db.prepare(sql);
    return {
      run: (...params) => statement.run(...params),
      get: (...params) => statement.values(...params)[0],
      all: (...params) => statement.values(...params),
    };
  }
  preparePluck(sql: string): SqliteStatement {
    const statement = this.#db.prepare(sql);
    return {
      run: (...params) => statement.run(...params),
      get: (...params) => statement.values(...params)[0]?.[0],
      all: (...params) => statement.values(...params).map((row) => row[0]),
    };
  }
  exec(sql: string): void {
    this.#db.exec(sql);
  }
  pragma(text: string): unknown {
    return this.#db.prepare(`PRAGMA ${text}`).values()[0]?.[0];
  }
  transaction<A extends unknown[], R>(fn: (...args: A) => R): SqliteTransaction<A, R> {
    return this.#db.transaction(fn);
  }
  close(): void {
    this.#db.close();
  }
}

export function loadBunSqlite(): SqliteDriver {
  const { Database } = createRequire(import.meta.url)("bun:sqlite") as { Database: BunDatabaseClass };
  return {
    name: "bun:sqlite",
    // strict: named parameters bind without their @ (as in better-sqlite3).
    open: (file, readonly) =>
      new BunSqliteConnection(
        new Database(file, readonly ? { readonly: true, create: false, strict: true } : { readwrite: true, create: false, strict: true }),
        readonly,
      ),
  };
}
