// The SQLite driver the tests run on, and what they open the file with besides the store. The
// SQLite suites run on the driver this runtime loads ("auto": better-sqlite3 on the machine's
// Node.js 20, node:sqlite under Node.js 24 where better-sqlite3 is built for another ABI), or on
// the one STEPLOG_TEST_SQLITE_DRIVER names (SQLITE_DRIVER does the same for the crash suite's
// worker processes: test/crash/fixtures/worker.mjs). See test/helpers/runtimes.ts to run them
// under another runtime.
import fs from "node:fs";
import { sqliteStore as makeSqliteStore, type SqliteStore, type SqliteStoreOptions } from "../../src/entries/sqlite.js";
import { SQLITE_DRIVERS, type SqliteConnection, type SqliteDriverChoice, type SqliteDriverName } from "../../src/store/sqlite/drivers/connection.js";
import { loadDriver } from "../../src/store/sqlite/drivers/load.js";

/** Whether this runtime can load the driver. */
export function canLoad(driver: SqliteDriverName): boolean {
  try {
    loadDriver(driver, "test probe");
    return true;
  } catch {
    return false;
  }
}

/** Every driver this runtime loads (the suites that take a driver run once on each). */
export const LOADABLE_DRIVERS: SqliteDriverName[] = SQLITE_DRIVERS.filter(canLoad);

const asked = process.env.STEPLOG_TEST_SQLITE_DRIVER as SqliteDriverChoice | undefined;

/** The driver the SQLite tests use: STEPLOG_TEST_SQLITE_DRIVER, else the one "auto" loads here. */
export const TEST_SQLITE_DRIVER: SqliteDriverName = asked && asked !== "auto" ? asked : loadDriver("auto", "test probe").name;

/** sqliteStore on the test driver (unless the options name one). */
export function sqliteStore(options: SqliteStoreOptions = {}): SqliteStore {
  return makeSqliteStore({ driver: TEST_SQLITE_DRIVER, ...options });
}

/**
 * A plain connection to a store file through the test driver, as a person with the sqlite3
 * shell would have: for looking at what the store wrote, or changing it behind its back.
 * Shaped like better-sqlite3's `new Database(file, { readonly })`, which the tests were written with.
 */
export class Database implements SqliteConnection {
  readonly #c: SqliteConnection;
  constructor(file: string, options: { readonly?: boolean; fileMustExist?: boolean } = {}) {
    if (file !== ":memory:" && !fs.existsSync(file)) {
      if (options.readonly || options.fileMustExist) throw new Error(`no such file: ${file}`);
      fs.writeFileSync(file, "");
    }
    this.#c = loadDriver(TEST_SQLITE_DRIVER, "test connection").open(file, options.readonly === true);
  }
  get driver() {
    return this.#c.driver;
  }
  get readonly() {
    return this.#c.readonly;
  }
  get inTransaction() {
    return this.#c.inTransaction;
  }
  prepare(sql: string) {
    return this.#c.prepare(sql);
  }
  prepareRaw(sql: string) {
    return this.#c.prepareRaw(sql);
  }
  preparePluck(sql: string) {
    return this.#c.preparePluck(sql);
  }
  exec(sql: string): this {
    this.#c.exec(sql);
    return this;
  }
  /** Its first value (better-sqlite3's `{ simple: true }`, which every test asks for or ignores). */
  pragma(text: string, _options?: { simple: true }): unknown {
    return this.#c.pragma(text);
  }
  transaction<A extends unknown[], R>(fn: (...args: A) => R) {
    return this.#c.transaction(fn);
  }
  close(): void {
    this.#c.close();
  }
}

/** The SQL of a prepared statement, whichever driver made it (better-sqlite3's `source`, node:sqlite's `sourceSQL`). */
export const sourceOf = (statement: object): string => (statement as { source?: string }).source ?? (statement as { sourceSQL?: string }).sourceSQL ?? "";

type StatementMethod = (this: object, ...args: unknown[]) => unknown;
type StatementMethods = { get: StatementMethod; run: StatementMethod };

/** The prototype of the test driver's own statement objects: to watch what the store runs (a test patches its get or run). */
export async function statementPrototype(): Promise<StatementMethods> {
  if (TEST_SQLITE_DRIVER === "node:sqlite")
    return ((await import("node:sqlite" as string)) as { StatementSync: { prototype: StatementMethods } }).StatementSync.prototype;
  if (TEST_SQLITE_DRIVER === "better-sqlite3") {
    const BetterSqlite3 = (await import("better-sqlite3")).default;
    const probe = new BetterSqlite3(":memory:");
    const prototype = Object.getPrototypeOf(probe.prepare("SELECT 1")) as StatementMethods;
    probe.close();
    return prototype;
  }
  throw new Error(`no statement prototype for ${TEST_SQLITE_DRIVER} here`);
}
