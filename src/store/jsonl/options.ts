/**
 * The JSONL store's options, and their checks. jsonlStore runs them when the store is made,
 * before the file is touched, so a wrong option is an INVALID_OPTION at once; what they yield
 * (the absolute path, how long a writer waits for the lock, where warnings go) is settled here.
 */

import path from "node:path";
import { InvalidOptionError } from "../../base/errors.js";
import { checkKnownKeys, type KnownKeys } from "../../base/options.js";
import { MIN_LOCK_STALE_MS } from "./lock.js";

export interface JsonlStoreOptions {
  /** The journal file, e.g. `.steplog/steplog.jsonl`. Its folder is created (0700) on the first start. */
  path: string;
  /**
   * "power" (default): fsync after every commit, a committed step survives a power loss.
   * "process": no fsync; survives a crash of the process (the OS has the bytes) but may lose
   * the last commits on a power loss or OS crash.
   */
  durability?: "power" | "process";
  /**
   * After how long a lock left by a killed process is taken over, in ms. Default 10000;
   * at least 2000 (proper-lockfile's floor). A live holder keeps its lock fresh.
   */
  lockStaleMs?: number;
  /** Told about what is ignored: a torn last line, a record written without the lock. Default: one line on stderr. */
  onWarning?: (message: string) => void;
}

const DEFAULT_LOCK_STALE_MS = 10_000;
const JSONL_KEYS: KnownKeys<JsonlStoreOptions> = { path: true, durability: true, lockStaleMs: true, onWarning: true };
/** How much longer than the stale time a writer waits for the lock: enough to take over a dead holder's. */
const LOCK_WAIT_MARGIN_MS = 5_000;

/** The options, checked and with their defaults. */
export interface JsonlSettings {
  /** The journal file's absolute path. */
  file: string;
  durability: "power" | "process";
  staleMs: number;
  lockWaitMs: number;
  warn: (message: string) => void;
}

/** Check `options` (INVALID_OPTION on the first wrong one). */
export function checkJsonlOptions(options: JsonlStoreOptions): JsonlSettings {
  checkKnownKeys("jsonlStore", options, JSONL_KEYS);
  if (typeof options?.path !== "string" || options.path === "")
    throw new InvalidOptionError('jsonlStore: path must name the journal file, e.g. { path: ".steplog/steplog.jsonl" }.');
  const durability = options.durability ?? "power";
  if (durability !== "power" && durability !== "process")
    throw new InvalidOptionError(`jsonlStore: durability must be "power" or "process", got ${JSON.stringify(durability)}.`);
  const staleMs = options.lockStaleMs ?? DEFAULT_LOCK_STALE_MS;
  if (typeof staleMs !== "number" || !Number.isFinite(staleMs) || staleMs < MIN_LOCK_STALE_MS) {
    throw new InvalidOptionError(
      `jsonlStore: lockStaleMs must be a number of milliseconds ≥ ${MIN_LOCK_STALE_MS} (proper-lockfile's floor), got ${String(staleMs)}.`,
    );
  }
  if (options.onWarning !== undefined && typeof options.onWarning !== "function")
    throw new InvalidOptionError("jsonlStore: onWarning must be a function of one message.");
  return {
    file: path.resolve(options.path),
    durability,
    staleMs,
    lockWaitMs: staleMs + LOCK_WAIT_MARGIN_MS,
    warn: options.onWarning ?? ((message) => process.stderr.write(`steplog: ${message}\n`)),
  };
}
