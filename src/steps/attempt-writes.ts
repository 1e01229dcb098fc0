/**
 * The attempt's writes to the step log: each fenced by its lease (the store refuses it once
 * another attempt holds the run, and the attempt then ends LEASE_LOST), the group-committed
 * outcomes counted until they settle, and all of them awaited before the attempt's ending is
 * written. step-log.ts writes rows through these.
 */

import { LeaseLostError, SteplogError, StoreWriteFailedError } from "../base/errors.js";
import type { Clock } from "../base/clock.js";
import type { RuntimeStore } from "../store/runtime.js";
import type { Lease, StepOutcome } from "../store/types.js";
import type { AttemptEnding, EndReason } from "./attempt-ending.js";

export class AttemptWrites {
  readonly runId: string;
  readonly fence: Lease;
  readonly store: RuntimeStore;
  readonly #ending: AttemptEnding;
  #nextSeq: number;
  /** Group-committed writes not yet settled, and who waits for them all. */
  #tracked = 0;
  #drained: { promise: Promise<void>; resolve: () => void } | undefined = undefined;
  /** The first group-committed write that failed (reported to #onTrackedFailed, so never an unhandled rejection). */
  #failedWrite: Error | undefined = undefined;

  constructor(store: RuntimeStore, fence: Lease, runId: string, ending: AttemptEnding, nextSeq: number) {
    this.store = store;
    this.fence = fence;
    this.runId = runId;
    this.#ending = ending;
    this.#nextSeq = nextSeq;
  }

  /** The seq of the next row this attempt writes. */
  nextSeq(): number {
    return this.#nextSeq++;
  }

  /** What a failed write means for the attempt: a refused fence ends it (LEASE_LOST). Returns the error to throw. */
  failed(error: unknown): unknown {
    if (error instanceof SteplogError && error.code === "LEASE_LOST") {
      const named = new LeaseLostError(this.runId, this.fence.attempt, "another attempt took the run over");
      this.#ending.endWith("lease-lost", named);
      return named;
    }
    return error;
  }

  /** Await one of this attempt's writes; a refused fence means the lease is lost. */
  async write(write: Promise<void>): Promise<void> {
    try {
      await write;
    } catch (error) {
      throw this.failed(error);
    }
  }

  /**
   * A fenced write committed before a function is called again without a new intent of its own
   * (a compensation cut off by a crash is run again on its old row): refused, and the attempt
   * ended LEASE_LOST, if another attempt took the run meanwhile, as a new intent would be.
   */
  async confirmLease(clock: Clock, leaseMs: number): Promise<void> {
    const now = clock.now();
    await this.write(this.store.renewLease(this.fence, now + leaseMs, now));
    const ended = this.#ending.reason;
    if (ended) throw ended.error;
  }

  /**
   * Write an outcome nobody awaits now (group commit); the ending waits for it. The store calls
   * one of the two handlers back when it has committed or failed (perf: no promise a step).
   */
  writeLater(outcome: StepOutcome): void {
    this.#tracked++;
    this.store.writeOutcomeLater(this.fence, outcome, this.#onTrackedSettled, this.#onTrackedFailed);
  }

  /** Track a write nobody awaits now (a stream's records, and the work before them): the ending waits for it. */
  track(write: Promise<unknown>): void {
    this.#tracked++;
    write.then(this.#onTrackedSettled, this.#onTrackedFailed);
  }

  /** Count a write not issued yet (a stream's gathered records): the ending waits for it until it is given to `trackReserved`. */
  reserve(): void {
    this.#tracked++;
  }

  /** Track the write counted by an earlier `reserve`. */
  trackReserved(write: Promise<unknown>): void {
    write.then(this.#onTrackedSettled, this.#onTrackedFailed);
  }

  /**
   * The handlers, made once. The store may call one from inside any later call on it (its batch
   * commits then), so they only count and note: they never throw, and never call the store.
   */
  readonly #onTrackedSettled = (): void => {
    if (--this.#tracked > 0 || !this.#drained) return;
    const { resolve } = this.#drained;
    this.#drained = undefined;
    resolve();
  };
  readonly #onTrackedFailed = (error: unknown): void => {
    this.#failedWrite ??= error as Error;
    this.#onTrackedSettled();
  };

  /**
   * The attempt's end reason, ending it first if a group-committed outcome failed to be written:
   * the next continue re-drives that step and would then run everything after it again, so no
   * later function may be called in this attempt. Asked just before a function is called (a
   * write failing in the same batch as that step's intent is thrown by the intent instead).
   */
  endIfFailed(): EndReason | undefined {
    const failed = this.#failedWrite;
    if (failed !== undefined && !this.#ending.reason) {
      const named = this.failed(failed);
      if (!this.#ending.reason) {
        this.#ending.endWith(
          "failed",
          named instanceof SteplogError ? named : new StoreWriteFailedError(this.store.location, "a step's outcome", { runId: this.runId, cause: named }),
        );
      }
    }
    return this.#ending.reason;
  }

  /** Wait for every group-committed write; the first that failed, if one did. */
  async settlePending(): Promise<SteplogError | Error | undefined> {
    if (this.#tracked > 0) {
      if (!this.#drained) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        this.#drained = { promise, resolve };
      }
      await this.#drained.promise;
    }
    return this.#failedWrite;
  }
}
