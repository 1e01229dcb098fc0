/**
 * A run's budget as one attempt holds it (docs/budgets.md). The spend is kept on the run row:
 * each step outcome with recorded usage carries what it adds (StepOutcome.spend) to the run and
 * to the run whose budget it draws on, and the store adds it in the outcome's transaction. The
 * attempt starts from the row as claimed and adds what its own outcomes carry, so the check
 * before a step (budget.ts) is a comparison; a run whose budget is shared with child runs (a
 * child that draws on it, or a parent that started such a child) reads the budget's row before
 * each step instead.
 */

import type { StepOutcome, StoredRun } from "../store/types.js";
import { parseBudget, spendOf, type Budget, type Spent } from "../workflow/budgets.js";

export class RunBudget {
  /** Spent, as far as this attempt knows: the row as claimed (or last read) and its own outcomes since. */
  readonly spent: Spent;
  /** The runs an outcome's spend is added to: this one, and the run whose budget it draws on. */
  readonly runs: string[];
  /** Read the budget's row before each step (shared with child runs). */
  shared: boolean;
  /** Read just now for the step being started (its start goes on without reading again). */
  fresh = false;

  constructor(
    /** The run whose budget this is: the run itself, or the one it draws on. */
    readonly owner: string,
    /** The limits; unknown (undefined) for a child that draws on another run's until first read. */
    public limits: Budget | undefined,
    spent: Spent,
    runId: string,
  ) {
    this.spent = spent;
    this.shared = owner !== runId;
    this.runs = owner === runId ? [runId] : [runId, owner];
  }

  /** Add the spend of an outcome's recorded usage to it (and to the outcome, for the store). */
  charge(outcome: StepOutcome, usage: string): void {
    const { usd, tokens } = spendOf(usage);
    if (usd === 0 && tokens === 0) return;
    outcome.spend = { runs: this.runs, usd, tokens };
    this.spent.usd += usd;
    this.spent.tokens += tokens;
  }
}

/** The budget of the run claimed, or undefined when it has none (the step path then checks nothing). */
export function budgetOf(stored: StoredRun): RunBudget | undefined {
  const run = stored.run;
  if (run.costBudget == null) return undefined;
  const budget = parseBudget(run.costBudget);
  if (budget === undefined) return undefined;
  const spent = { usd: run.spentUsd ?? 0, tokens: run.spentTokens ?? 0 };
  return "own" in budget ? new RunBudget(run.id, budget.own, spent, run.id) : new RunBudget(budget.parent, undefined, spent, run.id);
}
