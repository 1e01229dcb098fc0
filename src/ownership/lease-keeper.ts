/**
 * Renews an attempt's lease every third of `leaseMs`. If the store says the epoch moved
 * (another attempt took over), renewals keep failing until the lease would have expired, or
 * the lease expires while a renewal is still waiting for the store (a network partition can
 * hold a query for many minutes), the attempt is told it lost the lease and stops: another
 * process may take the run from then on, so the running step's signal must be aborted now.
 */

import { LeaseLostError, SteplogError } from "../base/errors.js";
import type { Clock } from "../base/clock.js";
import type { Lease, Store } from "../store/types.js";

/** What the keeper needs of the engine's settings. */
export interface KeeperSettings {
  readonly store: Store;
  readonly clock: Clock;
  readonly leaseMs: number;
}

export class LeaseKeeper {
  #timer: NodeJS.Timeout | undefined;
  /** Fires when the lease runs out; moved on by each renewal that is recorded. */
  #deadline: NodeJS.Timeout | undefined;
  #expiresAt: number;
  #renewing = false;
  /** When the renewal under way was sent. */
  #renewingSince = 0;
  /** Why the last renewal failed, if it did (cleared by one that is recorded). */
  #lastFailure: Error | undefined;

  constructor(
    private readonly settings: KeeperSettings,
    private readonly lease: Lease,
    private readonly onLost: (error: SteplogError) => void,
  ) {
    this.#expiresAt = lease.expiresAt;
  }

  get #every(): number {
    return Math.max(10, Math.floor(this.settings.leaseMs / 3));
  }

  start(): void {
    this.#timer = setInterval(() => void this.#renew(), this.#every);
    this.#timer.unref();
    this.#armDeadline();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#deadline) clearTimeout(this.#deadline);
    this.#deadline = undefined;
  }

  #armDeadline(): void {
    if (this.#deadline) clearTimeout(this.#deadline);
    this.#deadline = setTimeout(() => this.#onDeadline(), Math.max(0, this.#expiresAt - this.settings.clock.now()));
    this.#deadline.unref();
  }

  /**
   * The lease ran out. With a renewal that has waited for the store a renewal interval or more,
   * the store cannot be reached: the attempt stops. With none under way after one that failed,
   * the lease is gone unrenewed: the attempt stops now, not at the next renewal (up to a third
   * of a lease later, while a claimer may already have taken the run). With none tried (the
   * event loop was held past the deadline), or one only just sent, that renewal decides; it gets
   * a lease's time to answer.
   */
  #onDeadline(): void {
    this.#deadline = undefined;
    if (this.#timer === undefined) return;
    if (!this.#renewing) {
      const failure = this.#lastFailure;
      if (failure === undefined) return;
      this.stop();
      this.onLost(new LeaseLostError(this.lease.runId, this.lease.attempt, `renewal failed until the lease expired: ${failure.message}`));
      return;
    }
    const waited = this.settings.clock.now() - this.#renewingSince;
    if (waited < this.#every) {
      this.#deadline = setTimeout(() => this.#onDeadline(), this.settings.leaseMs - waited);
      this.#deadline.unref();
      return;
    }
    this.stop();
    this.onLost(
      new LeaseLostError(this.lease.runId, this.lease.attempt, "its lease expired while a renewal was still waiting for the store (is it reachable?)"),
    );
  }

  async #renew(): Promise<void> {
    if (this.#renewing) return;
    this.#renewing = true;
    const now = this.settings.clock.now();
    this.#renewingSince = now;
    const expiresAt = now + this.settings.leaseMs;
    try {
      await this.settings.store.renewLease(this.lease, expiresAt, now);
      if (this.#timer === undefined) return; // stopped meanwhile (the attempt ended, or lost the lease)
      this.#lastFailure = undefined;
      this.#expiresAt = expiresAt;
      this.#armDeadline();
    } catch (error) {
      if (error instanceof SteplogError && error.code === "LEASE_LOST") {
        this.stop();
        this.onLost(new LeaseLostError(this.lease.runId, this.lease.attempt, "its renewal was refused: another attempt took the run over"));
      } else if (this.#timer === undefined) {
        // stopped meanwhile
      } else if (this.settings.clock.now() >= this.#expiresAt) {
        // Could not renew in time: act as if lost, since another process may now take over.
        this.stop();
        this.onLost(new LeaseLostError(this.lease.runId, this.lease.attempt, `renewal failed until the lease expired: ${(error as Error).message}`));
      } else {
        this.#lastFailure = error instanceof Error ? error : new Error(String(error));
      }
    } finally {
      this.#renewing = false;
    }
  }
}
