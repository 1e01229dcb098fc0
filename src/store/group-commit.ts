/**
 * Group commit, for every store that has one (SQLite on any of its drivers, JSONL, Postgres):
 * the queue of writes, which writes share a batch and when it is committed, and settling each
 * write (its promise, or its callbacks) once its batch has. A store gives only how it writes a
 * batch: a `BatchWriter` (sqlite/batch-writer.ts, jsonl/batch-writer.ts, postgres/batch-writer.ts).
 *
 * What each store's own queue guaranteed before this module, and this module keeps:
 *
 * - **Batching.** Writes issued in the same turn of the event loop, by one run or by many, share
 *   one commit (one transaction, one fsync). The batch is due at the end of the turn
 *   (setImmediate). SQLite only (`loneWriterStreak`): when the last commit held one run's writes
 *   only and that run now issues a write it waits for (an intent), the batch is due as soon as
 *   the current microtasks have run; every `loneWriterStreak` such commits one waits for the turn
 *   anyway, so timers (the lease's heartbeat) and signals still run.
 * - **Order.** Batches commit one at a time, in the order their writes were issued; writes issued
 *   while a batch commits form the next one (Postgres lets one turn pass first, `turnBetweenBatches`,
 *   so the writers the batch released join the next batch together). The store's other
 *   transactions and its reads come after the queued writes: SQLite calls `flush()` first
 *   (synchronous), JSONL `drain()`, Postgres `settled()`.
 * - **Durable before settled.** No write's promise or callback settles before its batch has
 *   committed: SQLite's transaction has committed (with the connection's `synchronous`), JSONL's
 *   lines are appended (and fsynced with durability "power"), Postgres's COMMIT was answered.
 * - **A write refused alone fails alone.** The writer checks each write before it changes
 *   anything — LEASE_LOST for a stale fence (SQLite: the fence in the transaction; Postgres: the
 *   lease rows locked first, one-trip statements that change rows only under the live lease, or
 *   a savepoint a write; JSONL: each record decided against the caught-up journal) — and sets
 *   that write's `refused`: the others in the batch still commit. A failure of the batch itself
 *   (disk full, I/O error, the server gone past the retry budget, a compromised lock) rejects
 *   every write in it, with the store's error for each (`failed`): none was committed.
 * - **`writeOutcomeLater`.** (SQLite) A write nobody awaits is queued with two callbacks instead
 *   of a promise (`enqueueWithCallbacks`); one of them is called synchronously after its batch,
 *   in the batch's order with the others' promises. Neither may throw.
 * - **Closing.** The writes queued before a store closes are committed before it closes (SQLite
 *   flushes, JSONL drains, Postgres waits for `settled()`).
 *
 * perf: the SQLite hot path is an intent and an outcome per step, so a write is one object and
 * one promise (no executor closure: see `capture`), and a lone writer's batch is flushed by a
 * resolved promise's reaction (not queueMicrotask, which Node wraps in an AsyncResource).
 */

/** One queued write: what the store needs to apply it (`op`, `a`, `b`: the store's own meaning), and how it settles. */
export class QueuedWrite<A = unknown, B = unknown> {
  /** What the write's promise resolves with: set by the writer. */
  result: unknown = undefined;
  /** Set by the writer when this write alone was refused (the rest of the batch commits): its promise rejects with it. */
  refused: unknown = undefined;
  constructor(
    readonly op: number,
    readonly runId: string,
    readonly a: A,
    readonly b: B,
    readonly resolve: (result: unknown) => void,
    readonly reject: (error: unknown) => void,
  ) {}
}

/** How a store writes a batch: all the rest is the group commit's. */
export interface BatchWriter<A = unknown, B = unknown> {
  /** `write` commits before it returns (and `flush` may be called); else it returns a promise. */
  readonly sync: boolean;
  /**
   * Commit the batch, setting each write's `result`, or its `refused` when that write alone is
   * refused. Throws (or rejects) when the batch failed as a whole: then nothing of it committed.
   */
  write(batch: QueuedWrite<A, B>[]): void | Promise<void>;
  /** The error a write of a batch that failed as a whole is rejected with. */
  failed(error: unknown, write: QueuedWrite<A, B>): unknown;
  /** Asynchronous writers: the queue is empty again after one or more batches. */
  idle?(): void;
}

export interface GroupCommitOptions {
  /** Commits a lone writer may make without letting the event loop turn (0: a batch always waits for the turn's end). */
  loneWriterStreak?: number;
  /** Asynchronous writers: let one turn of the event loop pass between batches that follow one another. */
  turnBetweenBatches?: boolean;
}

// A promise and its two settle functions without an executor closure a write.
let nextResolve: (value: unknown) => void = () => {};
let nextReject: (error: unknown) => void = () => {};
const capture = (resolve: (value: unknown) => void, reject: (error: unknown) => void): void => {
  nextResolve = resolve;
  nextReject = reject;
};

/** Runs what is given to its `then` as a microtask; also "nothing to wait for". */
const SETTLED: Promise<void> = Promise.resolve();

const nextTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

export class GroupCommit<A = unknown, B = unknown> {
  #pending: QueuedWrite<A, B>[] = [];
  /** The one run whose writes are pending, or null when several runs' are. */
  #pendingRun: string | null = null;
  /** The one run whose writes the last batch held, or null. */
  #lastRun: string | null = null;
  #immediateScheduled = false;
  #microtaskScheduled = false;
  #streak = 0;
  readonly #writer: BatchWriter<A, B>;
  readonly #sync: boolean;
  readonly #loneWriterStreak: number;
  readonly #turnBetweenBatches: boolean;
  /** Asynchronous writers: the batches being committed, one after another, until none is pending. */
  #draining: Promise<void> | undefined;
  /** Asynchronous writers: settles once the batch committing now has (never rejects). */
  #current: Promise<void> = SETTLED;
  /** Asynchronous writers: what `settled()` callers wait on for the writes pending now. */
  #pendingSettled: { promise: Promise<void>; resolve: () => void } | undefined;

  readonly #onTurn = () => {
    this.#immediateScheduled = false;
    this.#streak = 0;
    this.#due();
  };
  readonly #onMicrotask = () => {
    this.#microtaskScheduled = false;
    this.#due();
  };

  constructor(writer: BatchWriter<A, B>, options: GroupCommitOptions = {}) {
    this.#writer = writer;
    this.#sync = writer.sync;
    this.#loneWriterStreak = options.loneWriterStreak ?? 0;
    this.#turnBetweenBatches = options.turnBetweenBatches ?? false;
  }

  /**
   * Queue a write; the promise settles with its result once its batch has committed.
   * `awaited`: the caller waits for this commit before going on (an intent, a new run).
   */
  enqueue<T = void>(op: number, runId: string, a: A, b: B, awaited: boolean): Promise<T> {
    const promise = new Promise(capture); // the executor runs now: nextResolve and nextReject are this promise's
    this.#add(new QueuedWrite(op, runId, a, b, nextResolve, nextReject), awaited);
    return promise as Promise<T>;
  }

  /**
   * Queue a write nobody awaits: `done` or `failed` is called (synchronously, after its batch)
   * instead of a promise settling. Neither may throw: the rest of the batch is settled after it.
   */
  enqueueWithCallbacks(op: number, runId: string, a: A, b: B, done: () => void, failed: (error: unknown) => void): void {
    this.#add(new QueuedWrite<A, B>(op, runId, a, b, done, failed), false);
  }

  #add(write: QueuedWrite<A, B>, awaited: boolean): void {
    const runId = write.runId;
    if (this.#pending.length === 0) this.#pendingRun = runId;
    else if (this.#pendingRun !== runId) this.#pendingRun = null;
    this.#pending.push(write);
    if (awaited && this.#pendingRun === this.#lastRun && this.#pendingRun !== null && this.#streak < this.#loneWriterStreak) {
      if (!this.#microtaskScheduled) {
        this.#microtaskScheduled = true;
        this.#streak++;
        void SETTLED.then(this.#onMicrotask);
      }
    } else if (!this.#immediateScheduled && this.#draining === undefined) {
      // (While batches are being committed, the drain takes this write with the next one.)
      this.#immediateScheduled = true;
      setImmediate(this.#onTurn);
    }
  }

  #due(): void {
    if (this.#sync) this.flush();
    else void this.drain();
  }

  #take(): QueuedWrite<A, B>[] {
    const batch = this.#pending;
    this.#lastRun = this.#pendingRun;
    this.#pending = [];
    this.#pendingRun = null;
    return batch;
  }

  /** Synchronous writers: commit everything queued now. Called when the batch is due, and before any other transaction. */
  flush(): void {
    if (this.#pending.length === 0) return;
    const batch = this.#take();
    try {
      void this.#writer.write(batch); // a synchronous writer: it has committed when it returns
    } catch (error) {
      this.#failAll(batch, error);
      return;
    }
    this.#settle(batch);
  }

  /**
   * Asynchronous writers: commit what is queued now, without waiting for the batch to be due,
   * and any batch that follows it; resolves once none is pending (under steady load, maybe never:
   * see `settled`).
   */
  drain(): Promise<void> {
    if (this.#draining === undefined) {
      if (this.#pending.length === 0) return SETTLED;
      this.#draining = this.#drainAll();
    }
    return this.#draining;
  }

  async #drainAll(): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        const waiting = this.#pendingSettled;
        this.#pendingSettled = undefined;
        this.#current = this.#commit(this.#take(), waiting);
        await this.#current;
        if (this.#turnBetweenBatches) await nextTurn();
      }
    } finally {
      this.#draining = undefined;
      this.#writer.idle?.();
    }
  }

  /** Asynchronous writers: resolves once every write queued so far has committed or failed (not later ones). */
  settled(): Promise<void> {
    if (this.#pending.length === 0) return this.#current;
    if (this.#pendingSettled === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.#pendingSettled = { promise, resolve };
    }
    return this.#pendingSettled.promise;
  }

  async #commit(batch: QueuedWrite<A, B>[], waiting: { resolve: () => void } | undefined): Promise<void> {
    try {
      await this.#writer.write(batch);
    } catch (error) {
      this.#failAll(batch, error);
      waiting?.resolve();
      return;
    }
    this.#settle(batch);
    waiting?.resolve();
  }

  #failAll(batch: QueuedWrite<A, B>[], error: unknown): void {
    const writer = this.#writer;
    for (const write of batch) write.reject(writer.failed(error, write));
  }

  #settle(batch: QueuedWrite<A, B>[]): void {
    for (const write of batch) {
      if (write.refused === undefined) write.resolve(write.result);
      else write.reject(write.refused);
    }
  }
}
