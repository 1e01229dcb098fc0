/**
 * The attempts this engine runs in this process: each known as running until it, and a saga
 * that follows it (onFailure: "compensate"), ends. A cancel, a close or a signal reaches them
 * here; the signal handlers are installed only while one runs.
 */

import { RunCancelledError, SteplogError } from "../base/errors.js";
import type { Attempt, RunResult } from "../steps/attempt.js";
import { SignalHandlers } from "./signal-handlers.js";

/** An attempt running in this process, and its result (with the saga that may follow it). */
export interface RunningAttempt {
  attempt: Attempt;
  done: Promise<RunResult>;
}

export class RunningAttempts {
  readonly #entries = new Set<RunningAttempt>();
  readonly #signals: SignalHandlers | undefined;
  /** The saga of a run whose attempt failed, claimed at once (claim-and-run.ts). */
  readonly #compensate: (runId: string) => Promise<RunResult>;

  constructor(compensate: (runId: string) => Promise<RunResult>, handleSignals: boolean) {
    this.#compensate = compensate;
    if (handleSignals) {
      this.#signals = new SignalHandlers(
        (signal) => this.cancelAll(`received ${signal}`),
        () => this.#entries.size,
      );
    }
  }

  /** The run's attempt running in this engine, if one is. */
  of(runId: string): RunningAttempt | undefined {
    return [...this.#entries].find((entry) => entry.attempt.runId === runId);
  }

  /**
   * Run the attempt here, known as running until it (and a saga that follows it) ends. Plain
   * handlers rather than an async wrapper or then-then-finally: every run in flight holds them.
   */
  run(attempt: Attempt, args: unknown): Promise<RunResult> {
    // The handlers run after this returns, by when `entry` below is made.
    const done: Promise<RunResult> = attempt.run(args).then(
      (result) => {
        if (!needsSaga(attempt, result)) {
          this.#ended(entry);
          return result;
        }
        return this.#compensateAfter(result).finally(() => this.#ended(entry));
      },
      (error: unknown) => {
        this.#ended(entry);
        throw error;
      },
    );
    const entry: RunningAttempt = { attempt, done };
    this.#entries.add(entry);
    this.#signals?.install();
    return done;
  }

  /** Cancel every attempt running here; settled when they have all ended. */
  cancelAll(reason: string): Promise<unknown> {
    for (const { attempt } of this.#entries) {
      attempt.endWith("cancelled", new RunCancelledError(attempt.runId, attempt.lastEntered, reason));
    }
    return Promise.allSettled([...this.#entries].map((entry) => entry.done));
  }

  /** The engine is closed: no handlers are left installed. */
  uninstallSignals(): void {
    this.#signals?.uninstall();
  }

  #ended(entry: RunningAttempt): void {
    this.#entries.delete(entry);
    if (this.#entries.size === 0) this.#signals?.uninstall();
  }

  /** onFailure: "compensate": a failed attempt is followed at once by the saga (unless past the pivot). */
  async #compensateAfter(result: RunResult): Promise<RunResult> {
    try {
      const saga = await this.#compensate(result.id);
      return saga.status === "compensated" ? { ...result, runStatus: "compensated" } : result;
    } catch (error) {
      if (error instanceof SteplogError && error.code === "PAST_PIVOT") return result;
      throw error;
    }
  }
}

/** Whether a failed attempt is followed at once by the saga (onFailure: "compensate"; not after a lost lease). */
function needsSaga(attempt: Attempt, result: RunResult): boolean {
  return attempt.plan.mode === "run" && attempt.workflow.onFailure === "compensate" && result.status === "failed" && result.error?.code !== "LEASE_LOST";
}
