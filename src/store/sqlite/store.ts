/**
 * The SQLite store: the embedded default, on better-sqlite3 or the runtime's built-in SQLite (see drivers/). WAL, busy_timeout, every write
 * transaction BEGIN IMMEDIATE, and `synchronous` set explicitly on every open (an existing
 * WAL database would otherwise drop to NORMAL). Attempt writes issued in the same turn of the
 * event loop share one transaction (group commit: ../group-commit.ts queues and settles them,
 * batch-writer.ts writes a batch).
 *
 * This file is the Store contract's methods and the order each does things in: open on first
 * use, refuse what cannot be written, flush queued writes, then read or write. Beside it:
 * options.ts, open.ts (the file, pragmas, migrations, identity), failures.ts, sql.ts (the
 * statements), reads.ts and writes.ts (inside a read or a write transaction), step-writes.ts
 * (a step's intent and outcome), streams.ts (stream records), prune-runs.ts (engine.prune).
 */

import fs from "node:fs";
import { StoreClosedError } from "../../base/errors.js";
import type {
  AttemptEnd,
  AttemptRow,
  ClaimJudge,
  ClaimResult,
  Fence,
  FlowQuery,
  ImportedRun,
  Lease,
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
import { canonicalPath } from "../canonical-path.js";
import { GroupCommit } from "../group-commit.js";
import { OP_CALL, OP_INTENT, OP_OUTCOME, SqliteBatchWriter } from "./batch-writer.js";
import type { SqliteConnection, SqliteDriverName } from "./drivers/connection.js";

const LONE_WRITER_STREAK = 32; // commits a lone writer may make without letting the event loop turn (group-commit.ts)
import { NEW_RUN, reading, writeFailed } from "./failures.js";
import { checkStillThere, checkWritable, connectionPragmas, openDatabase, recordIdentity, type OpenedFile } from "./open.js";
import { sqliteSettings, type SqliteSettings, type SqliteStoreOptions } from "./options.js";
import { dropSnapshot, snapshotStale } from "./snapshot.js";
import { countRuns, listRuns, loadRun } from "./reads.js";
import { prepare, type Statements } from "./sql.js";
import { SqliteWrites, intentDescription } from "./writes.js";
import { claimInTransaction, updateInTransaction, type Refusal } from "./run-transactions.js";
import { applyIntent, applyOutcome } from "./step-writes.js";
import { importInTransaction } from "./import-runs.js";
import { appendRecords, readNames, readRecords } from "./streams.js";
import { checkpointed, nonePruned, pruneInTransaction, takeTurnInTransaction } from "./prune-runs.js";
import { REJECTS_ONLY_ERRORS } from "../runtime.js";

export { DEFAULT_SQLITE_PATH, type SqliteStoreOptions } from "./options.js";
/** A Store on one SQLite file, with a look at the settings of its open connection. */
export interface SqliteStore extends Store {
  readonly path: string;
  /** `sqlite:` and the file's path with symlinks resolved. */
  storageId(): Promise<string>;
  /** The live connection's settings (opening the file if it exists): to check what durability you run with, and which driver opened it. */
  pragmas(): { driver: SqliteDriverName; journalMode: string; synchronous: number; busyTimeoutMs: number; cacheSize: number } | undefined;
}

export function sqliteStore(options: SqliteStoreOptions = {}): SqliteStore {
  return new SqliteStoreImpl(options);
}

type Db = SqliteConnection;

class SqliteStoreImpl implements SqliteStore {
  readonly kind = "sqlite";
  readonly [REJECTS_ONLY_ERRORS] = true;
  readonly durable = true;
  readonly multiProcess = true;
  readonly location: string;
  readonly #settings: SqliteSettings;
  #storageId: string | undefined;
  #db: Db | undefined;
  /** Connections opened so far: a change marker from one connection is not comparable with another's. */
  #connections = 0;
  #stmts: Statements | undefined;
  /** What the write transactions remember: fences checked in the batch, run numbers, patch statements. */
  #writes: SqliteWrites | undefined;
  #queue: GroupCommit | undefined;
  #closed = false;
  /** What opening learned of the file: which file it is, and why (and from which snapshot) it is read-only, if it is. */
  readonly #opened: OpenedFile = { readOnlyWhy: undefined, snapshot: undefined, identity: undefined };

  constructor(options: SqliteStoreOptions) {
    this.#settings = sqliteSettings(options);
    this.location = this.#settings.location;
  }

  get path(): string {
    return this.#settings.file;
  }

  async storageId(): Promise<string> {
    if (this.#storageId) return this.#storageId;
    const id = `sqlite:${canonicalPath(this.#settings.file)}`;
    // Kept once the file exists: until then a folder on the way may still be created.
    if (fs.existsSync(this.#settings.file)) this.#storageId = id;
    return id;
  }

  pragmas() {
    const db = this.#open(false);
    return db && connectionPragmas(db);
  }

  /** Open on first use. With `create` false a missing file is reported as absent and nothing is created. */
  #open(create: boolean): Db | undefined {
    if (this.#closed) throw new StoreClosedError(this.location, "this call");
    if (this.#db) return this.#db;
    const db = openDatabase(this.#settings, create, this.#opened);
    if (!db) return undefined;
    this.#db = db;
    this.#connections++;
    recordIdentity(this.#settings, this.#opened);
    this.#stmts = prepare(db);
    this.#writes = new SqliteWrites(db, this.#stmts, this.location);
    const writes = this.#writes;
    const stmts = this.#stmts;
    const writer = new SqliteBatchWriter(db, (error, what, runId) => writeFailed(this.location, error, what, runId), {
      applyOp: (op, a, b) =>
        op === OP_INTENT ? applyIntent(writes, stmts, a as Fence, b as StepRow) : applyOutcome(writes, stmts, a as Fence, b as StepOutcome),
      describeOp: (op, _a, b) => (op === OP_INTENT ? intentDescription((b as StepRow).key) : "a step outcome"),
      beginBatch: () => {
        this.#checkedForBatch = false;
        this.#writes!.beginBatch();
      },
      batchFailed: () => {
        // Its BEGIN may have failed before beginBatch ran: the next batch looks again.
        this.#checkedForBatch = false;
        this.#writes!.batchFailed();
      },
    });
    this.#queue = new GroupCommit(writer, { loneWriterStreak: LONE_WRITER_STREAK });
    return db;
  }

  /**
   * Open for a read. A store read through a private copy (see snapshot.ts) is opened again,
   * from a fresh copy or in place, once the file has changed: a read is never answered from a
   * stale copy.
   */
  #openToRead(): Db | undefined {
    const snapshot = this.#opened.snapshot;
    if (this.#db && snapshot && snapshotStale(this.#settings.file, snapshot)) this.#disconnect();
    return this.#open(false);
  }

  /** Close the connection and forget what was bound to it (queued writes are flushed first). */
  #disconnect(): void {
    try {
      this.#queue?.flush();
    } finally {
      this.#db?.close();
      this.#db = undefined;
      this.#writableDb = undefined;
      this.#writes?.runSlots.clear();
      if (this.#opened.snapshot) dropSnapshot(this.#opened.snapshot);
      this.#opened.snapshot = undefined;
    }
  }

  /** See checkStillThere in open.ts: the file open must still be the one at the path. */
  #stillThere(runId: string | undefined): void {
    checkStillThere(this.#settings, this.#opened, runId);
  }

  /** Whether the file was found in place for the batch the queue is gathering (its writes commit together). */
  #checkedForBatch = false;

  /** #stillThere for a queued write: once per batch (100 runs started together share one look, as they share a commit). */
  #stillThereForBatch(runId: string): void {
    if (this.#checkedForBatch) return;
    this.#stillThere(runId);
    this.#checkedForBatch = true;
  }

  /** The connection found writable (a connection's read-only state never changes; asked on every write). */
  #writableDb: Db | undefined;

  #writable(db: Db, runId: string): void {
    if (db === this.#writableDb) return;
    checkWritable(this.#settings, this.#opened, db, runId);
    this.#writableDb = db;
  }

  /** A synchronous write transaction, after any queued attempt writes (so order is kept). */
  #transact<T>(create: boolean, what: string, runId: string, fn: (db: Db) => T, command = false): T | undefined {
    const db = this.#open(create);
    if (!db) return undefined;
    this.#writable(db, runId);
    this.#stillThere(runId);
    this.#queue!.flush();
    // A claim or a fence-out moves lease rows without changing data_version for this connection.
    this.#writes!.forgetFences();
    try {
      return db.transaction(() => fn(db)).immediate();
    } catch (error) {
      // SQLite rolled the transaction back: nothing of it was recorded.
      throw writeFailed(this.location, error, what, runId, command ? { maybeRecorded: false } : undefined);
    }
  }

  // Through the write queue: runs started together share a commit with each other's steps.
  createRun(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Promise<Lease | { exists: RunRow }> {
    try {
      this.#writable(this.#open(true)!, run.id);
      this.#stillThereForBatch(run.id);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#newRun(run.id, () => this.#writes!.insertNewRun(run, attempt, lease));
  }

  enqueueRun(run: RunRow, now: number): Promise<{ queued: true } | { exists: RunRow }> {
    try {
      this.#writable(this.#open(true)!, run.id);
      this.#stillThereForBatch(run.id);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#newRun(run.id, () => this.#writes!.insertQueuedRun(run, now));
  }

  /**
   * A new run's insert, queued: in a savepoint of the batch's transaction, so a run that cannot
   * be inserted fails alone, not the other runs' writes that share the commit.
   */
  #newRun<T>(runId: string, insert: () => T): Promise<T> {
    return this.#queue!.enqueue<T>(
      OP_CALL,
      runId,
      (): T => {
        try {
          return insert();
        } catch (error) {
          if (!this.#db!.inTransaction) throw error; // SQLite rolled the whole batch back: it fails as one
          throw writeFailed(this.location, error, NEW_RUN, runId);
        }
      },
      NEW_RUN,
      false,
    );
  }

  async importRuns(runs: ImportedRun[]): Promise<{ imported: true } | { exists: RunRow }> {
    return this.#transact(true, "the imported runs", runs[0]?.run.id ?? "", (db) => importInTransaction(db, this.#stmts!, this.#writes!, runs), true)!;
  }

  readonly pruneRuns: NonNullable<Store["pruneRuns"]> = async (runIds, approve) => {
    const rows = this.#transact(false, "the pruned runs", runIds[0] ?? "", (db) => pruneInTransaction(db, this.#stmts!, this.#writes!, runIds, approve), true);
    return rows ? checkpointed(this.#db!, rows) : nonePruned();
  };
  readonly takeTurn: NonNullable<Store["takeTurn"]> = async (name, holder, now, until) =>
    this.#transact(false, "the retention turn", "", (db) => takeTurnInTransaction(db, name, holder, now, until)) ?? false;

  async claimRun(runId: string, decide: ClaimJudge, flow?: FlowQuery): Promise<ClaimResult> {
    const out: Refusal = {};
    const result = this.#transact(false, "the new attempt", runId, () => claimInTransaction(this.#stmts!, this.#writes!, runId, decide, flow, out));
    // Thrown after the commit, so a refusal's own patch (say, dead-lettering) is kept.
    if (out.refusal) throw out.refusal;
    return result ?? { kind: "missing" };
  }

  async updateRun<T>(runId: string, decide: (current: StoredRun) => RunUpdate<T>): Promise<T | undefined> {
    const out: Refusal = {};
    const result = this.#transact(false, "the run update", runId, () => updateInTransaction(this.#stmts!, this.#writes!, runId, decide, out), true);
    if (out.refusal) throw out.refusal;
    return result;
  }

  /** A read: open (again, if a private copy went stale), flush queued writes, read; `none` when there is no file yet. */
  async #read<T>(none: T, read: (db: Db) => T): Promise<T> {
    return reading(this.location, () => {
      const db = this.#openToRead();
      if (!db) return none;
      this.#queue!.flush();
      return read(db);
    });
  }

  loadRunRow(runId: string): Promise<RunRow | undefined> {
    return this.#read(undefined, () => this.#stmts!.getRun.get(runId) as RunRow | undefined);
  }

  loadRun(runId: string): Promise<StoredRun | undefined> {
    return this.#read(undefined, () => loadRun(this.#stmts!, runId));
  }

  listRuns(filter: RunFilter): Promise<RunListing[]> {
    return this.#read([], (db) => listRuns(db, this.#stmts!, filter));
  }

  async countRuns(filter: RunFilter): Promise<WorkflowCount[]> {
    return reading(this.location, () => {
      const db = this.#open(false);
      if (!db) return [];
      this.#queue!.flush();
      return countRuns(db, filter);
    });
  }

  /**
   * data_version changes when another connection commits to the file; total_changes counts this
   * connection's own writes (data_version leaves those out); both start again with a new
   * connection (a private copy retaken once the file changed), which the count of connections
   * tells apart. No file yet: "none".
   */
  async changeMarker(): Promise<string> {
    return reading(this.location, () => {
      const db = this.#openToRead();
      if (!db) return "none";
      this.#queue!.flush();
      const { version, changes } = db.prepare("SELECT data_version AS version, total_changes() AS changes FROM pragma_data_version").get() as {
        version: number;
        changes: number;
      };
      return `${this.#connections}:${version}:${changes}`;
    });
  }

  // The hot path: an intent and an outcome per step, queued as data (no closure a write) and
  // applied as one statement each with positional parameters, after the run's fence (checked
  // once, see the fence generation in writes.ts).
  writeIntent(fence: Fence, step: StepRow): Promise<void> {
    this.#writable(this.#open(true)!, fence.runId);
    return this.#queue!.enqueue(OP_INTENT, fence.runId, fence, step, true);
  }

  writeOutcome(fence: Fence, outcome: StepOutcome): Promise<void> {
    this.#open(true);
    return this.#queue!.enqueue(OP_OUTCOME, fence.runId, fence, outcome, false);
  }

  writeOutcomeLater(fence: Fence, outcome: StepOutcome, committed: () => void, failed: (error: unknown) => void): void {
    this.#open(true);
    this.#queue!.enqueueWithCallbacks(OP_OUTCOME, fence.runId, fence, outcome, committed, failed);
  }

  renewLease(fence: Fence, expiresAt: number, now: number): Promise<void> {
    this.#open(true);
    try {
      this.#stillThereForBatch(fence.runId);
    } catch (error) {
      return Promise.reject(error);
    }
    const renew = () => {
      this.#writes!.fence(fence, "lease renewal");
      this.#stmts!.renewLease.run({ runId: fence.runId, expiresAt, heartbeatAt: now });
    };
    return this.#queue!.enqueue(OP_CALL, fence.runId, renew, "the lease renewal", false);
  }

  appendStream(fence: Fence, records: StreamRecord[]): Promise<void> {
    this.#writable(this.#open(true)!, fence.runId);
    return this.#queue!.enqueue(OP_CALL, fence.runId, () => appendRecords(this.#writes!, this.#db!, fence, records), "the stream's records", false);
  }

  readStream(runId: string, stream: string, afterSeq: number, limit: number): Promise<StreamRecord[]> {
    return this.#read([], (db) => readRecords(db, runId, stream, afterSeq, limit));
  }

  streamNames(runId: string): Promise<string[]> {
    return this.#read([], (db) => readNames(db, runId));
  }

  endAttempt(fence: Fence, end: AttemptEnd): Promise<void> {
    this.#open(true);
    const write = () => {
      const writes = this.#writes!;
      try {
        writes.fence(fence, "attempt ending");
        this.#stmts!.endAttempt.run(end.ending, end.endedAt, end.error, end.reused ? JSON.stringify(end.reused) : null, fence.runId, end.attempt);
        writes.patchRun(fence.runId, end.run);
        if (end.wakeOnEvent !== undefined) this.#stmts!.wakeOnEvent.run({ runId: fence.runId, name: end.wakeOnEvent, now: end.endedAt });
        this.#stmts!.releaseLease.run(end.endedAt, fence.runId);
      } finally {
        // The attempt is over, its lease released or lost: a later write of it in the same batch
        // must be refused (its fence checked again), and a worker that lost many runs keeps no
        // slot for them. The run's slot goes (its steps' rows are done).
        writes.runSlots.delete(fence.runId);
      }
    };
    return this.#queue!.enqueue(OP_CALL, fence.runId, write, "the attempt's ending", false);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#disconnect();
    this.#closed = true;
  }
}
