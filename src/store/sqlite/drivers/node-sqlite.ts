/**
 * The node:sqlite driver (Node.js 22.16+ and Deno): the runtime's built-in SQLite, nothing to
 * install or build. A statement's `run` is node:sqlite's own; rows as arrays and plucked values
 * use its `setReturnArrays`. Transactions are made here as better-sqlite3 makes them (BEGIN,
 * or a savepoint inside one; rolled back on a throw unless SQLite already did).
 */

import { createRequire } from "node:module";
import type { SqliteConnection, SqliteDriver, SqliteStatement, SqliteTransaction } from "./connection.js";

/** What of node:sqlite's DatabaseSync and StatementSync this driver uses. */
interface NodeStatement extends SqliteStatement {
  setReturnArrays(enabled: boolean): void;
  setAllowUnknownNamedParameters(enabled: boolean): void;
}
interface NodeDatabase {
  readonly isTransaction: boolean;
  prepare(sql: string): NodeStatement;
  exec(sql: string): void;
  close(): void;
}
type NodeDatabaseClass = new (file: string, options: { readOnly: boolean }) => NodeDatabase;

const plain = (row: unknown): unknown => (row === undefined ? undefined : { ...(row as object) });

class NodeSqliteConnection implements SqliteConnection {
  readonly driver = "node:sqlite";
  readonly readonly: boolean;
  readonly #db: NodeDatabase;
  #control: Record<"begin" | "immediate" | "commit" | "rollback" | "savepoint" | "release" | "undo", NodeStatement> | undefined;
  constructor(db: NodeDatabase, readonly: boolean) {
    this.#db = db;
    this.readonly = readonly;
  }
  get inTransaction(): boolean {
    return this.#db.isTransaction;
  }
  prepare(sql: string): SqliteStatement {
    const statement = this.#db.prepare(sql);
    // As better-sqlite3: an object of named parameters may carry keys the SQL does not name.
    statement.setAllowUnknownNamedParameters(true);
    // Rows as plain objects (node:sqlite makes them without a prototype); `run`, the hot path's, is its own.
    return {
      run: statement.run.bind(statement),
      get: (...params) => plain(statement.get(...params)),
      all: (...params) => statement.all(...params).map(plain),
    };
  }
  prepareRaw(sql: string): SqliteStatement {
    const statement = this.#db.prepare(sql);
    statement.setReturnArrays(true);
    return statement;
  }
  preparePluck(sql: string): SqliteStatement {
    const statement = this.#db.prepare(sql);
    statement.setReturnArrays(true);
    return {
      run: (...params) => statement.run(...params),
      get: (...params) => (statement.get(...params) as unknown[] | undefined)?.[0],
      all: (...params) => (statement.all(...params) as unknown[][]).map((row) => row[0]),
    };
  }
  exec(sql: string): void {
    this.#db.exec(sql);
  }
  pragma(text: string): unknown {
    const statement = this.#db.prepare(`PRAGMA ${text}`);
    statement.setReturnArrays(true);
    return (statement.get() as unknown[] | undefined)?.[0];
  }
  transaction<A extends unknown[], R>(fn: (...args: A) => R): SqliteTransaction<A, R> {
    // Prepared once per connection: a batch's BEGIN and COMMIT are not parsed again each time.
    const c = (this.#control ??= {
      begin: this.#db.prepare("BEGIN"),
      immediate: this.#db.prepare("BEGIN IMMEDIATE"),
      commit: this.#db.prepare("COMMIT"),
      rollback: this.#db.prepare("ROLLBACK"),
      savepoint: this.#db.prepare('SAVEPOINT "steplog nested"'),
      release: this.#db.prepare('RELEASE "steplog nested"'),
      undo: this.#db.prepare('ROLLBACK TO "steplog nested"'),
    });
    const db = this.#db;
    const wrap = (begin: NodeStatement) =>
      function (this: unknown, ...args: A): R {
        const nested = db.isTransaction;
        if (nested) c.savepoint.run();
        else begin.run();
        try {
          const result = fn.apply(this, args);
          (nested ? c.release : c.commit).run();
          return result;
        } catch (error) {
          if (db.isTransaction) {
            if (nested) {
              c.undo.run();
              c.release.run();
            } else c.rollback.run();
          }
          throw error;
        }
      };
    return Object.assign(wrap(c.begin), { immediate: wrap(c.immediate) });
  }
  close(): void {
    this.#db.close();
  }
}

/** The features of node:sqlite this driver needs (Node.js 22.16 and later, 24, Deno 2.2+): named so an older one is told what it lacks. */
const NEEDED = ["setReturnArrays", "setAllowUnknownNamedParameters"] as const;

export function loadNodeSqlite(): SqliteDriver {
  const { DatabaseSync } = createRequire(import.meta.url)("node:sqlite") as { DatabaseSync: NodeDatabaseClass };
  const probe = new DatabaseSync(":memory:", { readOnly: false });
  try {
    const statement = probe.prepare("SELECT 1");
    const missing = [...NEEDED.filter((name) => typeof statement[name] !== "function"), ...(typeof probe.isTransaction === "boolean" ? [] : ["isTransaction"])];
    if (missing.length > 0) throw new Error(`this node:sqlite has no ${missing.join(", ")} (they came in Node.js 22.16)`);
  } finally {
    probe.close();
  }
  return {
    name: "node:sqlite",
    open: (file, readonly) => new NodeSqliteConnection(new DatabaseSync(file, { readOnly: readonly }), readonly),
  };
}
