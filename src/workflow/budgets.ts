/**
 * Spending budgets (docs/budgets.md): the limits a run may spend, as `defineWorkflow`, `start`
 * and `engine.raiseBudget` take them, checked; how they are stored with the run; and what a step's
 * recorded usage counts toward them (`costUsd`; tokens are `inputTokens` plus `outputTokens`).
 */

import { InvalidOptionError } from "../base/errors.js";

/** A run's spending limits: US dollars and tokens (input and output). Each is optional; at least one. */
export interface Budget {
  usd?: number;
  tokens?: number;
}

/** What a run has spent toward its budget. */
export interface Spent {
  usd: number;
  tokens: number;
}

/** The budget as stored with a run (RunRow.costBudget): its own limits, or the run whose budget it draws on. */
export type StoredBudget = { own: Budget } | { parent: string };

const KEYS = new Set(["usd", "tokens"]);

/** The limits checked: an object with `usd` and/or `tokens`, each a positive finite number; else INVALID_OPTION saying what to give. */
export function checkBudget(where: string, value: unknown, runId?: string): Budget {
  const meta = runId === undefined ? undefined : { runId };
  const bad = (why: string) =>
    new InvalidOptionError(`${where}: budget ${why}. Give { usd?: number, tokens?: number }, each a positive number, e.g. { usd: 5, tokens: 200000 }.`, meta);
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw bad(`must be an object, got ${value === null ? "null" : typeof value}`);
  const given = value as Record<string, unknown>;
  for (const key of Object.keys(given)) if (!KEYS.has(key)) throw bad(`has an unknown key ${JSON.stringify(key)}`);
  const budget: Budget = {};
  for (const key of ["usd", "tokens"] as const) {
    const limit = given[key];
    if (limit === undefined) continue;
    if (typeof limit !== "number" || !Number.isFinite(limit) || limit <= 0)
      throw bad(`${key} must be a positive finite number, got ${JSON.stringify(limit) ?? String(limit)}`);
    budget[key] = limit;
  }
  if (budget.usd === undefined && budget.tokens === undefined) throw bad("names no limit");
  return budget;
}

export function formatBudget(stored: StoredBudget): string {
  return JSON.stringify("own" in stored ? stored.own : { parent: stored.parent });
}

/** The budget stored with a run, or undefined without one (or one this steplog cannot read). */
export function parseBudget(text: string | null | undefined): StoredBudget | undefined {
  if (text == null) return undefined;
  try {
    const value = JSON.parse(text) as Record<string, unknown>;
    if (typeof value.parent === "string") return { parent: value.parent };
    const own: Budget = {};
    if (typeof value.usd === "number") own.usd = value.usd;
    if (typeof value.tokens === "number") own.tokens = value.tokens;
    return own.usd === undefined && own.tokens === undefined ? undefined : { own };
  } catch {
    return undefined;
  }
}

/** What a step's recorded usage (its JSON) counts: `costUsd`, and `inputTokens` + `outputTokens`. */
export function spendOf(usage: string): Spent {
  const used = JSON.parse(usage) as Record<string, unknown>;
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v > 0 ? v : 0);
  return { usd: n(used.costUsd), tokens: n(used.inputTokens) + n(used.outputTokens) };
}

/** The limit a spend has reached, if any: "usd", "tokens", or undefined while under both. */
export function reached(budget: Budget, spent: Spent): "usd" | "tokens" | undefined {
  if (budget.usd !== undefined && spent.usd >= budget.usd) return "usd";
  if (budget.tokens !== undefined && spent.tokens >= budget.tokens) return "tokens";
  return undefined;
}

/** "$1.20 of $1.00, 12,000 of 10,000 tokens": a spend against its budget, for messages. */
export function describeSpend(spent: Spent, budget: Budget): string {
  const parts: string[] = [];
  if (budget.usd !== undefined) parts.push(`$${round(spent.usd)} of $${round(budget.usd)}`);
  if (budget.tokens !== undefined) parts.push(`${Math.round(spent.tokens).toLocaleString("en-US")} of ${budget.tokens.toLocaleString("en-US")} tokens`);
  return parts.join(", ");
}

const round = (usd: number) => String(Math.round(usd * 10000) / 10000);
