/**
 * Reads of the JSONL store. They take no lock: they consume only complete lines. Each line is
 * a whole transaction, so any prefix of complete lines is a state the store was really in; a
 * half-written last line is never consumed. So a read never waits behind writers or a dead
 * process's stale lock, and works where the folder is not writable. (Under "power" a read may
 * see a line a moment before its writer's fsync returns — as any reader of a file can.)
 */

import { warnIfShared } from "../owner-only-files.js";
import fs from "node:fs";
import { SteplogError, StoreUnreadableError } from "../../base/errors.js";
import type { Journal } from "./journal.js";
import type { FileLock } from "./lock.js";
import type { JournalState } from "./records.js";
import type { Warnings } from "./warnings.js";

export interface ReaderSetup {
  file: string;
  location: string;
  journal: Journal;
  lock: FileLock;
  /** For the permissions warning, told once by the first read that opens the file. */
  warn: (message: string) => void;
  warnings: Warnings;
}

export class Reader {
  readonly #file: string;
  readonly #location: string;
  readonly #journal: Journal;
  readonly #lock: FileLock;
  readonly #warn: (message: string) => void;
  readonly #warnings: Warnings;
  #permissionsChecked = false;

  constructor(setup: ReaderSetup) {
    this.#file = setup.file;
    this.#location = setup.location;
    this.#journal = setup.journal;
    this.#lock = setup.lock;
    this.#warn = setup.warn;
    this.#warnings = setup.warnings;
  }

  /** `answer` from the state caught up to the file's complete lines; `missing` when there is no file. */
  read<T>(answer: (state: JournalState) => T, missing: T): T {
    try {
      return this.#readOnce(answer, missing);
    } catch (error) {
      // Without the lock, a read racing a writer that cuts off a torn tail could see a mix of
      // old and new bytes. Damage is still there when read again from the start; a race is not.
      if (!(error instanceof StoreUnreadableError)) throw error;
      return this.#readOnce(answer, missing);
    }
  }

  #readOnce<T>(answer: (state: JournalState) => T, missing: T): T {
    let fd: number;
    try {
      fd = fs.openSync(this.#file, "r");
      if (!this.#permissionsChecked) {
        this.#permissionsChecked = true;
        warnIfShared(this.#file, this.#location, this.#warn);
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        this.#journal.reset();
        return missing;
      }
      throw new StoreUnreadableError(this.#location, error instanceof Error ? error.message : String(error), error);
    }
    try {
      const { tail, size } = this.#journal.catchUp(fd);
      // Without the lock a tail may be an append in progress; it is torn only if nobody holds the lock and it stays put.
      if (tail && !this.#lock.heldElsewhere() && fs.fstatSync(fd).size === size) this.#warnings.torn(tail);
      return answer(this.#journal.state);
    } catch (error) {
      if (error instanceof SteplogError) throw error;
      throw new StoreUnreadableError(this.#location, error instanceof Error ? error.message : String(error), error);
    } finally {
      fs.closeSync(fd);
    }
  }
}
