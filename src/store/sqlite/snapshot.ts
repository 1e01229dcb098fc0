/**
 * Reading a SQLite store through a private copy, where this user cannot write its folder and
 * SQLite cannot read it in place: a read-only connection needs the -wal and -shm beside the
 * file, and only finds them there while another process has it open (or one was killed). The
 * copy takes the -wal with the file, so steps committed but not yet folded into the file are
 * read, and a -wal this user may not read is refused rather than skipped. The copy is taken
 * again whenever the file or its -wal changes, so a reader that stays open is never answered
 * from a stale one. (better-sqlite3 is built without URI file names, so SQLite's `immutable=1`,
 * which would read the file in place, cannot be asked for; every driver reads the copy alike.)
 */

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { StoreUnreadableError } from "../../base/errors.js";
import { ownerAndMode } from "./failures.js";

/** A -wal no longer than its header holds no frame: nothing the file lacks. */
const WAL_HEADER_BYTES = 32;

/** Copies tried while the file keeps changing under the copy (another process writing it) before giving up. */
const TRIES = 3;

/** A private copy of the store: its folder, the copied file, and the state of the store it was copied from. */
export interface Snapshot {
  readonly dir: string;
  readonly copy: string;
  readonly of: string;
}

/** Copy the store (and its -wal, if it holds frames) into a private folder. */
export function takeSnapshot(file: string, location: string): Snapshot {
  const wal = `${file}-wal`;
  for (let tries = 0; tries < TRIES; tries++) {
    const before = fileState(file);
    let dir: string;
    try {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "steplog-readonly-"));
    } catch (error) {
      throw new StoreUnreadableError(
        location,
        `this user cannot write its folder, so it is read from a private copy, which could not be made in ${os.tmpdir()} (${(error as Error).message})`,
        error,
        false,
        "Point TMPDIR at a folder this user can write, or read it as a user who can write its folder.",
      );
    }
    const snapshot: Snapshot = { dir, copy: path.join(dir, path.basename(file)), of: before };
    try {
      fs.copyFileSync(file, snapshot.copy);
      fs.chmodSync(snapshot.copy, 0o600);
      if ((fs.statSync(wal, { throwIfNoEntry: false })?.size ?? 0) > WAL_HEADER_BYTES) copyWal(location, wal, `${snapshot.copy}-wal`);
    } catch (error) {
      dropSnapshot(snapshot);
      throw error;
    }
    // Nothing changed while copying: the copy is one state of the store, not pages of two.
    if (fileState(file) === before) return snapshot;
    dropSnapshot(snapshot);
  }
  throw new StoreUnreadableError(
    location,
    `it changed each time it was copied to be read (another process is writing it, and this user cannot write its folder to read it in place)`,
    undefined,
    false,
    "Try again, or read it as a user who can write its folder.",
  );
}

/** The -wal is part of the store: a read without it would miss committed steps, so one this user may not read is refused. */
function copyWal(location: string, wal: string, to: string): void {
  try {
    fs.copyFileSync(wal, to);
    fs.chmodSync(to, 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "";
    if (code !== "EACCES" && code !== "EPERM") throw error;
    throw new StoreUnreadableError(
      location,
      `its -wal file ${wal} may hold steps not yet in the file, and this user may not read it (${code}; ${ownerAndMode(wal)})`,
      error,
      false,
      "Nothing is wrong with it, but the file alone would miss those steps, so it is not read without it: read it as a user who may (its owner), or have them make the -wal readable to you.",
    );
  }
}

/** True when the store has changed since the copy was taken. */
export function snapshotStale(file: string, snapshot: Snapshot): boolean {
  return fileState(file) !== snapshot.of;
}

/** Remove the private copy (on close, or before taking a fresh one). */
export function dropSnapshot(snapshot: Snapshot): void {
  fs.rmSync(snapshot.dir, { recursive: true, force: true });
}

/** The file and its -wal as the file system sees them: any write changes one of them. */
function fileState(file: string): string {
  return [file, `${file}-wal`]
    .map((f) => {
      const s = fs.statSync(f, { bigint: true, throwIfNoEntry: false });
      return s ? `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}` : "none";
    })
    .join("/");
}
