/**
 * Opening the SQLite file: creating it owner-only, loading the driver (drivers/load.ts), connecting (read-only where this user cannot
 * write it, through a private snapshot when SQLite cannot read it in place), refusing a
 * foreign, broken or newer file before anything writes to it, the pragmas set on every open,
 * and the schema's migrations. Also what the store keeps of the opened file and checks later:
 * which file it was (so a deleted or replaced one is noticed) and why it is read-only, if it is.
 */

import fs from "node:fs";
import path from "node:path";
import { StoreFileGoneError, StoreReadOnlyError, StoreTooNewError, StoreUnreadableError, SteplogError } from "../../base/errors.js";
import { fault } from "../../base/faults.js";
import { createOwnerOnlyFile, warnIfShared } from "../owner-only-files.js";
import { MIGRATIONS, SCHEMA_VERSION } from "./schema.js";
import { notWritable, readOnlyCause, sqliteCode, UNREADABLE_CODES, unreadable, unreadableByThisUser, writeFailed } from "./failures.js";
import type { SqliteSettings } from "./options.js";
import { dropSnapshot, takeSnapshot, type Snapshot } from "./snapshot.js";
import type { SqliteConnection, SqliteDriver } from "./drivers/connection.js";
import { loadDriver } from "./drivers/load.js";

type Db = SqliteConnection;

/** SQLite's page cache per connection, in SQLite's units: negative means KiB. */
const DEFAULT_CACHE_SIZE = -2000;

/** What opening learned about the file, kept by the store for its life (set as opening goes, even if it then fails). */
export interface OpenedFile {
  /** Why this user cannot write the store (its folder or the file), so every write is refused, if it cannot. */
  readOnlyWhy: string | undefined;
  /** The private copy it is read from (see snapshot.ts), if it is: taken again when stale, removed on close. */
  snapshot: Snapshot | undefined;
  /** The opened file's device and inode: the path naming another file, or none, means it was deleted or replaced meanwhile. */
  identity: { dev: number; ino: number } | undefined;
}

/**
 * Open the file, migrated and with its pragmas set. With `create` false a missing file is
 * reported as absent (undefined) and nothing is created.
 */
export function openDatabase(settings: SqliteSettings, create: boolean, opened: OpenedFile): Db | undefined {
  const { file, location } = settings;
  const exists = fs.existsSync(file);
  if (!exists && !create) return undefined;
  if (!exists && settings.readonly) throw new StoreReadOnlyError(location, "opened with readonly: true, and the file does not exist yet");
  // Before the file is made: a store whose driver does not load leaves nothing behind.
  const driver = loadDriver(settings.driver, location);
  if (!exists) {
    try {
      createOwnerOnlyFile(file);
    } catch (error) {
      // A recursive mkdir on a read-only file system may answer ENOENT: ask the nearest folder that exists.
      const code = notWritable(error, path.dirname(file));
      if (code !== undefined)
        throw new StoreReadOnlyError(location, `${code}: its folder cannot be created or written by this user, so the file cannot be made`);
      throw error;
    }
  } else warnIfShared(file, location, settings.warn);
  let db: Db;
  try {
    db = connect(settings, opened, driver);
  } catch (error) {
    if (error instanceof SteplogError) throw error;
    throw unreadableByThisUser(location, file, error) ?? unreadable(location, error);
  }
  try {
    checkReadable(db, location);
    // The same pragmas on every open, whichever driver opened it (each builds SQLite with its own defaults).
    db.pragma(`busy_timeout = ${settings.busyTimeoutMs}`);
    if (!db.readonly) {
      switchToWal(db, settings.busyTimeoutMs);
      db.pragma(`synchronous = ${settings.durability === "power" ? "FULL" : "NORMAL"}`);
      // SQLite's own default page cache (2 MB), not the 16 MB better-sqlite3 builds in: the step
      // log's hot pages are few (the table's end, index ends, live runs), and an embedded store
      // should not hold 16 MB of an app's memory per open file. `pragmas` can raise it.
      db.pragma(`cache_size = ${DEFAULT_CACHE_SIZE}`);
      db.pragma("secure_delete = FAST");
      for (const [name, value] of settings.extraPragmas) db.pragma(`${name} = ${value}`);
      migrate(db, location);
    } else if (schemaVersion(db) < SCHEMA_VERSION) {
      throw new StoreReadOnlyError(location, "its schema needs an upgrade, which is a write");
    }
  } catch (error) {
    db.close();
    if (opened.snapshot) dropSnapshot(opened.snapshot);
    opened.snapshot = undefined;
    const code = sqliteCode(error);
    if (error instanceof SteplogError || UNREADABLE_CODES.has(code)) throw error instanceof SteplogError ? error : unreadable(location, error);
    throw writeFailed(location, error, "the store's schema", undefined, { maybeRecorded: false });
  }
  return db;
}

/** Note which file is open now, for checkStillThere. */
export function recordIdentity(settings: SqliteSettings, opened: OpenedFile): void {
  const stat = fs.statSync(settings.file);
  opened.identity = { dev: stat.dev, ino: stat.ino };
}

/**
 * Refuse when the file this store has open is no longer the one at its path (deleted by
 * `rm -rf .steplog` or `git clean`, or replaced): SQLite would go on writing to the unlinked
 * file, and every record would vanish with the process. Checked where a run starts or is
 * claimed, by commands, and at each lease renewal (so a running attempt stops within leaseMs);
 * the queued ones (starts, renewals) once per batch, as their writes share its commit.
 */
export function checkStillThere(settings: SqliteSettings, opened: OpenedFile, runId: string | undefined): void {
  const id = opened.identity;
  if (!id) return;
  const now = fs.statSync(settings.file, { throwIfNoEntry: false });
  if (now && now.dev === id.dev && now.ino === id.ino) return;
  throw new StoreFileGoneError(settings.location, now ? "replaced by another file" : "deleted", runId);
}

/** Refuse a write on a connection that is read-only, saying why it is. */
export function checkWritable(settings: SqliteSettings, opened: OpenedFile, db: Db, runId: string): void {
  if (db.readonly) {
    throw new StoreReadOnlyError(
      settings.location,
      settings.readonly ? "opened with readonly: true" : (opened.readOnlyWhy ?? "the file or its folder is not writable by this user"),
      runId,
    );
  }
}

/**
 * The connection: read-only where this user cannot write the file or its folder (a read-only
 * mount, another user's folder or file), so every write is refused up front naming the cause.
 * Where the folder cannot be written, SQLite reads in place only if the -wal and -shm are there
 * (another process has the store open, or one was killed): it must make them otherwise, so the
 * store is read from a private snapshot copy instead (see snapshot.ts). Even a file this user
 * may write is not written there: SQLite could not make its -wal.
 */
function connect(settings: SqliteSettings, opened: OpenedFile, driver: SqliteDriver): Db {
  const cause = readOnlyCause(settings.file);
  opened.readOnlyWhy = cause?.why;
  const direct = driver.open(settings.file, settings.readonly || cause !== undefined);
  try {
    direct.prepare("SELECT 1 FROM sqlite_master LIMIT 1").get();
    return direct;
  } catch (error) {
    direct.close();
    const code = sqliteCode(error);
    // What SQLite answers when it cannot make the -wal or -shm (SQLITE_CANTOPEN, SQLITE_READONLY_DIRECTORY, …).
    if (!cause?.folder || !(code.startsWith("SQLITE_CANTOPEN") || code.startsWith("SQLITE_READONLY"))) throw error;
    opened.snapshot = takeSnapshot(settings.file, settings.location);
    return driver.open(opened.snapshot.copy, true);
  }
}

/** Read-only probe before any pragma that writes: a foreign or broken file is never touched. */
function checkReadable(db: Db, location: string): void {
  const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((t) => t.name);
  if (tables.length === 0) return;
  if (!tables.includes("meta")) {
    throw new StoreUnreadableError(location, `it holds tables ${tables.slice(0, 5).join(", ")} but no steplog schema`);
  }
  const found = schemaVersion(db);
  if (found > SCHEMA_VERSION) throw new StoreTooNewError(location, found, SCHEMA_VERSION);
}

const napping = new Int32Array(new SharedArrayBuffer(4));

/**
 * PRAGMA journal_mode = WAL on a new file answers SQLITE_BUSY at once, without waiting out
 * busy_timeout, while another process holds its write lock in the old journal mode (a worker
 * started beside this one, making the same store): asked again until busyTimeoutMs has passed.
 */
function switchToWal(db: Db, busyTimeoutMs: number): void {
  const deadline = Date.now() + busyTimeoutMs;
  for (;;) {
    try {
      db.pragma("journal_mode = WAL");
      return;
    } catch (error) {
      if (!sqliteCode(error).startsWith("SQLITE_BUSY") || Date.now() >= deadline) throw error;
      Atomics.wait(napping, 0, 0, 10); // a synchronous nap: opening the store is synchronous
    }
  }
}

function schemaVersion(db: Db): number {
  const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
  if (!hasMeta) return 0;
  const row = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string } | undefined;
  return row ? Number(row.value) : 0;
}

function migrate(db: Db, location: string): void {
  db.transaction(() => {
    // Re-read inside the write transaction: another process may have migrated meanwhile.
    const current = schemaVersion(db);
    if (current > SCHEMA_VERSION) throw new StoreTooNewError(location, current, SCHEMA_VERSION);
    for (let v = current; v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v]!);
    if (current < SCHEMA_VERSION) {
      // Crash tests stop here: every migration applied, nothing committed.
      fault("during-migration", String(SCHEMA_VERSION));
      db.prepare("INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(
        String(SCHEMA_VERSION),
      );
    }
  }).immediate();
}

/** SqliteStore.pragmas(): the open connection's settings. */
export function connectionPragmas(db: Db) {
  return {
    driver: db.driver,
    journalMode: String(db.pragma("journal_mode")),
    synchronous: Number(db.pragma("synchronous")),
    busyTimeoutMs: Number(db.pragma("busy_timeout")),
    cacheSize: Number(db.pragma("cache_size")),
  };
}
