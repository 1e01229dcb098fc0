/**
 * What a failure of SQLite (through any driver) or of the file system means for the SQLite
 * store, as steplog's own errors. Kept in one place so every path maps the same code the same
 * way: a broken or foreign file is STORE_UNREADABLE (restore from a backup), a folder or file
 * this user may not write is STORE_READ_ONLY, and any other failed write is STORE_WRITE_FAILED,
 * saying whether the command may have been recorded. (A driver that does not load is
 * STORE_DRIVER_FAILED: drivers/load.ts.)
 */

import fs from "node:fs";
import path from "node:path";
import { StoreReadOnlyError, StoreUnreadableError, StoreWriteFailedError, SteplogError } from "../../base/errors.js";

export const UNREADABLE_CODES = new Set(["SQLITE_NOTADB", "SQLITE_CORRUPT", "SQLITE_CANTOPEN"]);
/** What creating a file or folder answers where this process may not write. */
const NOT_WRITABLE_CODES = new Set(["EACCES", "EPERM", "EROFS"]);

/** What a new run's write is called in errors (and how writeFailed knows one). */
export const NEW_RUN = "the new run";

/** SQLite's primary result codes by number (node:sqlite reports the number; better-sqlite3 and bun:sqlite the name). */
const PRIMARY_CODES = [
  "OK",
  "ERROR",
  "INTERNAL",
  "PERM",
  "ABORT",
  "BUSY",
  "LOCKED",
  "NOMEM",
  "READONLY",
  "INTERRUPT",
  "IOERR",
  "CORRUPT",
  "NOTFOUND",
  "FULL",
  "CANTOPEN",
  "PROTOCOL",
  "EMPTY",
  "SCHEMA",
  "TOOBIG",
  "CONSTRAINT",
  "MISMATCH",
  "MISUSE",
  "NOLFS",
  "AUTH",
  "FORMAT",
  "RANGE",
  "NOTADB",
];
/** The extended codes this store tells apart (the rest are named by their primary code). */
const EXTENDED_CODES: Record<number, string> = {
  261: "BUSY_RECOVERY",
  517: "BUSY_SNAPSHOT",
  773: "BUSY_TIMEOUT",
  264: "READONLY_RECOVERY",
  520: "READONLY_CANTLOCK",
  776: "READONLY_ROLLBACK",
  1032: "READONLY_DBMOVED",
  1288: "READONLY_CANTINIT",
  1544: "READONLY_DIRECTORY",
  270: "CANTOPEN_NOTEMPDIR",
  526: "CANTOPEN_ISDIR",
  782: "CANTOPEN_FULLPATH",
  1038: "CANTOPEN_CONVPATH",
  1294: "CANTOPEN_DIRTYWAL",
  1550: "CANTOPEN_SYMLINK",
  2067: "CONSTRAINT_UNIQUE",
  1555: "CONSTRAINT_PRIMARYKEY",
  1299: "CONSTRAINT_NOTNULL",
  275: "CONSTRAINT_CHECK",
};

/**
 * SQLite's code for a failure (`SQLITE_BUSY`, `SQLITE_READONLY_DIRECTORY`), whichever driver
 * threw it, or "" when it is not SQLite's.
 */
export function sqliteCode(error: unknown): string {
  const { code, errcode } = (error ?? {}) as { code?: unknown; errcode?: unknown };
  if (typeof code === "string" && code.startsWith("SQLITE_")) return code;
  if (typeof errcode !== "number") return "";
  const name = EXTENDED_CODES[errcode] ?? PRIMARY_CODES[errcode & 0xff];
  return name === undefined ? "" : `SQLITE_${name}`;
}

/** The not-writable code behind a failure to create `dir` (or a file in it), if that is what it was. */
export function notWritable(error: unknown, dir: string): string | undefined {
  const code = (error as NodeJS.ErrnoException).code ?? "";
  if (NOT_WRITABLE_CODES.has(code)) return code;
  if (code !== "ENOENT") return undefined;
  let existing = dir;
  while (!fs.existsSync(existing) && path.dirname(existing) !== existing) existing = path.dirname(existing);
  return deniedWrite(existing);
}

/** Why this user cannot write the store where it lies (its folder first, then the file), if it cannot: what a refused write names. */
export function readOnlyCause(file: string): { why: string; folder: boolean } | undefined {
  const dir = path.dirname(file);
  const folder = deniedWrite(dir);
  const own = deniedWrite(file);
  if (folder === "EROFS" || own === "EROFS") return { why: "it lies on a read-only file system", folder: folder !== undefined };
  const fileWhy = own && `the file is not writable by this user (${own}; ${ownerAndMode(file)})`;
  if (!folder) return fileWhy ? { why: fileWhy, folder: false } : undefined;
  const folderWhy = `its folder ${dir} is not writable by this user (${folder}; ${ownerAndMode(dir)}): SQLite must make its -wal and -shm files there`;
  return { why: fileWhy ? `${folderWhy}; ${fileWhy.replace("not writable", "not writable either")}` : folderWhy, folder: true };
}

/** The code access(2) answers when this user may not write `file`, if that is what it answers. */
function deniedWrite(file: string): string | undefined {
  try {
    fs.accessSync(file, fs.constants.W_OK);
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "";
    return NOT_WRITABLE_CODES.has(code) ? code : undefined;
  }
}

/** `owned by uid 0, mode 755`: what tells the operator whom to ask. */
export function ownerAndMode(file: string): string {
  const stat = fs.statSync(file);
  return `owned by uid ${stat.uid}, mode ${(stat.mode & 0o777).toString(8).padStart(3, "0")}`;
}

/** The store's file when this user may not read it: nothing is wrong with it, so not "restore it from a backup". */
export function unreadableByThisUser(location: string, file: string, cause: unknown): SteplogError | undefined {
  try {
    fs.accessSync(file, fs.constants.R_OK);
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "";
    if (code !== "EACCES" && code !== "EPERM") return undefined;
    return new StoreUnreadableError(
      location,
      `this user may not read it (${code}; ${ownerAndMode(file)})`,
      cause,
      false,
      "Nothing is wrong with it: read it as a user who may (its owner), or have them make it readable to you.",
    );
  }
}

export function unreadable(location: string, error: unknown): SteplogError {
  const code = sqliteCode(error);
  const reason = error instanceof Error ? error.message : String(error);
  return new StoreUnreadableError(location, UNREADABLE_CODES.has(code) ? `${code}: ${reason}` : reason, error);
}

export function writeFailed(location: string, error: unknown, what: string, runId: string | undefined, command?: { maybeRecorded: boolean }): SteplogError {
  // A new run that could not be inserted: rolled back with its batch or its savepoint.
  if (what === NEW_RUN) command = { maybeRecorded: false };
  if (error instanceof SteplogError) return error;
  const code = sqliteCode(error);
  if (UNREADABLE_CODES.has(code)) return unreadable(location, error);
  if (code.startsWith("SQLITE_READONLY")) {
    return new StoreReadOnlyError(location, `${code}: the file or its folder is not writable by this user`, runId);
  }
  return new StoreWriteFailedError(location, what, { cause: error, ...(runId === undefined ? {} : { runId }) }, command);
}

/** Run a read: a broken file is reported as STORE_UNREADABLE, anything else as it is. */
export function reading<T>(location: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof SteplogError) throw error;
    const code = sqliteCode(error);
    if (UNREADABLE_CODES.has(code)) throw unreadable(location, error);
    throw error;
  }
}
