/**
 * What the SQLite store's two transactions on one run outside the group commit do inside them
 * (store.ts opens them, after flushing the queued writes): a claim, which takes the run's lease
 * for a new attempt, and a run update (send, cancel, …). A refusal is handed out in `out`, to
 * be thrown once the transaction has committed (so a refusal's own patch is kept).
 */

import { taken } from "../claim-result.js";
import { claimVerdict } from "../state-machine.js";
import type { ClaimJudge, ClaimResult, FlowQuery, LeaseRow, RunUpdate, StoredRun } from "../types.js";
import { flowFacts, loadRun } from "./reads.js";
import type { Statements } from "./sql.js";
import type { SqliteWrites } from "./writes.js";

/** Where a transaction leaves the refusal to throw after it. */
export type Refusal = { refusal?: Error };

export function claimInTransaction(
  stmts: Statements,
  writes: SqliteWrites,
  runId: string,
  decide: ClaimJudge,
  flow: FlowQuery | undefined,
  out: Refusal,
): ClaimResult {
  const current = loadRun(stmts, runId, true);
  if (!current) return { kind: "missing" };
  // In the claim's write transaction: no other claim commits between this count and the lease taken.
  if (flow) current.flow = flowFacts(stmts, runId, flow);
  const decision = claimVerdict(decide, current);
  if (decision.kind === "refuse") {
    if (decision.run) writes.patchRun(runId, decision.run);
    out.refusal = decision.error;
    return { kind: "missing" };
  }
  writes.patchRun(runId, decision.run);
  writes.insertAttempt(decision.attempt);
  const epoch = (current.lease?.epoch ?? 0) + 1;
  const lease: LeaseRow = { runId, epoch, attempt: decision.attempt.number, expiresAt: decision.expiresAt, heartbeatAt: decision.now };
  stmts.upsertLease.run(lease.runId, lease.epoch, lease.attempt, lease.expiresAt, lease.heartbeatAt);
  // A new attempt: its steps go in chunks of its own (a slot of an earlier attempt may be left
  // if it lost its lease here without ending).
  writes.runSlots.delete(runId);
  return taken(current, decision, lease);
}

export function updateInTransaction<T>(
  stmts: Statements,
  writes: SqliteWrites,
  runId: string,
  decide: (current: StoredRun) => RunUpdate<T>,
  out: Refusal,
): T | undefined {
  const current = loadRun(stmts, runId);
  if (!current) return undefined;
  const update = decide(current);
  if (update.error) {
    out.refusal = update.error;
    return undefined;
  }
  if (update.run) writes.patchRun(runId, update.run);
  for (const { seq, patch } of update.updateSteps ?? []) writes.patchStep(runId, seq, patch);
  for (const step of update.appendSteps ?? []) stmts.insertStep.run(step);
  if (update.appendSteps?.length) stmts.listSideChunk.run(runId);
  for (const event of update.appendEvents ?? []) stmts.insertEvent.run(event);
  if (update.fenceOut) stmts.fenceOut.run({ runId, heartbeatAt: update.fenceOut.now });
  return update.result;
}
