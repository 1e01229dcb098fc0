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

import type Database from "better-sqlite3";
import { SteplogError } from "../../base/errors.js";

interface PendingWrite {
  /** What the write records, for an error message (built only when one is needed). */
  what: string | (() => string);
  runId: string;
  apply: () => unknown;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
  result?: unknown;
  refused?: unknown;
}

/** Commits a lone writer may make without letting the event loop turn. */
const LONE_WRITER_STREAK = 32;

export class WriteQueue {
  #pending: PendingWrite[] = [];
  /** The one run whose writes are pending, or null when several runs' are. */
  #pendingRun: string | null = null;
  /** The one run whose writes the last commit held, or null. */
  #lastRun: string | null = null;
  #immediateScheduled = false;
  #microtaskScheduled = false;
  #streak = 0;
  /** Built once: better-sqlite3 wraps the function in BEGIN IMMEDIATE … COMMIT. */
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

  constructor(
    db: Database.Database,
    private readonly toError: (error: unknown, what: string, runId: string) => Error,
    beginBatch: () => void = () => {},
    private readonly batchFailed: () => void = () => {},
  ) {
    this.#commit = db.transaction((batch: PendingWrite[]) => {
      beginBatch();
      for (const write of batch) {
        try {
          write.result = write.apply();
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
    return new Promise<T>((resolve, reject) => {
      if (this.#pending.length === 0) this.#pendingRun = runId;
      else if (this.#pendingRun !== runId) this.#pendingRun = null;
      // Every field set here: a write's shape does not change when its result is kept.
      this.#pending.push({ what, runId, apply, resolve: resolve as (result: unknown) => void, reject, result: undefined, refused: undefined });
      if (awaited && this.#pendingRun === this.#lastRun && this.#pendingRun !== null && this.#streak < LONE_WRITER_STREAK) {
        if (!this.#microtaskScheduled) {
          this.#microtaskScheduled = true;
          this.#streak++;
          queueMicrotask(this.#flushNow);
        }
      } else if (!this.#immediateScheduled) {
        this.#immediateScheduled = true;
        setImmediate(this.#flushOnTurn);
      }
    });
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
      this.batchFailed();
      for (const write of batch) write.reject(this.toError(error, typeof write.what === "string" ? write.what : write.what(), write.runId));
      return;
    }
    for (const write of batch) {
      if (write.refused === undefined) write.resolve(write.result);
      else write.reject(write.refused);
    }
  }
}
