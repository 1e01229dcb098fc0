/**
 * Renews an attempt's lease every third of `leaseMs`. If the store says the epoch moved
 * (another attempt took over) or renewals keep failing until the lease would have expired,
 * the attempt is told it lost the lease and stops: it records nothing more.
 */

import { LeaseLostError, SteplogError } from "./errors.js";
import type { EngineSettings } from "./engine-settings.js";
import type { Lease } from "./store/types.js";

export class LeaseKeeper {
  #timer: NodeJS.Timeout | undefined;
  #expiresAt: number;
  #renewing = false;

  constructor(
    private readonly settings: EngineSettings,
    private readonly lease: Lease,
    private readonly onLost: (error: SteplogError) => void,
  ) {
    this.#expiresAt = lease.expiresAt;
  }

  start(): void {
    const every = Math.max(10, Math.floor(this.settings.leaseMs / 3));
    this.#timer = setInterval(() => void this.#renew(), every);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #renew(): Promise<void> {
    if (this.#renewing) return;
    this.#renewing = true;
    const now = this.settings.clock.now();
    const expiresAt = now + this.settings.leaseMs;
    try {
      await this.settings.store.renewLease(this.lease, expiresAt, now);
      this.#expiresAt = expiresAt;
    } catch (error) {
      if (error instanceof SteplogError && error.code === "LEASE_LOST") {
        this.stop();
        this.onLost(new LeaseLostError(this.lease.runId, this.lease.attempt, "its renewal was refused: another attempt took the run over"));
      } else if (this.settings.clock.now() >= this.#expiresAt) {
        // Could not renew in time: act as if lost, since another process may now take over.
        this.stop();
        this.onLost(new LeaseLostError(this.lease.runId, this.lease.attempt, `renewal failed until the lease expired: ${(error as Error).message}`));
      }
    } finally {
      this.#renewing = false;
    }
  }
}
