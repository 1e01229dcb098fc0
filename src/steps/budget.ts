/**
 * The budget check before a step (docs/budgets.md): a step about to start when the spend of the
 * run's budget (run-budget.ts) has reached it parks the run before its intent (kind "budget");
 * engine.raiseBudget (operations/budget.ts) wakes it.
 */

import { parseBudget, reached } from "../workflow/budgets.js";
import type { AttemptState } from "./state.js";
import type { StepCall } from "./step-call.js";
import { park } from "./waits.js";

/**
 * Before a step's intent (step-runner.ts `start`): undefined to go on at once; else the step's
 * promise: parked on the budget (rejected), or, when the budget's row must be read first, `go`
 * called again once it is.
 */
export function holdForBudget(
  state: AttemptState,
  call: StepCall,
  go: (state: AttemptState, call: StepCall) => Promise<unknown>,
): Promise<unknown> | undefined {
  const budget = state.budget!;
  if (budget.shared && !budget.fresh) return readThenGo(state, call, go);
  budget.fresh = false;
  const limits = budget.limits;
  if (limits === undefined || reached(limits, budget.spent) === undefined) return undefined;
  try {
    return park(state, {
      kind: "budget",
      step: call.key,
      spent: { ...budget.spent },
      budget: { ...limits },
      ...(budget.owner === state.runId ? {} : { budgetRun: budget.owner }),
    });
  } catch (parked) {
    return Promise.reject(parked);
  }
}

async function readThenGo(state: AttemptState, call: StepCall, go: (state: AttemptState, call: StepCall) => Promise<unknown>): Promise<unknown> {
  const budget = state.budget!;
  const row = await state.settings.store.loadRunRow(budget.owner);
  const stored = parseBudget(row?.costBudget);
  if (row && stored && "own" in stored) {
    budget.limits = stored.own;
    // The row holds what has committed (children's spend too); this attempt's own outcomes may not have yet.
    budget.spent.usd = Math.max(budget.spent.usd, row.spentUsd ?? 0);
    budget.spent.tokens = Math.max(budget.spent.tokens, row.spentTokens ?? 0);
  }
  budget.fresh = true;
  return go(state, call);
}
