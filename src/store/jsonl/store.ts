/**
 * The JSONL store: one append-only file, one JSON record a line (see records.ts), for users
 * who want a plain, greppable journal. The file is the truth; each instance keeps a replay of
 * it in memory and catches up with what other processes appended before every read and write.
 *
 * Writes (every Store method but loadRun and listRuns) are queued; those issued in the same
 * turn of the event loop share one commit (group commit): take the lock → catch up → decide
 * and validate each write alone against the caught-up state (a stale fence refuses just that
 * write) → append the accepted lines in one write → fsync (durability "power") → let go.
 * No write's promise settles before its commit does.
 *
 * Reads take no lock: they consume only complete lines. Each line is a whole transaction, so
 * any prefix of complete lines is a state the store was really in; a half-written last line
 * is never consumed. So a read never waits behind writers or a dead process's stale lock, and
 * works where the folder is not writable. (Under "power" a read may see a line a moment before
 * its writer's fsync returns — as any reader of a file can.)
 */

import { createOwnerOnlyFile, warnIfShared } from "../owner-only-files.js";
import fs from "node:fs";
import path from "node:path";
import { InvalidOptionError, SteplogError, StoreReadOnlyError, StoreUnreadableError, StoreWriteFailedError, StoreClosedError } from "../../base/errors.js";
import type {
  AttemptEnd,
  AttemptRow,
  ClaimJudge,
  ClaimResult,
  Fence,
  Lease,
  RunFilter,
  RunListing,
  RunRow,
  RunUpdate,
  StepOutcome,
  StepRow,
  Store,
  StoredRun,
} from "../types.js";
import { Journal, type Tail } from "./journal.js";
import { FileLock, MIN_LOCK_STALE_MS } from "./lock.js";
import { apply, HEADER_LINE, type JournalRecord, type JournalState } from "./records.js";
import { claimVerdict, RunStates } from "../state-machine.js";
import { canonicalPath } from "../canonical-path.js";
import { checkKnownKeys, type KnownKeys } from "../../base/options.js";

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

/** A Store on one JSONL file. */
export interface JsonlStore extends Store {
  readonly path: string;
  /** `jsonl:` and the file's path with symlinks resolved. */
  storageId(): Promise<string>;
}

export function jsonlStore(options: JsonlStoreOptions): JsonlStore {
  return new JsonlStoreImpl(options);
}

const DEFAULT_LOCK_STALE_MS = 10_000;
const JSONL_KEYS: KnownKeys<JsonlStoreOptions> = { path: true, durability: true, lockStaleMs: true, onWarning: true };
/** How much longer than the stale time a writer waits for the lock: enough to take over a dead holder's. */
const LOCK_WAIT_MARGIN_MS = 5_000;
const NOT_WRITABLE_CODES = new Set(["EACCES", "EPERM", "EROFS"]);

type Outcome = { ok: unknown } | { error: unknown };

/** What a write does, decided under the lock against the caught-up state. */
type Prepared =
  | { record: JournalRecord; settle: (state: JournalState) => Outcome }
  | Outcome;

const UPDATE = "the run update";

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

class JsonlStoreImpl implements JsonlStore {
  readonly kind = "jsonl";
  readonly durable = true;
  readonly multiProcess = true;
  readonly location: string;
  readonly #file: string;
  #storageId: string | undefined;
  readonly #durability: "power" | "process";
  readonly #lockWaitMs: number;
  readonly #warn: (message: string) => void;
  readonly #warned = new Set<string>();
  #permissionsChecked = false;
  readonly #journal: Journal;
  readonly #lock: FileLock;
  #pending: Op[] = [];
  #scheduled = false;
  #draining: Promise<void> | undefined;
  /** Set once the lock proved not exclusive: from then on this instance writes nothing. */
  #compromised: Error | undefined;
  #closed = false;

  constructor(options: JsonlStoreOptions) {
    checkKnownKeys("jsonlStore", options, JSONL_KEYS);
    if (typeof options?.path !== "string" || options.path === "") throw new InvalidOptionError("jsonlStore: path must name the journal file, e.g. { path: \".steplog/steplog.jsonl\" }.");
    const durability = options.durability ?? "power";
    if (durability !== "power" && durability !== "process") throw new InvalidOptionError(`jsonlStore: durability must be "power" or "process", got ${JSON.stringify(durability)}.`);
    const staleMs = options.lockStaleMs ?? DEFAULT_LOCK_STALE_MS;
    if (typeof staleMs !== "number" || !Number.isFinite(staleMs) || staleMs < MIN_LOCK_STALE_MS) {
      throw new InvalidOptionError(`jsonlStore: lockStaleMs must be a number of milliseconds ≥ ${MIN_LOCK_STALE_MS} (proper-lockfile's floor), got ${String(staleMs)}.`);
    }
    if (options.onWarning !== undefined && typeof options.onWarning !== "function") throw new InvalidOptionError("jsonlStore: onWarning must be a function of one message.");
    this.#file = path.resolve(options.path);
    this.location = `jsonl store at ${this.#file}`;
    this.#durability = durability;
    this.#lockWaitMs = staleMs + LOCK_WAIT_MARGIN_MS;
    this.#warn = options.onWarning ?? ((message) => process.stderr.write(`steplog: ${message}\n`));
    this.#journal = new Journal(this.location, (line, why) =>
      this.#warnOnce(`skip:${line}`, `${this.location}: line ${line} ignored on replay (${why.message}); it was written by a process that had lost the file lock.`),
    );
    this.#lock = new FileLock(
      this.#file,
      staleMs,
      (error) => void this.#failClosed(`proper-lockfile: ${error.message}`),
      (error) => this.#warnOnce(`release:${String(error)}`, `${this.location}: could not remove the lock ${this.#file}.lock (${error instanceof Error ? error.message : String(error)}); other processes take it over after ${staleMs} ms.`),
    );
  }

  get path(): string {
    return this.#file;
  }

  async storageId(): Promise<string> {
    if (this.#storageId) return this.#storageId;
    const id = `jsonl:${canonicalPath(this.#file)}`;
    // Kept once the file exists: until then a folder on the way may still be created.
    if (fs.existsSync(this.#file)) this.#storageId = id;
    return id;
  }

  // ---- writes ------------------------------------------------------------------------------

  createRun(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Promise<Lease | { exists: RunRow }> {
    return this.#enqueue("the new run", run.id, true, (state) => {
      const existing = state.get(run.id);
      if (existing) return { ok: { exists: structuredClone(existing.run) } };
      return {
        record: { op: "create", run: run.id, row: run, attempt, expiresAt: lease.expiresAt, now: lease.now },
        settle: () => ({ ok: { runId: run.id, epoch: 1, attempt: attempt.number, expiresAt: lease.expiresAt } }),
      };
    });
  }

  claimRun(runId: string, decide: ClaimJudge): Promise<ClaimResult> {
    return this.#enqueue("the new attempt", runId, false, (state) => {
      const current = state.get(runId);
      if (!current) return { ok: { kind: "missing" } };
      const decision = claimVerdict(decide, structuredClone(current));
      if (decision.kind === "refuse") {
        // The refusal's own patch (say, dead-lettering) is committed, then the error thrown.
        if (!hasFields(decision.run)) return { error: decision.error };
        return { record: { op: "update", run: runId, patch: decision.run! }, settle: () => ({ error: decision.error }) };
      }
      const epoch = (current.lease?.epoch ?? 0) + 1;
      const { attempt, expiresAt, now } = decision;
      return {
        record: { op: "claim", run: runId, epoch, attempt, patch: decision.run, expiresAt, now },
        settle: (after) => ({ ok: { kind: "taken", state: structuredClone(after.get(runId)!), lease: { runId, epoch, attempt: attempt.number, expiresAt } } }),
      };
    });
  }

  updateRun<T>(runId: string, decide: (current: StoredRun) => RunUpdate<T>): Promise<T | undefined> {
    return this.#enqueue(UPDATE, runId, false, (state) => {
      const current = state.get(runId);
      if (!current) return { ok: undefined };
      const update = decide(structuredClone(current));
      if (update.error) return { error: update.error };
      const record: JournalRecord = { op: "update", run: runId };
      if (hasFields(update.run)) record.patch = update.run;
      if (update.updateSteps?.length) record.updateSteps = update.updateSteps;
      if (update.appendSteps?.length) record.appendSteps = update.appendSteps;
      if (update.appendEvents?.length) record.appendEvents = update.appendEvents;
      if (update.fenceOut) record.fenceOut = update.fenceOut;
      // Nothing to change: nothing appended (the journal holds changes only).
      if (Object.keys(record).length === 2) return { ok: update.result };
      return { record, settle: () => ({ ok: update.result }) };
    });
  }

  writeIntent(fence: Fence, step: StepRow): Promise<void> {
    return this.#fenced(`the intent of step ${JSON.stringify(step.key)}`, fence, () => ({ op: "intent", run: fence.runId, step: step.key, epoch: fence.epoch, row: step }));
  }

  writeOutcome(fence: Fence, outcome: StepOutcome): Promise<void> {
    return this.#fenced("a step outcome", fence, (state) => ({
      op: "outcome",
      run: fence.runId,
      // The step's key, for grep; the seq is what the record applies to.
      step: state.get(fence.runId)?.steps.find((s) => s.seq === outcome.seq)?.key ?? null,
      epoch: fence.epoch,
      ...outcome,
    }));
  }

  renewLease(fence: Fence, expiresAt: number, now: number): Promise<void> {
    return this.#fenced("the lease renewal", fence, () => ({ op: "renew", run: fence.runId, epoch: fence.epoch, expiresAt, now }));
  }

  endAttempt(fence: Fence, end: AttemptEnd): Promise<void> {
    return this.#fenced("the attempt's ending", fence, () => {
      const record: JournalRecord = {
        op: "end",
        run: fence.runId,
        epoch: fence.epoch,
        attempt: end.attempt,
        ending: end.ending,
        endedAt: end.endedAt,
        error: end.error,
        patch: end.run,
      };
      if (end.wakeOnEvent !== undefined) record.wakeOnEvent = end.wakeOnEvent;
      if (end.reused) record.reused = end.reused;
      return record;
    });
  }

  /** An attempt write: its fence is checked by `apply` when it is committed. */
  #fenced(what: string, fence: Fence, record: (state: JournalState) => JournalRecord): Promise<void> {
    return this.#enqueue(what, fence.runId, false, (state) => ({ record: record(state), settle: () => ({ ok: undefined }) }));
  }

  #enqueue<T>(what: string, runId: string, creates: boolean, prepare: (state: JournalState) => Prepared): Promise<T> {
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
      if (tail) this.#warnTorn(tail);
      try {
        const { outcomes, lines } = this.#decide(batch, journal.state);
        if (lines.length === 0) return outcomes;
        if (!journal.hasHeader) lines.unshift(HEADER_LINE);
        // Nobody may have written since we caught up: if someone did, the lock was not ours alone.
        if (fs.fstatSync(fd).size !== size) throw this.#failClosed("the file grew while this process held its lock");
        // A torn tail is cut off, never glued to: the next line starts where the last complete one ends.
        const start = tail ? tail.offset : size;
        if (tail) fs.ftruncateSync(fd, start);
        const data = Buffer.from(lines.join("\n") + "\n");
        for (const op of batch) op.appendStarted = op.hasLine === true;
        this.#append(fd, data, start);
        if (fs.fstatSync(fd).size !== start + data.length) throw this.#failClosed("another process appended while this one held the lock");
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
  #failClosed(reason: string): Error {
    const error = new Error(
      `its lock ${this.#file}.lock was compromised (${reason}), so this store instance records nothing more; open a new store to go on`,
    );
    this.#compromised ??= error;
    this.#warnOnce("compromised", `${this.location}: ${error.message}.`);
    return error;
  }

  #writeError(error: unknown, op: Op): SteplogError {
    if (error instanceof SteplogError) return error;
    const code = (error as { code?: string }).code ?? "";
    if (NOT_WRITABLE_CODES.has(code)) {
      return new StoreReadOnlyError(this.location, `${code}: the file, its folder or its lock is not writable by this user`, op.runId);
    }
    // Once the batch's lines began to be written (a full disk mid-append, a failed fsync), a
    // command's line may be in the file all the same.
    const command = op.command ? { maybeRecorded: op.appendStarted === true } : undefined;
    return new StoreWriteFailedError(this.location, op.what, { cause: error instanceof Error ? error : new Error(String(error)), runId: op.runId }, command);
  }

  // ---- reads -------------------------------------------------------------------------------

  async loadRunRow(runId: string): Promise<RunRow | undefined> {
    await this.#writesDone();
    return this.#read((state) => {
      const current = state.get(runId);
      return current ? { ...current.run } : undefined;
    }, undefined);
  }

  async loadRun(runId: string): Promise<StoredRun | undefined> {
    await this.#writesDone();
    return this.#read((state) => {
      const current = state.get(runId);
      return current ? structuredClone(current) : undefined;
    }, undefined);
  }

  async listRuns(filter: RunFilter): Promise<RunListing[]> {
    await this.#writesDone();
    return this.#read((state) => {
      return new RunStates(state).list(filter);
    }, []);
  }

  /** A read sees this instance's own earlier writes. */
  async #writesDone(): Promise<void> {
    if (this.#closed) throw this.#closedError();
    if (this.#pending.length > 0 || this.#draining) await this.#drain();
  }

  #read<T>(answer: (state: JournalState) => T, missing: T): T {
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
        warnIfShared(this.#file, this.location, this.#warn);
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        this.#journal.reset();
        return missing;
      }
      throw new StoreUnreadableError(this.location, error instanceof Error ? error.message : String(error), error);
    }
    try {
      const { tail, size } = this.#journal.catchUp(fd);
      // Without the lock a tail may be an append in progress; it is torn only if nobody holds the lock and it stays put.
      if (tail && !this.#lock.heldElsewhere() && fs.fstatSync(fd).size === size) this.#warnTorn(tail);
      return answer(this.#journal.state);
    } catch (error) {
      if (error instanceof SteplogError) throw error;
      throw new StoreUnreadableError(this.location, error instanceof Error ? error.message : String(error), error);
    } finally {
      fs.closeSync(fd);
    }
  }

  // ---- the rest ----------------------------------------------------------------------------

  #warnTorn(tail: Tail): void {
    this.#warnOnce(
      `torn:${tail.offset}`,
      `${this.location}: ignoring a torn last line ${tail.line} (${tail.length} bytes; ${tail.reason}), left by a write a crash cut off; ` +
        `the next write cuts it off. It began: ${tail.preview}`,
    );
  }

  #warnOnce(key: string, message: string): void {
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    try {
      this.#warn(message);
    } catch {
      // A warning must never break a write.
    }
  }

  #closedError(): SteplogError {
    return new StoreClosedError(this.location, "this call");
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    // Pending writes are committed first, as their callers were promised.
    if (this.#pending.length > 0 || this.#draining) await this.#drain();
    this.#closed = true;
  }
}

function hasFields(patch: object | undefined): boolean {
  return patch !== undefined && Object.values(patch).some((v) => v !== undefined);
}
