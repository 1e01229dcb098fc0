/**
 * Group commit of the JSONL store's writes (every Store method but loadRun and listRuns).
 * Writes are queued; those issued in the same turn of the event loop share one commit: take
 * the lock → catch up → decide and validate each write alone against the caught-up state (a
 * stale fence refuses just that write) → append the accepted lines in one write → fsync
 * (durability "power") → let go. No write's promise settles before its commit does.
 *
 * A lock found not to be ours alone (the file grew under it, proper-lockfile saw it taken
 * over) fails the instance closed: it writes nothing more. Closing commits what is pending
 * first, then refuses every later call.
 */

import { createOwnerOnlyFile } from "../owner-only-files.js";
import fs from "node:fs";
import { SteplogError, StoreReadOnlyError, StoreWriteFailedError, StoreClosedError } from "../../base/errors.js";
import type { Journal } from "./journal.js";
import type { FileLock } from "./lock.js";
import { apply, HEADER_LINE, type JournalRecord, type JournalState } from "./records.js";
import type { Warnings } from "./warnings.js";

const NOT_WRITABLE_CODES = new Set(["EACCES", "EPERM", "EROFS"]);

export type Outcome = { ok: unknown } | { error: unknown };

/** What a write does, decided under the lock against the caught-up state. */
export type Prepared = { record: JournalRecord; settle: (state: JournalState) => Outcome } | Outcome;

/** What a run update is called: it is a command, as a new run is (see Op.command). */
export const UPDATE = "the run update";

interface Op {
  what: string;
  runId: string;
  /** Only createRun makes a missing file; every other write finds nothing there. */
  creates: boolean;
  /** A new run, or a run update outside any attempt (send, cancel, …): for the error's advice. */
  command?: boolean;
  /** Its write is a line of the batch being committed. */
  hasLine?: boolean;
  /** Set once that line began to be written: from then on a failure may have recorded it. */
  appendStarted?: boolean;
  prepare: (state: JournalState) => Prepared;
  resolve: (value: any) => void;
  reject: (error: unknown) => void;
}

export interface WriteQueueSetup {
  file: string;
  location: string;
  durability: "power" | "process";
  lockWaitMs: number;
  journal: Journal;
  lock: FileLock;
  warnings: Warnings;
}

export class WriteQueue {
  readonly #file: string;
  readonly #location: string;
  readonly #durability: "power" | "process";
  readonly #lockWaitMs: number;
  readonly #journal: Journal;
  readonly #lock: FileLock;
  readonly #warnings: Warnings;
  #pending: Op[] = [];
  #scheduled = false;
  #draining: Promise<void> | undefined;
  /** Set once the lock proved not exclusive: from then on this instance writes nothing. */
  #compromised: Error | undefined;
  #closed = false;

  constructor(setup: WriteQueueSetup) {
    this.#file = setup.file;
    this.#location = setup.location;
    this.#durability = setup.durability;
    this.#lockWaitMs = setup.lockWaitMs;
    this.#journal = setup.journal;
    this.#lock = setup.lock;
    this.#warnings = setup.warnings;
  }

  enqueue<T>(what: string, runId: string, creates: boolean, prepare: (state: JournalState) => Prepared): Promise<T> {
    if (this.#closed) return Promise.reject(this.#closedError());
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ what, runId, creates, command: what === UPDATE || creates, prepare, resolve, reject });
      this.#schedule();
    });
  }

  /** Commit at the end of this turn, so everything issued in it shares the commit. */
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      void this.#drain();
    });
  }

  /** One commit at a time, in order; writes issued while one waits for the lock form the next. */
  #drain(): Promise<void> {
    this.#draining ??= (async () => {
      while (this.#pending.length > 0) await this.#commit(this.#pending.splice(0));
    })().finally(() => {
      this.#draining = undefined;
      if (this.#pending.length > 0) this.#schedule();
    });
    return this.#draining;
  }

  async #commit(batch: Op[]): Promise<void> {
    let outcomes: Outcome[];
    try {
      if (this.#compromised) throw this.#compromised;
      if (!fs.existsSync(this.#file)) {
        if (!batch.some((op) => op.creates)) {
          // No file, no runs: every write finds nothing, and nothing is created.
          this.#journal.reset();
          outcomes = this.#decide(batch, new Map()).outcomes;
          this.#settle(batch, outcomes);
          return;
        }
        this.#createFile();
      }
      outcomes = await this.#lock.run(() => this.#commitLocked(batch), this.#lockWaitMs);
    } catch (error) {
      for (const op of batch) op.reject(this.#writeError(error, op));
      return;
    }
    this.#settle(batch, outcomes);
  }

  #settle(batch: Op[], outcomes: Outcome[]): void {
    batch.forEach((op, i) => {
      const outcome = outcomes[i]!;
      if ("ok" in outcome) op.resolve(outcome.ok);
      else op.reject(outcome.error);
    });
  }

  /** Decide every write alone, in order, applying the accepted ones to `state`. */
  #decide(batch: Op[], state: JournalState): { outcomes: Outcome[]; lines: string[] } {
    const lines: string[] = [];
    const outcomes = batch.map((op): Outcome => {
      let prepared: Prepared;
      try {
        prepared = op.prepare(state);
      } catch (error) {
        return { error };
      }
      if (!("record" in prepared)) return prepared;
      const line = JSON.stringify(prepared.record);
      // Applied as a reader will parse it, so this state and any replay agree to the bit.
      const refused = apply(state, JSON.parse(line) as JournalRecord);
      if (refused) return { error: refused };
      lines.push(line);
      op.hasLine = true;
      return prepared.settle(state);
    });
    return { outcomes, lines };
  }

  /** Runs under the lock, synchronously from start to end. */
  #commitLocked(batch: Op[]): Outcome[] {
    const fd = fs.openSync(this.#file, fs.constants.O_RDWR | fs.constants.O_APPEND);
    try {
      const journal = this.#journal;
      const { tail, size } = journal.catchUp(fd);
      // We hold the lock, so no append is in progress: a tail is a torn write.
      if (tail) this.#warnings.torn(tail);
      try {
        const { outcomes, lines } = this.#decide(batch, journal.state);
        if (lines.length === 0) return outcomes;
        if (!journal.hasHeader) lines.unshift(HEADER_LINE);
        // Nobody may have written since we caught up: if someone did, the lock was not ours alone.
        if (fs.fstatSync(fd).size !== size) throw this.failClosed("the file grew while this process held its lock");
        // A torn tail is cut off, never glued to: the next line starts where the last complete one ends.
        const start = tail ? tail.offset : size;
        if (tail) fs.ftruncateSync(fd, start);
        const data = Buffer.from(lines.join("\n") + "\n");
        for (const op of batch) op.appendStarted = op.hasLine === true;
        this.#append(fd, data, start);
        if (fs.fstatSync(fd).size !== start + data.length) throw this.failClosed("another process appended while this one held the lock");
        if (this.#durability === "power") fs.fsyncSync(fd);
        journal.offset = start + data.length;
        journal.lines += lines.length;
        return outcomes;
      } catch (error) {
        // The decided state may not be the file's: read it again from the start next time.
        journal.reset();
        throw error;
      }
    } finally {
      fs.closeSync(fd);
    }
  }

  /** Write all of `data`; on failure cut off the part-line written (we hold the lock), so no torn line is left. */
  #append(fd: number, data: Buffer, start: number): void {
    let written = 0;
    try {
      while (written < data.length) written += fs.writeSync(fd, data, written, data.length - written);
    } catch (error) {
      const complete = data.subarray(0, written).lastIndexOf(0x0a) + 1;
      try {
        fs.ftruncateSync(fd, start + complete);
      } catch {
        // The next writer cuts it off as a torn line.
      }
      throw error;
    }
  }

  /** The header is written under the lock with the first record; the new name is made durable here. */
  #createFile(): void {
    createOwnerOnlyFile(this.#file);
  }

  /** Fail closed: this instance refuses every later write (reads go on). */
  failClosed(reason: string): Error {
    const error = new Error(`its lock ${this.#file}.lock was compromised (${reason}), so this store instance records nothing more; open a new store to go on`);
    this.#compromised ??= error;
    this.#warnings.once("compromised", `${this.#location}: ${error.message}.`);
    return error;
  }

  #writeError(error: unknown, op: Op): SteplogError {
    if (error instanceof SteplogError) return error;
    const code = (error as { code?: string }).code ?? "";
    if (NOT_WRITABLE_CODES.has(code)) {
      return new StoreReadOnlyError(this.#location, `${code}: the file, its folder or its lock is not writable by this user`, op.runId);
    }
    // Once the batch's lines began to be written (a full disk mid-append, a failed fsync), a
    // command's line may be in the file all the same.
    const command = op.command ? { maybeRecorded: op.appendStarted === true } : undefined;
    return new StoreWriteFailedError(this.#location, op.what, { cause: error instanceof Error ? error : new Error(String(error)), runId: op.runId }, command);
  }

  /** A read sees this instance's own earlier writes. */
  async writesDone(): Promise<void> {
    if (this.#closed) throw this.#closedError();
    if (this.#pending.length > 0 || this.#draining) await this.#drain();
  }

  #closedError(): SteplogError {
    return new StoreClosedError(this.#location, "this call");
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    // Pending writes are committed first, as their callers were promised.
    if (this.#pending.length > 0 || this.#draining) await this.#drain();
    this.#closed = true;
  }
}
