/**
 * The JSONL store: one append-only file, one JSON record a line (see records.ts), for users
 * who want a plain, greppable journal. The file is the truth; each instance keeps a replay of
 * it in memory and catches up with what other processes appended before every read and write.
 *
 * This file is the Store itself: each write says what it appends (a record) and what it
 * answers, decided against the caught-up state; the group commit (../group-commit.ts) queues
 * and batches them, batch-writer.ts commits a batch under the file lock (lock.ts), and reads
 * (reads.ts) take no lock. Closing commits what is pending first, then refuses every later call. The options are checked in
 * options.ts, and warnings are told once each (warnings.ts).
 */

import fs from "node:fs";
import { StoreClosedError, StoreUnreadableError, type SteplogError } from "../../base/errors.js";
import type {
  AttemptEnd,
  AttemptRow,
  ClaimJudge,
  ClaimResult,
  Fence,
  FlowQuery,
  ImportedRun,
  Lease,
  PruneJudge,
  PrunedRows,
  RunFilter,
  RunListing,
  RunRow,
  RunUpdate,
  StepOutcome,
  StepRow,
  Store,
  StoredRun,
  StreamRecord,
  WorkflowCount,
} from "../types.js";
import { Journal } from "./journal.js";
import { FileLock } from "./lock.js";
import { streamsOf, type JournalRecord, type JournalState } from "./records.js";
import { claimVerdict, RunStates } from "../state-machine.js";
import { canonicalPath } from "../canonical-path.js";
import { checkJsonlOptions, type JsonlStoreOptions } from "./options.js";
import { Reader } from "./reads.js";
import { Warnings } from "./warnings.js";
import { CREATES, JsonlBatchWriter, UPDATE, type Prepared } from "./batch-writer.js";
import { GroupCommit } from "../group-commit.js";
import { REJECTS_ONLY_ERRORS } from "../runtime.js";
import { fault } from "../../base/faults.js";

export type { JsonlStoreOptions } from "./options.js";

/** A Store on one JSONL file. */
export interface JsonlStore extends Store {
  readonly path: string;
  /** `jsonl:` and the file's path with symlinks resolved. */
  storageId(): Promise<string>;
}

export function jsonlStore(options: JsonlStoreOptions): JsonlStore {
  return new JsonlStoreImpl(options);
}

class JsonlStoreImpl implements JsonlStore {
  readonly kind = "jsonl";
  readonly [REJECTS_ONLY_ERRORS] = true;
  readonly durable = true;
  readonly multiProcess = true;
  readonly location: string;
  readonly #file: string;
  #storageId: string | undefined;
  readonly #writer: JsonlBatchWriter;
  readonly #queue: GroupCommit<(state: JournalState) => Prepared, string>;
  #closed = false;
  readonly #reader: Reader;

  constructor(options: JsonlStoreOptions) {
    const { file, durability, staleMs, lockWaitMs, warn } = checkJsonlOptions(options);
    this.#file = file;
    this.location = `jsonl store at ${this.#file}`;
    const warnings = new Warnings(this.location, warn);
    const journal = new Journal(this.location, (line, why) =>
      warnings.once(
        `skip:${line}`,
        `${this.location}: line ${line} ignored on replay (${why.message}); it was written by a process that had lost the file lock.`,
      ),
    );
    const lock = new FileLock(
      this.location,
      this.#file,
      staleMs,
      (error) => void this.#writer.failClosed(`proper-lockfile: ${error.message}`),
      (error) =>
        warnings.once(
          `release:${String(error)}`,
          `${this.location}: could not remove the lock ${this.#file}.lock (${error instanceof Error ? error.message : String(error)}); other processes take it over after ${staleMs} ms.`,
        ),
    );
    this.#writer = new JsonlBatchWriter({ file, location: this.location, durability, lockWaitMs, journal, lock, warnings });
    this.#queue = new GroupCommit(this.#writer);
    this.#reader = new Reader({ file, location: this.location, journal, lock, warn, warnings });
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
      const existing = new RunStates(state).taken(run);
      if (existing) return { ok: { exists: structuredClone(existing) } };
      return {
        record: { op: "create", run: run.id, row: run, attempt, expiresAt: lease.expiresAt, now: lease.now },
        settle: () => ({ ok: { runId: run.id, epoch: 1, attempt: attempt.number, expiresAt: lease.expiresAt } }),
      };
    });
  }

  enqueueRun(run: RunRow, now: number): Promise<{ queued: true } | { exists: RunRow }> {
    return this.#enqueue("the new run", run.id, true, (state) => {
      const existing = new RunStates(state).taken(run);
      if (existing) return { ok: { exists: structuredClone(existing) } };
      return { record: { op: "enqueue", run: run.id, row: run, now }, settle: () => ({ ok: { queued: true as const } }) };
    });
  }

  importRuns(runs: ImportedRun[]): Promise<{ imported: true } | { exists: RunRow }> {
    return this.#enqueue("the imported runs", runs[0]?.run.id ?? "", true, (state) => {
      const existing = new RunStates(state).importTaken(runs);
      if (existing) return { ok: { exists: structuredClone(existing) } };
      return { record: { op: "import", run: runs[0]?.run.id ?? "", runs }, settle: () => ({ ok: { imported: true as const } }) };
    });
  }

  pruneRuns(runIds: string[], approve: PruneJudge): Promise<PrunedRows> {
    return this.#enqueue("the pruned runs", runIds[0] ?? "", false, (state) => {
      const rows = new RunStates(state).choosePrune(runIds, approve);
      if (rows.ids.length === 0) return { ok: rows };
      for (const id of rows.ids) fault("during-prune", id);
      return { record: { op: "prune", run: rows.ids[0]!, runs: rows.ids }, settle: () => ({ ok: rows }) };
    });
  }

  claimRun(runId: string, decide: ClaimJudge, flow?: FlowQuery): Promise<ClaimResult> {
    return this.#enqueue("the new attempt", runId, false, (state) => {
      const current = state.get(runId);
      if (!current) return { ok: { kind: "missing" } };
      const facts = flow ? new RunStates(state).flowFacts(runId, flow) : undefined;
      const decision = claimVerdict(decide, { ...structuredClone(current), ...(facts ? { flow: facts } : {}) });
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
    return this.#fenced(`the intent of step ${JSON.stringify(step.key)}`, fence, () => ({
      op: "intent",
      run: fence.runId,
      step: step.key,
      epoch: fence.epoch,
      row: step,
    }));
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

  appendStream(fence: Fence, records: StreamRecord[]): Promise<void> {
    return this.#fenced("the stream's records", fence, () => ({ op: "stream", run: fence.runId, epoch: fence.epoch, records }));
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

  /** Queue a write for the next commit: `prepare` decides it under the lock; `creates`: it may make a missing file. */
  #enqueue<T>(what: string, runId: string, creates: boolean, prepare: (state: JournalState) => Prepared): Promise<T> {
    if (this.#closed) return Promise.reject(this.#closedError());
    return this.#queue.enqueue<T>(creates ? CREATES : 0, runId, prepare, what, false);
  }

  /** A read sees this instance's own earlier writes. */
  async #writesDone(): Promise<void> {
    if (this.#closed) throw this.#closedError();
    await this.#queue.drain();
  }

  #closedError(): SteplogError {
    return new StoreClosedError(this.location, "this call");
  }

  // ---- reads -------------------------------------------------------------------------------

  async loadRunRow(runId: string): Promise<RunRow | undefined> {
    await this.#writesDone();
    return this.#reader.read((state) => {
      const current = state.get(runId);
      return current ? { ...current.run } : undefined;
    }, undefined);
  }

  async loadRun(runId: string): Promise<StoredRun | undefined> {
    await this.#writesDone();
    return this.#reader.read((state) => {
      const current = state.get(runId);
      return current ? structuredClone(current) : undefined;
    }, undefined);
  }

  async listRuns(filter: RunFilter): Promise<RunListing[]> {
    await this.#writesDone();
    return this.#reader.read((state) => {
      return new RunStates(state).list(filter);
    }, []);
  }

  async countRuns(filter: RunFilter): Promise<WorkflowCount[]> {
    await this.#writesDone();
    return this.#reader.read((state) => new RunStates(state).count(filter), []);
  }

  async readStream(runId: string, stream: string, afterSeq: number, limit: number): Promise<StreamRecord[]> {
    await this.#writesDone();
    return this.#reader.read((state) => streamsOf(state).read(runId, stream, afterSeq, limit), []);
  }

  async streamNames(runId: string): Promise<string[]> {
    await this.#writesDone();
    return this.#reader.read((state) => streamsOf(state).names(runId), []);
  }

  /** The journal file's identity, size and time: every write appends to it (a rewritten file is another inode). */
  async changeMarker(): Promise<string> {
    await this.#writesDone();
    try {
      const stat = await fs.promises.stat(this.#file);
      return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return "none";
      throw new StoreUnreadableError(this.location, (error as Error).message, error);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    // Pending writes are committed first, as their callers were promised.
    await this.#queue.drain();
    this.#closed = true;
  }
}

function hasFields(patch: object | undefined): boolean {
  return patch !== undefined && Object.values(patch).some((v) => v !== undefined);
}
