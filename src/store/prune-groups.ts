/**
 * What every store's pruneRuns does inside its transaction before it deletes anything: each
 * group's runs read as they are now (the ones still there), the engine's judge asked, and the
 * rows of the approved groups counted. The store then deletes the runs this returns.
 */

import type { PruneJudge, PrunedRows, StoredRun } from "./types.js";

export function chooseGroups(groups: string[][], load: (runId: string) => StoredRun | undefined, approve: PruneJudge): { runs: StoredRun[]; rows: PrunedRows } {
  const runs: StoredRun[] = [];
  const rows: PrunedRows = { ids: [], attempts: 0, steps: 0, events: 0 };
  const seen = new Set<string>();
  for (const group of groups) {
    const found: StoredRun[] = [];
    for (const id of group) {
      if (seen.has(id)) continue;
      const stored = load(id);
      if (stored) found.push(stored);
    }
    if (found.length === 0 || !approve(found)) continue;
    for (const stored of found) {
      seen.add(stored.run.id);
      runs.push(stored);
      rows.ids.push(stored.run.id);
      rows.attempts += stored.attempts.length;
      rows.steps += stored.steps.length;
      rows.events += stored.events.length;
    }
  }
  return { runs, rows };
}

/** chooseGroups with an asynchronous read (the Postgres store's). */
export async function chooseGroupsAsync(
  groups: string[][],
  load: (runId: string) => Promise<StoredRun | undefined>,
  approve: PruneJudge,
): Promise<{ runs: StoredRun[]; rows: PrunedRows }> {
  const loaded = new Map<string, StoredRun>();
  for (const group of groups) {
    for (const id of group) {
      if (loaded.has(id)) continue;
      const stored = await load(id);
      if (stored) loaded.set(id, stored);
    }
  }
  return chooseGroups(groups, (id) => loaded.get(id), approve);
}

/** What a prune that deleted nothing deleted. */
export const nonePruned = (): PrunedRows => ({ ids: [], attempts: 0, steps: 0, events: 0 });
