/**
 * engine.raiseBudget: new limits for a run parked on its budget, written in one transaction with
 * waking it; then the child runs that draw on its budget and are parked on it are woken too.
 */

import { BudgetOfParentError, BudgetTooLowError, NotWaitingError, RunNotFoundError } from "../base/errors.js";
import type { RunRow, Store } from "../store/types.js";
import { describeWait } from "../steps/waits.js";
import { formatBudget, parseBudget, type Budget } from "../workflow/budgets.js";
import { parseWaitingFor } from "../workflow/step-resolution.js";

const parkedOnBudget = (run: RunRow) => run.status === "waiting" && parseWaitingFor(run.waitingFor)?.kind === "budget";

/** The runs that draw on `owner`'s budget (children with budget "parent", their own such children, …) parked on it now. */
async function parkedDrawers(store: Store, owner: string): Promise<string[]> {
  const parked: string[] = [];
  const drawsOnOwner = (run: RunRow) => {
    const budget = parseBudget(run.costBudget);
    return budget !== undefined && "parent" in budget && budget.parent === owner;
  };
  let parents = [owner];
  // A chain is as deep as children are nested: a bound keeps a malformed record from looping.
  for (let depth = 0; depth < 100 && parents.length > 0; depth++) {
    const next: string[] = [];
    for (const parent of parents) {
      for (const { run } of await store.listRuns({ parent })) {
        if (!drawsOnOwner(run)) continue;
        next.push(run.id);
        if (parkedOnBudget(run)) parked.push(run.id);
      }
    }
    parents = next;
  }
  return parked;
}

function stateOf(run: RunRow): string {
  const waiting = run.status === "waiting" ? parseWaitingFor(run.waitingFor) : undefined;
  if (waiting) return `waits for ${describeWait(waiting)}`;
  return `is ${run.status}`;
}

const usd = (n: number) => `$${Math.round(n * 10000) / 10000}`;

export async function raiseBudget(store: Store, id: string, limits: Budget, now: number): Promise<Budget> {
  const drawers = await parkedDrawers(store, id);
  const raised = await store.updateRun<Budget | undefined>(id, (current) => {
    const run = current.run;
    const stored = parseBudget(run.costBudget);
    if (stored === undefined) return { error: new NotWaitingError(id, "a raise of its budget", `has no budget; ${stateOf(run)}`, "budget"), result: undefined };
    if ("parent" in stored) return { error: new BudgetOfParentError(id, stored.parent), result: undefined };
    const parked = parkedOnBudget(run);
    if (!parked && drawers.length === 0) return { error: new NotWaitingError(id, "a raise of its budget", stateOf(run), "budget"), result: undefined };
    const budget: Budget = { ...stored.own, ...limits };
    const spent = { usd: run.spentUsd ?? 0, tokens: run.spentTokens ?? 0 };
    const problems: string[] = [];
    if (budget.usd !== undefined && spent.usd >= budget.usd) problems.push(`it has spent ${usd(spent.usd)}, and the usd limit would be ${usd(budget.usd)}`);
    if (budget.tokens !== undefined && spent.tokens >= budget.tokens)
      problems.push(`it has spent ${spent.tokens} tokens, and the tokens limit would be ${budget.tokens}`);
    if (problems.length > 0) {
      const above = (n: number) => Math.max(1, Math.ceil(n * 2));
      const opts = [
        budget.usd !== undefined ? `usd: ${above(spent.usd)}` : undefined,
        budget.tokens !== undefined ? `tokens: ${above(spent.tokens)}` : undefined,
      ].filter(Boolean);
      return { error: new BudgetTooLowError(id, problems, `engine.raiseBudget(${JSON.stringify(id)}, { ${opts.join(", ")} })`), result: undefined };
    }
    const wake = parked ? { wakeAt: now, waitingFor: null } : {};
    return { run: { costBudget: formatBudget({ own: budget }), ...wake, updatedAt: now }, result: budget };
  });
  if (raised === undefined) throw new RunNotFoundError(id, store.location);
  for (const child of drawers) {
    await store.updateRun(child, (current) =>
      parkedOnBudget(current.run) ? { run: { wakeAt: now, waitingFor: null, updatedAt: now }, result: true } : { result: false },
    );
  }
  return raised;
}
