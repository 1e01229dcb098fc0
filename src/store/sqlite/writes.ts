/**
 * The pieces the SQLite store's write paths are built of, for one connection, all run inside a
 * write transaction: the fence check (once per run per batch), run numbers and the chunks a
 * run's steps go in (see schema.ts), patches of runs and steps, attempt rows, and a new run's
 * insert as a savepoint of its batch. What these remember between calls lives here with them
 * (a run's slot), and is dropped when a transaction fails.
 */

import type { SqliteConnection, SqliteStatement } from "./drivers/connection.js";
import { LeaseLostError, StoreWriteFailedError } from "../../base/errors.js";
import type { AttemptRow, Fence, Lease, RunPatch, RunRow, StepRow } from "../types.js";
import { inRunChunks, unchunkedOf, type Statements } from "./sql.js";
import { runInsertValues } from "../run-values.js";
import { CHUNK_STEPS } from "./schema.js";

type Db = SqliteConnection;
type Stmt = SqliteStatement;

/** What a step's intent records, for an error message (built only when one is thrown). */
export const intentDescription = (key: string): string => "the intent of step " + JSON.stringify(key);

const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export class SqliteWrites {
  readonly #db: Db;
  readonly #s: Statements;
  readonly #patchStmts = new Map<string, Stmt>();
  /** Run id → its number in `runs` (which never changes) and its latest intent's row, for the runs this store writes steps of. */
  readonly runSlots = new Map<string, RunSlot>();
  /**
   * Fences are checked once per run, not once a step: each run's slot keeps the lease epoch its
   * fence was last found at, with the generation it was found in. A write transaction holds
   * SQLite's write lock, so no other connection can move a lease until it commits; and between
   * batches a lease moves only by a commit of another connection (which changes `PRAGMA
   * data_version`) or by this connection's own claims and fence-outs (transactions outside the
   * queue, which call forgetFences). Either starts a new generation, and every slot's check is
   * stale. A queued write that changes a lease row forgets that run's check (endAttempt drops
   * the slot), or, a new run's insert, records what it wrote as found (its epoch, 1, held).
   */
  #fenceGeneration = 0;
  /** data_version when the current generation began, or -1: start a new one at the next batch. */
  #dataVersion = -1;
  /** Built once per connection: nested in the batch's transaction, it is a savepoint. */
  readonly insertNewRun: (run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }) => Lease | { exists: RunRow };
  /** A run queued for its turn (flow control): the run row and a free lease row (epoch 0), no attempt. */
  readonly insertQueuedRun: (run: RunRow, now: number) => { queued: true } | { exists: RunRow };

  readonly #location: string;

  constructor(db: Db, stmts: Statements, location: string) {
    this.#db = db;
    this.#s = stmts;
    this.#location = location;
    this.insertNewRun = db.transaction((run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Lease | { exists: RunRow } => {
      const s = this.#s;
      this.forgetFence(run.id);
      const inserted = this.#insertRun(run);
      if (typeof inserted !== "number") return inserted;
      this.insertAttempt(attempt);
      s.upsertLease.run(run.id, 1, attempt.number, lease.expiresAt, lease.now);
      // The lease row now reads epoch 1, held: what the run's first fence check would find. Its
      // number and that finding go in the run's slot, so the first step looks neither up.
      const slot = new RunSlot(inserted);
      this.#fenceFound(slot, { runId: run.id, epoch: 1 });
      slot.seqChecked = true; // a run inserted just now holds no steps
      this.runSlots.set(run.id, slot);
      return { runId: run.id, epoch: 1, attempt: attempt.number, expiresAt: lease.expiresAt };
    });
    this.insertQueuedRun = db.transaction((run: RunRow, now: number): { queued: true } | { exists: RunRow } => {
      this.forgetFence(run.id);
      const inserted = this.#insertRun(run);
      if (typeof inserted !== "number") return inserted;
      this.#s.upsertLease.run(run.id, 0, null, 0, now);
      return { queued: true };
    });
  }

  /**
   * The run's row, inserted: its number. Or the run that takes its place, and nothing written:
   * the one with its id, or one with its dedupe key that has not ended.
   */
  #insertRun(run: RunRow): number | { exists: RunRow } {
    if (run.dedupeKey != null) {
      const holder = (this.#s.getRun.get(run.id) ?? this.#s.getActiveByDedupeKey.get(run.dedupeKey)) as RunRow | undefined;
      if (holder) return { exists: holder };
    }
    // ON CONFLICT (id) DO NOTHING: a taken id inserts nothing and returns no row.
    const inserted = this.#s.insertRun.get(...runInsertValues(run)) as { num: number } | undefined;
    if (inserted) return inserted.num;
    const same = this.#s.getRun.get(run.id) as RunRow | undefined;
    if (!same) throw new Error(`steplog internal: run ${JSON.stringify(run.id)} was neither inserted nor found`);
    return { exists: same };
  }

  /** Bound by position, one statement per set of fields (an attempt's ending patches every run it ends). */
  patchRun(runId: string, patch: RunPatch): void {
    let signature = "";
    const values: unknown[] = [];
    for (const k of Object.keys(patch)) {
      const value = (patch as Record<string, unknown>)[k];
      if (value === undefined) continue;
      signature = signature === "" ? k : `${signature},${k}`;
      values.push(value);
    }
    if (values.length === 0) return;
    let stmt = this.#patchStmts.get(signature);
    if (!stmt) {
      stmt = this.#db.prepare(
        `UPDATE runs SET ${signature
          .split(",")
          .map((k) => `${snake(k)} = ?`)
          .join(", ")} WHERE id = ?`,
      );
      this.#patchStmts.set(signature, stmt);
    }
    values.push(runId);
    stmt.run(...values);
  }

  /** A step row's fields, changed: looked for through the run's chunks, then among its rows without one. */
  patchStep(runId: string, seq: number, patch: Partial<StepRow>): void {
    const keys = Object.keys(patch).filter((k) => (patch as Record<string, unknown>)[k] !== undefined);
    if (keys.length === 0) return;
    const set = keys.map((k) => `${snake(k)} = @${k}`).join(", ");
    const values = { ...patch, runId, seq };
    const changed = this.#db
      .prepare(`UPDATE steps SET ${set} FROM (SELECT num FROM runs WHERE id = @runId) AS run WHERE ${inRunChunks("run.num")} AND seq = @seq`)
      .run(values).changes;
    if (changed === 0) {
      this.#db
        .prepare(`UPDATE steps SET ${set} FROM (SELECT num FROM runs WHERE id = @runId) AS run WHERE ${unchunkedOf("@runId", "run.num")} AND seq = @seq`)
        .run(values);
    }
  }

  insertAttempt(attempt: AttemptRow): void {
    const a = attempt;
    this.#s.insertAttempt.run(
      a.runId,
      a.number,
      a.host,
      a.bootId,
      a.pid,
      a.processStart,
      a.startedAt,
      a.endedAt,
      a.ending,
      a.fromStep,
      a.forced ? 1 : 0,
      a.error,
      a.reused ? JSON.stringify(a.reused) : null,
      a.consent ? JSON.stringify(a.consent) : null,
    );
  }

  /** First thing in each batch: the fences found before stand unless another connection has committed since. */
  beginBatch(): void {
    const version = this.#s.dataVersion.get() as number;
    if (version === this.#dataVersion) return;
    this.#fenceGeneration++;
    this.#dataVersion = version;
  }

  /** Before this connection's own claims and fence-outs, and after a batch that failed: check every fence again. */
  forgetFences(): void {
    this.#fenceGeneration++;
    this.#dataVersion = -1;
  }

  /**
   * After a transaction that failed: every slot goes. What a slot learnt in it may have been
   * rolled back — a new run's number (another run may take it next), a chunk's listing (the
   * run's later rows would go where no read looks, and the number could be taken by another run).
   */
  batchFailed(): void {
    this.forgetFences();
    this.runSlots.clear();
  }

  /**
   * The chunk the run's intent at `seq` goes in: the slot's, or a new one (one above the highest
   * any row holds), listed for the run. The slot takes a new chunk only once its row is in
   * (`intended`): an insert that fails leaves it without one.
   *
   * A slot's first chunk is where a writer may start from a view of the run that is behind the
   * store (the unique index is per chunk, so it would not notice a seq written twice): its seq
   * must be above every seq the run holds (see checkSeqAbove). After that the slot's own intents
   * follow in seq order, under its fence.
   */
  chunkFor(slot: RunSlot, runId: string, seq: number, key: string): number {
    if (slot.chunk !== 0 && slot.chunkRows < CHUNK_STEPS) return slot.chunk;
    const s = this.#s;
    if (!slot.seqChecked) {
      this.#checkSeqAbove(slot, runId, seq, key);
      slot.seqChecked = true;
    }
    const top = s.topChunk.get() as number | null;
    const chunk = top !== null && top > 0 ? top + 1 : 1;
    s.insertChunk.run(slot.num, chunk);
    return chunk;
  }

  /**
   * The run's highest seq is in its latest chunk, in its side chunk (minus its number: rows
   * written outside the step path or before schema 10), or among its rows without a chunk. A
   * seq at or below it is refused alone (STORE_WRITE_FAILED), before anything is written or
   * run: the attempt's view of the run is behind the store.
   */
  #checkSeqAbove(slot: RunSlot, runId: string, seq: number, key: string): void {
    const s = this.#s;
    const latest = s.latestChunkOf.get(slot.num) as number | null;
    const inLatest = latest === null ? null : (s.topSeqIn.get(latest) as number | null);
    const inSide = s.topSeqIn.get(-slot.num) as number | null;
    const held = Math.max(inLatest ?? 0, inSide ?? 0, (s.topSeqUnchunked.get(runId, slot.num) as number | null) ?? 0);
    if (seq > held) return;
    const why = new Error(
      `seq ${seq} is already recorded for this run (it holds steps up to seq ${held}): this attempt did not read every step the store holds`,
    );
    throw new StoreWriteFailedError(
      this.#location,
      intentDescription(key),
      { cause: why, runId },
      undefined,
      "look at the run with engine.get before continuing it",
    );
  }

  /** A write in this batch changed the run's lease row: a later write must check its fence again. */
  forgetFence(runId: string): void {
    const slot = this.runSlots.get(runId);
    if (slot !== undefined) slot.fenceEpoch = -1;
  }

  /** Inside a batch: refuse the write unless the run's lease is still at this fence's epoch. */
  fence(fence: Fence, what: string): void {
    const slot = this.runSlots.get(fence.runId);
    if (slot !== undefined && this.#fenceKnown(slot, fence)) return;
    this.#checkFence(fence, what);
    if (slot !== undefined) this.#fenceFound(slot, fence);
  }

  /**
   * A step's write: the fence, as `fence`, and the run's slot (null when the run has no row or
   * number: the fence has refused it by then) — one map lookup for both once the fence is known.
   */
  fencedSlot(fence: Fence, what: string): RunSlot | null {
    const slot = this.runSlots.get(fence.runId);
    if (slot !== undefined && this.#fenceKnown(slot, fence)) return slot;
    this.#checkFence(fence, what);
    const found = slot ?? this.#newSlot(fence.runId);
    if (found !== null) this.#fenceFound(found, fence);
    return found;
  }

  /** The slot's fence was found at this epoch in the current generation: it still stands. */
  #fenceKnown(slot: RunSlot, fence: Fence): boolean {
    return slot.fenceEpoch === fence.epoch && slot.fenceGeneration === this.#fenceGeneration;
  }

  #fenceFound(slot: RunSlot, fence: Fence): void {
    slot.fenceEpoch = fence.epoch;
    slot.fenceGeneration = this.#fenceGeneration;
  }

  #checkFence(fence: Fence, what: string): void {
    const lease = this.#s.getFence.get(fence.runId) as { epoch: number; attempt: number | null } | undefined;
    if (!lease || lease.epoch !== fence.epoch || lease.attempt === null) {
      throw new LeaseLostError(fence.runId, undefined, `${what} refused: the lease epoch is no longer ${fence.epoch}`);
    }
  }

  #newSlot(runId: string): RunSlot | null {
    const row = this.#s.getRunNum.get(runId) as { num: number | null } | undefined;
    if (!row || row.num === null) return null;
    const slot = new RunSlot(row.num);
    this.runSlots.set(runId, slot);
    return slot;
  }
}

/**
 * A run's number; the lease epoch its fence was last found at (see SqliteWrites' fence
 * generation); the chunk its intents go in and how many it holds (see schema.ts); and the seq
 * and rowid of the last intent this connection inserted for it: a step's outcome usually
 * follows its own intent, and is then found by rowid (one B-tree search) rather than through
 * the run's chunks. The rowid and the chunk are hints, checked against the run and seq in the
 * same statement; the run's chunk listing is the answer when they miss (a VACUUM may renumber
 * rows; a batch rolled back after the insert leaves a rowid that names no row, or another
 * run's; parallel steps' outcomes follow other intents).
 */
export class RunSlot {
  fenceEpoch = -1;
  fenceGeneration = -1;
  lastSeq = -1;
  lastRowid = 0;
  /** The resolution the run's last intent was inserted with (its outcome need not write it again when unchanged). */
  lastResolution: string | null = null;
  /** The chunk this store writes the run's intents into, or 0 for none yet (chunks it takes are above 0). */
  chunk = 0;
  chunkRows = 0;
  /** Whether this store has seen that the run holds no seq at or above its next intent's (chunkFor). */
  seqChecked = false;
  constructor(readonly num: number) {}

  /** The run's intent is in `chunk` at `rowid` (after chunkFor, in the same transaction). */
  intended(seq: number, rowid: number, chunk: number, resolution: string | null): void {
    this.lastSeq = seq;
    this.lastRowid = rowid;
    this.lastResolution = resolution;
    if (this.chunk === chunk) {
      this.chunkRows++;
    } else {
      this.chunk = chunk;
      this.chunkRows = 1;
    }
  }
}
