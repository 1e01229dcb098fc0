/**
 * Group commit. Writes issued in the same turn of the event loop, by one run or by many,
 * are applied in one BEGIN IMMEDIATE transaction, so they share one fsync. No write's
 * promise resolves before that transaction commits.
 *
 * A lone writer does not wait for the turn to end. When the last commit held one run's writes
 * only, and that run now issues a write it waits for (an intent: its function cannot start
 * before it), the batch commits as soon as the current microtasks have run — with the outcome
 * its previous step left pending, and with any parallel steps' intents issued in the same
 * breath. Waiting for the event loop's next turn would add its cost (~10 µs on a small VM) to
 * every step of a sequential run, with nobody to share the commit with. Every
 * LONE_WRITER_STREAK such commits, one waits for the turn anyway, so timers (the lease's
 * heartbeat, a deadline) and signals still run during a long run of fast steps.
 *
 * A write that is refused on its own (a stale fence) is refused alone: each write checks
 * before it changes anything, so the others in the batch still commit. `beginBatch` runs first
 * inside each transaction (the store learns whether the fences it has checked still stand), and
 * `batchFailed` after a transaction that failed. A failure of the transaction itself (disk
 * full, I/O error) rejects every write in it: none was committed.
 */

import type { SqliteConnection } from "./drivers/connection.js";
import { SteplogError } from "../../base/errors.js";

/**
 * The store's own writes, applied by its `applyOp` from data (a step's intent and outcome: no
 * closure a write). Any other write is queued as a function (OP_CALL).
 */
export const OP_CALL = 0;

/** Applies a queued write of one of the store's own kinds: `op` (> 0) and its two arguments. */
export type OpApplier = (op: number, a: unknown, b: unknown) => unknown;
/** Names what a write of one of the store's own kinds records, for an error message. */
export type OpDescriber = (op: number, a: unknown, b: unknown) => string;

class PendingWrite {
  result: unknown = undefined;
  refused: unknown = undefined;
  constructor(
    /** OP_CALL: `a` is the function to apply and `b` what it records (a string, or a function building one). */
    readonly op: number,
    readonly runId: string,
    readonly a: unknown,
    readonly b: unknown,
    readonly resolve: (result: unknown) => void,
    readonly reject: (error: unknown) => void,
  ) {}
}

// A promise and its two settle functions without an executor closure a write.
let nextResolve: (value: unknown) => void = () => {};
let nextReject: (error: unknown) => void = () => {};
const capture = (resolve: (value: unknown) => void, reject: (error: unknown) => void): void => {
  nextResolve = resolve;
  nextReject = reject;
};

/** What the store adds to the queue: its own kinds of write, and what runs first in each batch and after one that failed. */
export interface WriteQueueHooks {
  applyOp?: OpApplier;
  describeOp?: OpDescriber;
  /** First thing inside each batch's transaction. */
  beginBatch?: () => void;
  /** After a batch's transaction failed (nothing of it was committed). */
  batchFailed?: () => void;
}

const noOps: OpApplier = (op) => {
  throw new Error(`steplog internal: the write queue has no applier for write ${op}`);
};

/** Runs what is given to its `then` as a microtask (flush never throws: it rejects writes instead). */
const SETTLED = Promise.resolve();

/** Commits a lone writer may make without letting the event loop turn. */
const LONE_WRITER_STREAK = 32;

export class WriteQueue {
  private readonly toError: (error: unknown, what: string, runId: string) => Error;
  #pending: PendingWrite[] = [];
  /** The one run whose writes are pending, or null when several runs' are. */
  #pendingRun: string | null = null;
  /** The one run whose writes the last commit held, or null. */
  #lastRun: string | null = null;
  #immediateScheduled = false;
  #microtaskScheduled = false;
  #streak = 0;
  /** Built once: the driver wraps the function in BEGIN IMMEDIATE … COMMIT. */
  readonly #commit: (batch: PendingWrite[]) => void;
  readonly #flushOnTurn = () => {
    this.#immediateScheduled = false;
    this.#streak = 0;
    this.flush();
  };
  readonly #flushNow = () => {
    this.#microtaskScheduled = false;
    this.flush();
  };

  readonly #describeOp: OpDescriber;
  readonly #batchFailed: () => void;

  constructor(db: SqliteConnection, toError: (error: unknown, what: string, runId: string) => Error, hooks: WriteQueueHooks = {}) {
    this.toError = toError;
    const applyOp = hooks.applyOp ?? noOps;
    const beginBatch = hooks.beginBatch ?? (() => {});
    this.#describeOp = hooks.describeOp ?? ((op) => `write ${op}`);
    this.#batchFailed = hooks.batchFailed ?? (() => {});
    this.#commit = db.transaction((batch: PendingWrite[]) => {
      beginBatch();
      for (const write of batch) {
        try {
          write.result = write.op === OP_CALL ? (write.a as () => unknown)() : applyOp(write.op, write.a, write.b);
        } catch (error) {
          // A refusal is one write's; anything else, or a refusal after SQLite rolled the whole
          // transaction back, fails the batch (the writes after it must not run outside it).
          if (!(error instanceof SteplogError) || !db.inTransaction) throw error;
          write.refused = error;
        }
      }
    }).immediate;
  }

  /**
   * Queue `apply` for the next commit; the promise settles with its result once committed.
   * `awaited`: the caller waits for this commit before going on (an intent, a new run).
   */
  enqueue<T = void>(what: string | (() => string), runId: string, apply: () => T, awaited = false): Promise<T> {
    return this.#push(OP_CALL, runId, apply, what, awaited) as Promise<T>;
  }

  /** Queue a write of one of the store's own kinds, applied by its applyOp(op, a, b). */
  enqueueOp(op: number, runId: string, a: unknown, b: unknown, awaited: boolean): Promise<void> {
    return this.#push(op, runId, a, b, awaited) as Promise<void>;
  }

  /**
   * Queue a write of one of the store's own kinds that nobody awaits: `done` or `failed` is
   * called (synchronously, after its batch) instead of a promise settling. Neither may throw:
   * the rest of the batch is settled after it.
   */
  enqueueOpWithCallbacks(op: number, runId: string, a: unknown, b: unknown, done: () => void, failed: (error: unknown) => void): void {
    this.#add(new PendingWrite(op, runId, a, b, done, failed), false);
  }

  #push(op: number, runId: string, a: unknown, b: unknown, awaited: boolean): Promise<unknown> {
    const promise = new Promise(capture); // the executor runs now: nextResolve and nextReject are this promise's
    this.#add(new PendingWrite(op, runId, a, b, nextResolve, nextReject), awaited);
    return promise;
  }

  #add(write: PendingWrite, awaited: boolean): void {
    const runId = write.runId;
    if (this.#pending.length === 0) this.#pendingRun = runId;
    else if (this.#pendingRun !== runId) this.#pendingRun = null;
    this.#pending.push(write);
    if (awaited && this.#pendingRun === this.#lastRun && this.#pendingRun !== null && this.#streak < LONE_WRITER_STREAK) {
      if (!this.#microtaskScheduled) {
        this.#microtaskScheduled = true;
        this.#streak++;
        // A resolved promise's reaction, not queueMicrotask: Node wraps each of those in an
        // AsyncResource, an object and two hook calls on every step of a sequential run.
        void SETTLED.then(this.#flushNow);
      }
    } else if (!this.#immediateScheduled) {
      this.#immediateScheduled = true;
      setImmediate(this.#flushOnTurn);
    }
  }

  #what(write: PendingWrite): string {
    if (write.op !== OP_CALL) return this.#describeOp(write.op, write.a, write.b);
    return typeof write.b === "string" ? write.b : (write.b as () => string)();
  }

  /** Commit everything queued now. Called when the batch is due, and before any other transaction. */
  flush(): void {
    if (this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#lastRun = this.#pendingRun;
    this.#pending = [];
    this.#pendingRun = null;
    try {
      this.#commit(batch);
    } catch (error) {
      this.#batchFailed();
      for (const write of batch) write.reject(this.toError(error, this.#what(write), write.runId));
      return;
    }
    for (const write of batch) {
      if (write.refused === undefined) write.resolve(write.result);
      else write.reject(write.refused);
    }
  }
}
