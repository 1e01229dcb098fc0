/** What a store hands back when a claim takes the lease: the run as it now stands, and the lease. */

import type { ClaimDecision, ClaimResult, LeaseRow, StoredRun } from "./types.js";

export function taken(current: StoredRun, decision: ClaimDecision & { kind: "take" }, lease: LeaseRow): ClaimResult {
  const state: StoredRun = {
    run: { ...current.run, ...decision.run },
    attempts: [...current.attempts, decision.attempt],
    steps: current.steps,
    events: current.events,
    lease,
  };
  return { kind: "taken", state, lease: { runId: lease.runId, epoch: lease.epoch, attempt: decision.attempt.number, expiresAt: decision.expiresAt } };
}
