/**
 * engine.prune: ended runs deleted with every row they own, in small batches. The runs are found
 * by listing (newest first, from the cut-off back, a page at a time); each is handed to the
 * store as a group's first run, and the store reads it with its child runs at every depth: a
 * group deleted whole or not at all. A child whose parent is in the store is pruned with it,
 * never alone. Each batch is one store transaction (pruneRuns), which reads the runs there and
 * asks the judge (pruneJudge) before it deletes: a run continued since it was listed is kept. Between batches the event loop turns, so the attempts of this
 * process write their steps, and another process's writers wait at most for one batch.
 */

import { PruneUnsupportedError } from "../base/errors.js";
import { fault } from "../base/faults.js";
import { checkKnownKeys } from "../base/options.js";
import { chooseGroupsAsync } from "../store/prune-groups.js";
import type { RunCursor, RunListing } from "../store/types.js";
import type { EngineCore } from "./engine-core.js";
import { checkPruneOptions, pruneJudge, PRUNE_KEYS, type PruneOptions, type PruneResult } from "./prune-options.js";

/** Runs listed per page while looking for runs to prune (a page is read in one go, holding up this process's writers: 500 took about five times a batch's time). */
const PAGE = 100;
/** Groups (a run with its child runs) per transaction (bench/run.mjs, case 13: a writer's slowest step beside a prune). */
export const PRUNE_BATCH_RUNS = 25;

/** What a caller inside steplog may add: a check between batches (false stops the prune), the batch size. */
export interface PruneHooks {
  between?: () => Promise<boolean>;
  batchRuns?: number;
}

export async function prune(core: EngineCore, options: PruneOptions, hooks: PruneHooks = {}): Promise<PruneResult> {
  core.open();
  checkKnownKeys("prune", options, PRUNE_KEYS);
  const checked = checkPruneOptions(options);
  const store = core.store;
  if (!store.prunes) throw new PruneUnsupportedError(store.kind, store.location);
  const approve = pruneJudge(checked);
  const result: PruneResult = { dryRun: checked.dryRun, runs: 0, attempts: 0, steps: 0, events: 0 };
  const batchRuns = hooks.batchRuns ?? PRUNE_BATCH_RUNS;
  let batch: string[] = [];
  let inBatch = 0;
  let batches = 0;
  let stopped = false;
  const flush = async () => {
    if (batch.length === 0) return;
    const groups = batch;
    batch = [];
    inBatch = 0;
    const rows = checked.dryRun
      ? await chooseGroupsAsync(
          groups,
          { load: (id) => store.loadRun(id), children: async (id) => (await store.listRuns({ parent: id })).map((l) => l.run.id) },
          approve,
        )
      : await store.pruneRuns(groups, approve);
    result.runs += rows.ids.length;
    result.attempts += rows.attempts;
    result.steps += rows.steps;
    result.events += rows.events;
    fault("after-prune-batch", String(++batches));
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (hooks.between && !(await hooks.between())) stopped = true;
  };
  // Runs created at or after the cut-off ended after it: the listing starts there.
  let cursor: RunCursor = { createdAt: checked.endedBefore, id: "" };
  while (!stopped) {
    // By the keyset alone (an index's order on every store), status and workflow read here: a
    // listing filtered by status sorts every run of those statuses again for each page (seconds
    // on SQLite at 100,000 runs, holding the writers up).
    const page: RunListing[] = await store.listRuns({ after: cursor, limit: PAGE });
    for (const { run } of page) {
      if (stopped) break;
      if (run.updatedAt >= checked.endedBefore || !checked.statuses.includes(run.status)) continue;
      if (checked.workflow !== undefined && run.workflow !== checked.workflow) continue;
      // A child run goes with its parent (or stays with it): only one whose parent is gone is a group's first.
      if (run.parent !== null && (await store.loadRunRow(run.parent)) !== undefined) continue;
      batch.push(run.id);
      if (++inBatch >= batchRuns) await flush();
    }
    if (page.length < PAGE) break;
    const last = page.at(-1)!.run;
    cursor = { createdAt: last.createdAt, id: last.id };
  }
  if (!stopped) await flush();
  return result;
}
