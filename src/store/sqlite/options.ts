/**
 * The SQLite store's options, checked once when the store is made: unknown keys and pragmas
 * steplog sets itself are refused up front, so a typo or a conflicting setting fails at
 * `sqliteStore()` rather than on the first write. What remains is resolved into the settings
 * the store and its opening (open.ts) read.
 */

import path from "node:path";
import { InvalidOptionError } from "../../base/errors.js";
import { checkKnownKeys, type KnownKeys } from "../../base/options.js";
import { SQLITE_DRIVERS, type SqliteDriverChoice } from "./drivers/connection.js";

/** What `sqliteStore()` takes; every option is checked when the store is made. */
export interface SqliteStoreOptions {
  /** The database file. Default `.steplog/steplog.db` under the working directory. */
  path?: string;
  /**
   * Which SQLite library opens it: "auto" (default) is better-sqlite3 where it loads, else the
   * runtime's built-in (node:sqlite on Node.js 22.16+ and Deno, bun:sqlite on Bun). Every driver
   * reads and writes the same file format.
   */
  driver?: SqliteDriverChoice;
  /**
   * "power" (default): synchronous=FULL, a committed step survives a power loss.
   * "process": synchronous=NORMAL, survives a process crash but may lose the last
   * commits on a power loss or OS crash; several times faster.
   */
  durability?: "power" | "process";
  /** How long a write waits for another process's transaction, in ms. Default 5000. */
  busyTimeoutMs?: number;
  /** Open for reading only (get, list); any write is refused with STORE_READ_ONLY. */
  readonly?: boolean;
  /**
   * Extra pragmas applied on every open, after steplog's own, e.g. `{ max_page_count: 100000 }`
   * to cap the file's size, or `{ cache_size: -16000 }` for a 16 MB page cache (steplog sets
   * 2 MB). journal_mode, synchronous and busy_timeout are steplog's to set.
   */
  pragmas?: Record<string, string | number>;
  /** Told once when an existing store file can be read by other users. Default: process.emitWarning. */
  onWarning?: (message: string) => void;
}

export const DEFAULT_SQLITE_PATH = path.join(".steplog", "steplog.db");

const SQLITE_KEYS: KnownKeys<SqliteStoreOptions> = {
  path: true,
  driver: true,
  durability: true,
  busyTimeoutMs: true,
  readonly: true,
  pragmas: true,
  onWarning: true,
};

const RESERVED_PRAGMAS = new Set(["journal_mode", "synchronous", "busy_timeout", "locking_mode"]);

/** The options with their defaults filled in. */
export interface SqliteSettings {
  /** The database file, as an absolute path. */
  readonly file: string;
  /** `sqlite store at <file>`, for error messages. */
  readonly location: string;
  readonly driver: SqliteDriverChoice;
  readonly durability: "power" | "process";
  readonly busyTimeoutMs: number;
  readonly readonly: boolean;
  readonly extraPragmas: Array<[string, string | number]>;
  readonly warn: (message: string) => void;
}

export function sqliteSettings(options: SqliteStoreOptions): SqliteSettings {
  checkKnownKeys("sqliteStore", options, SQLITE_KEYS);
  const file = path.resolve(options.path ?? DEFAULT_SQLITE_PATH);
  const settings: SqliteSettings = {
    file,
    location: `sqlite store at ${file}`,
    driver: options.driver ?? "auto",
    durability: options.durability ?? "power",
    busyTimeoutMs: options.busyTimeoutMs ?? 5000,
    readonly: options.readonly === true,
    extraPragmas: Object.entries(options.pragmas ?? {}),
    warn: options.onWarning ?? ((message) => process.emitWarning(message, { code: "STEPLOG_STORE_PERMISSIONS" })),
  };
  if (settings.driver !== "auto" && !SQLITE_DRIVERS.includes(settings.driver)) {
    throw new InvalidOptionError(
      `sqliteStore: driver ${JSON.stringify(settings.driver)} is not one steplog has; use "auto" (the default), ${SQLITE_DRIVERS.map((d) => JSON.stringify(d)).join(", ")}.`,
    );
  }
  for (const [name, value] of settings.extraPragmas) {
    if (RESERVED_PRAGMAS.has(name.toLowerCase()) || !/^[a-z_]+$/i.test(name) || !/^[\w.-]+$/.test(String(value))) {
      throw new InvalidOptionError(
        `sqliteStore: pragma ${JSON.stringify(name)} = ${JSON.stringify(value)} is not allowed here (steplog sets ${[...RESERVED_PRAGMAS].join(", ")} itself; names are words, values plain numbers or words).`,
      );
    }
  }
  return settings;
}
