/**
 * engine.list and engine.count: runs read a page at a time, and counted, under a filter. The
 * store filters and counts what it records; `interrupted` is derived here (a `running` row whose
 * owner is gone), so a filter that names one of `running` and `interrupted` but not the other
 * judges the store's running rows one by one.
 */

import { InvalidOptionError } from "../base/errors.js";
import { summarize, type Judge, type RunSummary } from "../operations/views.js";
import type { RuntimeStore } from "../store/runtime.js";
import { listLimit } from "../store/state-machine.js";
import type { RunFilter, RunStatus, WorkflowCount } from "../store/types.js";
import { checkName } from "../workflow/names.js";
import type { ListFilter, RunCount } from "./api.js";

/** How many rows a filtered listing reads from the store at a time while it judges running rows. */
const JUDGED_PAGE = 200;

/** The store's filter for a listing, and the statuses asked for (undefined: any). */
interface Wanted {
  stored: RunFilter;
  statuses: RunStatus[] | undefined;
  /** The store's status filter is the answer's (no running row to judge). */
  exact: boolean;
}

export async function listRuns(store: RuntimeStore, judge: Judge, filter: ListFilter, what = "list"): Promise<RunSummary[]> {
  const { stored, statuses, exact } = await wanted(store, filter, what);
  const limit = listLimit(filter.limit);
  const matches = (summary: RunSummary) => statuses === undefined || statuses.includes(summary.status);
  if (exact || limit === undefined) {
    const listings = await store.listRuns(limit === undefined ? stored : { ...stored, limit });
    return listings.map((listing) => summarize(listing, judge)).filter(matches);
  }
  if (limit === 0) return [];
  // Some running rows are left out once judged: read on, a page at a time, until the limit is reached.
  const found: RunSummary[] = [];
  let page = stored;
  for (;;) {
    const listings = await store.listRuns({ ...page, limit: Math.max(limit, JUDGED_PAGE) });
    for (const listing of listings) {
      const summary = summarize(listing, judge);
      if (matches(summary)) found.push(summary);
      if (found.length === limit) return found;
    }
    if (listings.length < Math.max(limit, JUDGED_PAGE)) return found;
    const last = listings.at(-1)!.run;
    page = { ...stored, after: { createdAt: last.createdAt, id: last.id } };
  }
}

export async function countRuns(store: RuntimeStore, judge: Judge, filter: ListFilter): Promise<RunCount> {
  const { stored, statuses, exact } = await wanted(store, filter, "count");
  const counts: WorkflowCount[] = [];
  if (exact) counts.push(...(await store.countRuns(stored)));
  else {
    // The recorded statuses are counted by the store; its running rows are judged.
    const recorded = statuses!.filter((s) => s !== "running");
    if (recorded.length > 0) counts.push(...(await store.countRuns({ ...stored, status: recorded })));
    for (const listing of await store.listRuns({ ...stored, status: ["running"] })) {
      if (statuses!.includes(summarize(listing, judge).status)) counts.push({ workflow: listing.run.workflow, runs: 1 });
    }
  }
  const byWorkflow = new Map<string, number>();
  for (const { workflow, runs } of counts) byWorkflow.set(workflow, (byWorkflow.get(workflow) ?? 0) + runs);
  const workflows = [...byWorkflow]
    .map(([workflow, runs]) => ({ workflow, runs }))
    .sort((a, b) => (a.workflow < b.workflow ? -1 : a.workflow > b.workflow ? 1 : 0));
  return { runs: workflows.reduce((sum, w) => sum + w.runs, 0), workflows };
}

async function wanted(store: RuntimeStore, filter: ListFilter, what: string): Promise<Wanted> {
  const statuses = filter.status === undefined ? undefined : Array.isArray(filter.status) ? filter.status : [filter.status];
  const stored: RunFilter = {};
  // `interrupted` is derived from `running` rows whose owner is gone.
  if (statuses) stored.status = statuses.includes("interrupted") && !statuses.includes("running") ? [...statuses, "running"] : statuses;
  if (filter.workflow !== undefined) stored.workflow = filter.workflow;
  if (filter.parent !== undefined) stored.parent = checkName("run id", filter.parent);
  if (filter.idContains !== undefined) stored.idContains = String(filter.idContains);
  if (filter.after !== undefined) {
    const id = checkName("run id", filter.after);
    const run = await store.loadRunRow(id);
    if (!run) {
      throw new InvalidOptionError(
        `${what}({ after: ${JSON.stringify(id)} }): there is no run ${JSON.stringify(id)} in ${store.location} to list after. Pass the id of a run a listing returned (the last one shown), or leave \`after\` out to start from the newest.`,
        { runId: id },
      );
    }
    stored.after = { createdAt: run.createdAt, id: run.id };
  }
  const exact = statuses === undefined || statuses.includes("running") === statuses.includes("interrupted");
  return { stored, statuses, exact };
}
