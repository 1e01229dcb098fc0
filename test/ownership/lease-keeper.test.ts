// The lease keeper on its own, under fake timers: when an attempt learns it lost its lease.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LeaseKeeper } from "../../src/ownership/lease-keeper.js";
import { memoryStore } from "../../src/entries/memory.js";
import { withOverrides } from "../helpers/stores.js";
import type { SteplogError } from "../../src/base/errors.js";

const clock = { now: () => Date.now() };
const lease = { runId: "r", epoch: 1, attempt: 1, expiresAt: 0 };

function keeper(renewLease: () => Promise<void>, leaseMs: number) {
  const store = withOverrides(memoryStore(), { renewLease: () => renewLease() });
  const lost: Array<{ at: number; error: SteplogError }> = [];
  const start = Date.now();
  const k = new LeaseKeeper({ store, clock, leaseMs }, { ...lease, expiresAt: start + leaseMs }, (error) => lost.push({ at: Date.now() - start, error }));
  k.start();
  return { k, lost };
}

describe("the lease keeper", () => {
  beforeEach(() => void vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => void vi.useRealTimers());

  it("renewals that fail at once (a store error): the attempt is told it lost the lease when the lease runs out, not a renewal later", async () => {
    // leaseMs 100: renewals at 33, 66, 99 fail; the lease runs out at 100, the next renewal would be at 132.
    const { k, lost } = keeper(() => Promise.reject(new Error("SQLITE_BUSY")), 100);
    await vi.advanceTimersByTimeAsync(99);
    expect(lost).toEqual([]);
    await vi.advanceTimersByTimeAsync(2);
    expect(lost).toHaveLength(1);
    expect(lost[0]!.at).toBe(100);
    expect(lost[0]!.error).toMatchObject({ code: "LEASE_LOST", runId: "r", attempt: 1 });
    expect(lost[0]!.error.message).toContain("renewal failed until the lease expired: SQLITE_BUSY");
    k.stop();
  });

  it("a failed renewal followed by one that is recorded: the lease is kept", async () => {
    let calls = 0;
    const { k, lost } = keeper(() => (++calls === 1 ? Promise.reject(new Error("busy")) : Promise.resolve()), 300);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(lost).toEqual([]);
    expect(calls).toBeGreaterThanOrEqual(9);
    k.stop();
  });

  it("renewals that succeed keep the lease as long as the attempt runs", async () => {
    const { k, lost } = keeper(() => Promise.resolve(), 100);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(lost).toEqual([]);
    k.stop();
  });

  it("a renewal refused because another attempt took the run: lost at once", async () => {
    const refused = Object.assign(new Error("fenced"), { code: "LEASE_LOST" });
    const { SteplogError } = await import("../../src/base/errors.js");
    const { k, lost } = keeper(() => Promise.reject(new SteplogError("LEASE_LOST", refused.message)), 300);
    await vi.advanceTimersByTimeAsync(101);
    expect(lost).toHaveLength(1);
    expect(lost[0]!.at).toBe(100);
    expect(lost[0]!.error.message).toContain("another attempt took the run over");
    k.stop();
  });
});
