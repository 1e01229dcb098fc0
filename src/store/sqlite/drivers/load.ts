/**
 * Choosing the SQLite driver and loading it, on the first open of a SQLite store (never at
 * import): "auto" is better-sqlite3 where it loads, else node:sqlite on Node.js; the built-in
 * one on Bun (bun:sqlite) and Deno (node:sqlite). When none loads, STORE_DRIVER_FAILED names
 * each driver tried, why it failed, and the fix that fits this runtime.
 */

import { StoreDriverFailedError, type DriverTried } from "../../../base/errors.js";
import { loadBetterSqlite3 } from "./better-sqlite3.js";
import { loadBunSqlite } from "./bun-sqlite.js";
import type { SqliteDriver, SqliteDriverChoice, SqliteDriverName } from "./connection.js";
import { loadNodeSqlite } from "./node-sqlite.js";

const LOADERS: Record<SqliteDriverName, () => SqliteDriver> = {
  "better-sqlite3": loadBetterSqlite3,
  "node:sqlite": loadNodeSqlite,
  "bun:sqlite": loadBunSqlite,
};

/** Drivers that loaded, kept for the process (a failure is not kept: a rebuild need not mean a restart of every store). */
const loaded = new Map<SqliteDriverName, SqliteDriver>();
/** The driver "auto" settled on: a store opened later does not try again the ones that failed before it. */
let auto: SqliteDriver | undefined;

type Runtime = "node" | "bun" | "deno";

function runtime(): Runtime {
  const versions = process.versions as Record<string, string | undefined>;
  return versions.bun ? "bun" : versions.deno ? "deno" : "node";
}

/** What "auto" tries, in order: the built-in where the runtime is not Node.js (better-sqlite3 is a Node.js addon). */
function autoOrder(on: Runtime): SqliteDriverName[] {
  if (on === "bun") return ["bun:sqlite"];
  if (on === "deno") return ["node:sqlite"];
  return ["better-sqlite3", "node:sqlite"];
}

/** The driver for a store: the first of `choice` that loads, or STORE_DRIVER_FAILED. */
export function loadDriver(choice: SqliteDriverChoice, location: string): SqliteDriver {
  if (choice === "auto" && auto) return auto;
  const on = runtime();
  const order = choice === "auto" ? autoOrder(on) : [choice];
  const tried: DriverTried[] = [];
  const failures: Array<{ name: SqliteDriverName; error: unknown }> = [];
  for (const name of order) {
    try {
      const driver = loaded.get(name) ?? LOADERS[name]();
      loaded.set(name, driver);
      if (choice === "auto") auto = driver;
      return driver;
    } catch (error) {
      failures.push({ name, error });
      tried.push({ driver: describe(name, error), reason: reasonOf(name, error, on) });
    }
  }
  throw new StoreDriverFailedError(location, tried, fixFor(choice, failures, on), failures[0]?.error);
}

/** The loader's message on one line (a native module's spans several: which version it was built for is on the second). */
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error)).trim().replace(/\s*\n\s*/g, " ");

const notFound = (error: unknown): boolean => {
  const code = (error as { code?: string }).code;
  return code === "MODULE_NOT_FOUND" || code === "ERR_MODULE_NOT_FOUND" || code === "ERR_UNKNOWN_BUILTIN_MODULE";
};

/** better-sqlite3 installed, its native module not loading (not built, built for another Node.js or platform). */
const nativeFailed = (error: unknown): boolean =>
  (error as { code?: string }).code === "ERR_DLOPEN_FAILED" ||
  /bindings file|NODE_MODULE_VERSION|better_sqlite3\.node|invalid ELF header|wrong ELF class/i.test(messageOf(error));

function describe(name: SqliteDriverName, error: unknown): string {
  return name === "better-sqlite3" && nativeFailed(error) ? "better-sqlite3's native module" : name;
}

function reasonOf(name: SqliteDriverName, error: unknown, on: Runtime): string {
  const runtimeName = on === "bun" ? "Bun" : on === "deno" ? "Deno" : `Node.js ${process.version}`;
  if (name === "bun:sqlite" && on !== "bun") return `it is Bun's own, and this is ${runtimeName}`;
  if (name === "node:sqlite" && notFound(error)) return `${runtimeName} has none; it came with Node.js 22.5`;
  if (name === "better-sqlite3" && notFound(error)) return "it is not installed (an optional dependency, skipped where it could not be built)";
  return messageOf(error);
}

/** What to type next, for the drivers that failed on this runtime. */
function fixFor(choice: SqliteDriverChoice, failures: Array<{ name: SqliteDriverName; error: unknown }>, on: Runtime): string {
  const fixes: string[] = [];
  for (const { name, error } of failures) {
    if (name === "better-sqlite3") {
      const needs = `Node.js ${process.version} (NODE_MODULE_VERSION ${process.versions.modules}) on ${process.platform}-${process.arch}`;
      fixes.push(
        on !== "node"
          ? `better-sqlite3 is a Node.js addon: on ${on === "bun" ? "Bun" : "Deno"} use driver "auto"`
          : notFound(error)
            ? `type npm install better-sqlite3 (where no prebuilt binary fits it needs python3, make and a C++ compiler)`
            : `build better-sqlite3 for ${needs}: type npm rebuild better-sqlite3 (it needs python3, make and a C++ compiler), or npm ci again after switching Node.js versions`,
      );
    } else if (name === "node:sqlite") {
      fixes.push(
        on === "bun"
          ? `on Bun use driver "auto" (bun:sqlite)`
          : `run on Node.js 22.16 or later (24 is the active LTS), whose built-in node:sqlite needs nothing installed`,
      );
    } else {
      fixes.push(on === "bun" ? `upgrade Bun` : `use driver "auto" here (bun:sqlite is for Bun)`);
    }
  }
  const text = fixes.join("; or ");
  const sentence = text.charAt(0).toUpperCase() + text.slice(1) + ".";
  if (choice === "auto") return sentence;
  if (choice !== "better-sqlite3") return `${sentence} (sqliteStore was asked for driver "${choice}" only.)`;
  return `${sentence} (sqliteStore was asked for driver "${choice}" only; with driver "auto" it uses the runtime's built-in SQLite where better-sqlite3 does not load.)`;
}
