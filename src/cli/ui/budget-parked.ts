/**
 * The runs parked on a budget, for the Human queue. A run's summary does not say what it waits
 * for, so the waiting runs are listed and each one's view read; a run read before is not read
 * again until it changed (its update time or attempts moved), so a queue page re-rendered every
 * poll costs one listing while hundreds of runs sleep or wait for events.
 */

import type { RunSummary } from "../../operations/views.js";
import type { WaitingFor } from "../../workflow/step-resolution.js";
import type { UiContext } from "./layout.js";

export interface BudgetParked {
  run: RunSummary;
  waitingFor: WaitingFor;
}

/** Per UI: each waiting run's stamp when last read, and its wait when that was a budget. */
const known = new WeakMap<UiContext, Map<string, { stamp: string; budget?: WaitingFor }>>();

export async function parkedOnBudget(ctx: UiContext): Promise<BudgetParked[]> {
  const seen = known.get(ctx) ?? new Map<string, { stamp: string; budget?: WaitingFor }>();
  known.set(ctx, seen);
  const waiting = await ctx.engine.list({ status: "waiting" });
  const parked: BudgetParked[] = [];
  for (const run of waiting) {
    const stamp = `${run.updatedAt}|${run.attemptCount}`;
    let entry = seen.get(run.id);
    if (entry?.stamp !== stamp) {
      const view = await ctx.engine.get(run.id).catch(() => undefined);
      // Gone since it was listed (pruned, say): left out.
      if (view === undefined) continue;
      entry = view.waitingFor?.kind === "budget" ? { stamp, budget: view.waitingFor } : { stamp };
      seen.set(run.id, entry);
    }
    if (entry.budget) parked.push({ run, waitingFor: entry.budget });
  }
  // Forget the runs no longer waiting.
  const now = new Set(waiting.map((r) => r.id));
  for (const id of seen.keys()) if (!now.has(id)) seen.delete(id);
  return parked;
}
