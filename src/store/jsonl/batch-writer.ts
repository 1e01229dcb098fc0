/**
 * How the JSONL store writes a batch of its writes (every Store method but the reads;
 * group-commit.ts queues them, batches those issued in the same turn of the event loop, and
 * settles them): take the lock → catch up → decide and validate each write alone against the
 * caught-up state (a stale fence refuses just that write) → append the accepted lines in one
 * write → fsync (durability "power") → let go.
 *
 * A lock found not to be ours alone (the file grew under it, proper-lockfile saw it taken
 * over) fails the instance closed: it writes nothing more.
 */

import { createOwnerOnlyFile } from "../owner-only-files.js";
import fs from "node:fs";
import { SteplogError, StoreReadOnlyError, StoreWriteFailedError } from "../../base/errors.js";
import type { BatchWriter, QueuedWrite } from "../group-commit.js";
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

/** A queued write: `a` decides it under the lock, `b` names it; `op` is CREATES for a write that makes a missing file. */
export type Op = QueuedWrite<(state: JournalState) => Prepared, string>;

/** Only createRun makes a missing file (op CREATES); every other write (op 0) finds nothing there. */
export const CREATES = 1;

/** A new run, or a run update outside any attempt (send, cancel, …): for the error's advice. */
const isCommand = (op: Op): boolean => op.b === UPDATE || op.op === CREATES;

export interface WriteQueueSetup {
  file: string;
  location: string;
  durability: "power" | "process";
  lockWaitMs: number;
  journal: Journal;
  lock: FileLock;
  warnings: Warnings;
}

export class JsonlBatchWriter implements BatchWriter<(state: JournalState) => Prepared, string> {
  readonly sync = false;
  readonly #file: string;
  readonly #location: string;
  readonly #durability: "power" | "process";
  readonly #lockWaitMs: number;
  readonly #journal: Journal;
  readonly #lock: FileLock;
  readonly #warnings: Warnings;
  /** Set once the lock proved not exclusive: from then on this instance writes nothing. */
  #compromised: Error | undefined;
  /** The batch's writes that have a line in it, and (once the lines began to be written: a failure may have recorded them) were appended. */
  #hasLine = new Set<Op>();
  #appendStarted = new Set<Op>();

  constructor(setup: WriteQueueSetup) {
    this.#file = setup.file;
    this.#location = setup.location;
    this.#durability = setup.durability;
    this.#lockWaitMs = setup.lockWaitMs;
    this.#journal = setup.journal;
    this.#lock = setup.lock;
    this.#warnings = setup.warnings;
  }

  async write(batch: Op[]): Promise<void> {
    this.#hasLine.clear();
    this.#appendStarted.clear();
    if (this.#compromised) throw this.#compromised;
    let outcomes: Outcome[];
    if (!fs.existsSync(this.#file)) {
      if (!batch.some((op) => op.op === CREATES)) {
        // No file, no runs: every write finds nothing, and nothing is created.
        this.#journal.reset();
        outcomes = this.#decide(batch, new Map()).outcomes;
        settle(batch, outcomes);
        return;
      }
      this.#createFile();
    }
    outcomes = await this.#lock.run(() => this.#commitLocked(batch), this.#lockWaitMs);
    settle(batch, outcomes);
  }

  /** Decide every write alone, in order, applying the accepted ones to `state`. */
  #decide(batch: Op[], state: JournalState): { outcomes: Outcome[]; lines: string[] } {
    const lines: string[] = [];
    const outcomes = batch.map((op): Outcome => {
      let prepared: Prepared;
      try {
        prepared = op.a(state);
      } catch (error) {
        return { error };
      }
      if (!("record" in prepared)) return prepared;
      const line = JSON.stringify(prepared.record);
      // Applied as a reader will parse it, so this state and any replay agree to the bit.
      const refused = apply(state, JSON.parse(line) as JournalRecord);
      if (refused) return { error: refused };
      lines.push(line);
      this.#hasLine.add(op);
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
        for (const op of this.#hasLine) this.#appendStarted.add(op);
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

  /** The error each write of a batch that failed as a whole is rejected with. */
  failed(error: unknown, op: Op): SteplogError {
    if (error instanceof SteplogError) return error;
    const code = (error as { code?: string }).code ?? "";
    if (NOT_WRITABLE_CODES.has(code)) {
      return new StoreReadOnlyError(this.#location, `${code}: the file, its folder or its lock is not writable by this user`, op.runId);
    }
    // Once the batch's lines began to be written (a full disk mid-append, a failed fsync), a
    // command's line may be in the file all the same.
    const command = isCommand(op) ? { maybeRecorded: this.#appendStarted.has(op) } : undefined;
    return new StoreWriteFailedError(this.#location, op.b, { cause: error instanceof Error ? error : new Error(String(error)), runId: op.runId }, command);
  }
}

/** Each write's outcome as its result, or as its refusal. */
function settle(batch: Op[], outcomes: Outcome[]): void {
  batch.forEach((op, i) => {
    const outcome = outcomes[i]!;
    if ("ok" in outcome) op.result = outcome.ok;
    else op.refused = outcome.error;
  });
}
