/**
 * Group commit. Writes issued in the same turn of the event loop, by one run or by many,
 * are applied in one BEGIN IMMEDIATE transaction, so they share one fsync. No write's
 * promise resolves before that transaction commits.
 *
 * A write that is refused on its own (a stale fence) is refused alone: each write checks
 * before it changes anything, so the others in the batch still commit. A failure of the
 * transaction itself (disk full, I/O error) rejects every write in it: none was committed.
 */

import type Database from "better-sqlite3";
import { SteplogError } from "../../errors.js";

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

export class WriteQueue {
  #pending: PendingWrite[] = [];
  #scheduled = false;
  /** Built once: better-sqlite3 wraps the function in BEGIN IMMEDIATE … COMMIT. */
  readonly #commit: (batch: PendingWrite[]) => void;
  readonly #flush = () => this.flush();

  constructor(
    db: Database.Database,
    private readonly toError: (error: unknown, what: string, runId: string) => Error,
  ) {
    this.#commit = db.transaction((batch: PendingWrite[]) => {
      for (const write of batch) {
        try {
          write.result = write.apply();
        } catch (error) {
          if (!(error instanceof SteplogError)) throw error;
          write.refused = error;
        }
      }
    }).immediate;
  }

  /** Queue `apply` for the next commit; the promise settles with its result once committed. */
  enqueue<T = void>(what: string | (() => string), runId: string, apply: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ what, runId, apply, resolve: resolve as (result: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(this.#flush);
      }
    });
  }

  /** Commit everything queued now. Called by the timer, and before any other transaction. */
  flush(): void {
    this.#scheduled = false;
    if (this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    try {
      this.#commit(batch);
    } catch (error) {
      for (const write of batch) write.reject(this.toError(error, typeof write.what === "string" ? write.what : write.what(), write.runId));
      return;
    }
    for (const write of batch) {
      if (write.refused === undefined) write.resolve(write.result);
      else write.reject(write.refused);
    }
  }
}
