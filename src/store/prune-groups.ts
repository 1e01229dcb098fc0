/**
 * What every store's pruneRuns does inside its transaction before it deletes anything: each
 * group read as it is now (its first run, then that run's child runs at every depth, found by
 * their `parent`), the engine's judge asked, and the rows of the approved groups counted. The
 * store then deletes the runs this returns.
 */

import type { PruneJudge, PrunedRows, StoredRun } from "./types.js";

/** How a store reads for a prune: one run, and the ids of a run's child runs. */
export interface PruneReads<R = StoredRun | undefined, C = string[]> {
  load: (runId: string) => R;
  children: (runId: string) => C;
}

export function chooseGroups(firsts: string[], reads: PruneReads, approve: PruneJudge): PrunedRows {
  const rows = nonePruned();
  const seen = new Set<string>();
  for (const first of firsts) {
    if (seen.has(first)) continue;
    const group: StoredRun[] = [];
    const ids = [first];
    for (let i = 0; i < ids.length; i++) {
      const stored = reads.load(ids[i]!);
      if (!stored) continue;
      group.push(stored);
      for (const child of reads.children(ids[i]!)) if (!ids.includes(child)) ids.push(child);
    }
    if (group.length === 0 || !approve(group)) continue;
    for (const stored of group) {
      seen.add(stored.run.id);
      rows.ids.push(stored.run.id);
      rows.attempts += stored.attempts.length;
      rows.steps += stored.steps.length;
      rows.events += stored.events.length;
    }
  }
  return rows;
}

/** chooseGroups with asynchronous reads (the Postgres store's, a dry run's). */
export async function chooseGroupsAsync(
  firsts: string[],
  reads: PruneReads<Promise<StoredRun | undefined>, Promise<string[]>>,
  approve: PruneJudge,
): Promise<PrunedRows> {
  const loaded = new Map<string, StoredRun>();
  const kids = new Map<string, string[]>();
  const pending = [...firsts];
  while (pending.length > 0) {
    const id = pending.shift()!;
    if (loaded.has(id) || kids.has(id)) continue;
    const stored = await reads.load(id);
    kids.set(id, stored ? await reads.children(id) : []);
    if (stored) loaded.set(id, stored);
    pending.push(...kids.get(id)!);
  }
  return chooseGroups(firsts, { load: (id) => loaded.get(id), children: (id) => kids.get(id) ?? [] }, approve);
}

/** What a prune that deleted nothing deleted. */
export const nonePruned = (): PrunedRows => ({ ids: [], attempts: 0, steps: 0, events: 0 });
