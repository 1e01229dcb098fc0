/**
 * engine.prune's options and the rule for which runs it may delete (pruneJudge), the same rule
 * the listing picks by and each store transaction asks again. Never a run that has not ended
 * (nor one an attempt holds), nor, unless the options name them, a dead-lettered run or one
 * with an open escalation (`status` naming "dead-lettered" or "escalated"); a group (a run and
 * its child runs) goes whole, each of its runs ended before the cut-off.
 */

import { InvalidOptionError } from "../base/errors.js";
import type { KnownKeys } from "../base/options.js";
import { latestRows } from "../store/latest-rows.js";
import { ENDED_STATUSES, type PruneJudge, type RunStatus, type StoredRun } from "../store/types.js";

/** The statuses prune and retention may name: the ended ones, and "escalated" (runs with an open escalation). */
export type PruneStatus = "completed" | "failed" | "stopped" | "timed-out" | "cancelled" | "compensated" | "dead-lettered" | "escalated";

export const PRUNE_STATUSES: readonly PruneStatus[] = ["completed", "failed", "stopped", "timed-out", "cancelled", "compensated", "dead-lettered", "escalated"];

/** What prune deletes without a `status`: every ended run but the dead-lettered ones. */
export const DEFAULT_PRUNE_STATUSES: readonly PruneStatus[] = ["completed", "failed", "stopped", "timed-out", "cancelled", "compensated"];

export interface PruneOptions {
  /** Prune runs that ended before this time (a Date, or ms since the epoch). Required. */
  endedBefore: Date | number;
  /**
   * Only runs with this status (or one of these). Default every ended status but
   * "dead-lettered". A dead-lettered run is pruned only when "dead-lettered" is named; a run
   * with an open escalation (an escalated run, or a cancelled one whose escalation is
   * unresolved) only when "escalated" is named.
   */
  status?: PruneStatus | PruneStatus[];
  /** Only runs of this workflow (their child runs go with them, whatever their workflow). */
  workflow?: string;
  /** Count what would be deleted, and delete nothing. */
  dryRun?: boolean;
}

/** What prune deleted (with `dryRun`: would delete), by kind of row. */
export interface PruneResult {
  dryRun: boolean;
  runs: number;
  attempts: number;
  steps: number;
  events: number;
}

export const PRUNE_KEYS: KnownKeys<PruneOptions> = { endedBefore: true, status: true, workflow: true, dryRun: true };

export interface CheckedPrune {
  endedBefore: number;
  statuses: RunStatus[];
  workflow: string | undefined;
  dryRun: boolean;
}

export function checkPruneOptions(options: PruneOptions): CheckedPrune {
  const { endedBefore, status, workflow, dryRun } = options ?? ({} as PruneOptions);
  const at = endedBefore instanceof Date ? endedBefore.getTime() : endedBefore;
  if (typeof at !== "number" || !Number.isFinite(at)) {
    throw new InvalidOptionError(
      `prune: endedBefore must be a Date or ms since the epoch, got ${endedBefore === undefined ? "none" : String(endedBefore)}; ` +
        `for runs that ended over 30 days ago: engine.prune({ endedBefore: Date.now() - 30 * 86_400_000 }). Nothing was deleted.`,
    );
  }
  const statuses = status === undefined ? [...DEFAULT_PRUNE_STATUSES] : Array.isArray(status) ? status : [status];
  for (const s of statuses) checkPruneStatus("prune: status", s);
  if (statuses.length === 0)
    throw new InvalidOptionError(`prune: status names no status; name one of ${PRUNE_STATUSES.join(", ")}, or leave it out. Nothing was deleted.`);
  if (workflow !== undefined && (typeof workflow !== "string" || workflow === "")) {
    throw new InvalidOptionError(`prune: workflow must be a workflow's name, got ${JSON.stringify(workflow)}. Nothing was deleted.`);
  }
  if (dryRun !== undefined && typeof dryRun !== "boolean") throw new InvalidOptionError(`prune: dryRun must be true or false, got ${JSON.stringify(dryRun)}.`);
  return { endedBefore: Math.floor(at), statuses: [...new Set(statuses)], workflow, dryRun: dryRun === true };
}

export function checkPruneStatus(where: string, status: unknown): asserts status is PruneStatus {
  if (typeof status === "string" && (PRUNE_STATUSES as readonly string[]).includes(status)) return;
  const hint =
    typeof status === "string" && !ENDED_STATUSES.includes(status as RunStatus) && status !== "escalated"
      ? ` (a ${status} run has not ended, and is never pruned)`
      : "";
  throw new InvalidOptionError(
    `${where}: ${JSON.stringify(status)} is not a status a run can be pruned in${hint}; name one of ${PRUNE_STATUSES.join(", ")}. Nothing was deleted.`,
  );
}

/** Whether a step of the run waits for a person's answer (its latest row is escalated). */
export function hasOpenEscalation(stored: StoredRun): boolean {
  return latestRows(stored.steps, (row) => row.status === "escalated").length > 0;
}

/** Whether a group (its first run, then its child runs) may be deleted now. */
export function pruneJudge(checked: CheckedPrune): PruneJudge {
  const named = new Set<string>(checked.statuses);
  const gone = (stored: StoredRun): boolean => {
    const { run, lease } = stored;
    if (run.updatedAt >= checked.endedBefore) return false;
    if (lease && lease.attempt !== null) return false;
    if (run.status === "escalated" || run.status === "dead-lettered") return named.has(run.status);
    if (!ENDED_STATUSES.includes(run.status)) return false;
    return named.has("escalated") || !hasOpenEscalation(stored);
  };
  return (group) => {
    const first = group[0]!.run;
    if (!named.has(first.status)) return false;
    if (checked.workflow !== undefined && first.workflow !== checked.workflow) return false;
    return group.every(gone);
  };
}
