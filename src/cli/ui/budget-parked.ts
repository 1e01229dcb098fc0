/**
 * The runs parked on a budget, for the Human queue: the store lists the waiting runs by the kind
 * of what they wait for (as engine.approvals lists the approvals), one listing a render.
 */

import type { WaitingFor } from "../../workflow/step-resolution.js";
import { shownWaitingFor, type StoredWait } from "../../workflow/step-resolution.js";
import type { UiContext } from "./layout.js";

export interface BudgetParked {
  run: { id: string; workflow: string; updatedAt: string };
  waitingFor: WaitingFor;
}

export async function parkedOnBudget(ctx: UiContext): Promise<BudgetParked[]> {
  const listings = await ctx.engine.store.listRuns({ status: ["waiting"], waitingKind: "budget" });
  return listings.map(({ run }) => ({
    run: { id: run.id, workflow: run.workflow, updatedAt: new Date(run.updatedAt).toISOString() },
    waitingFor: shownWaitingFor(JSON.parse(run.waitingFor!) as StoredWait),
  }));
}
