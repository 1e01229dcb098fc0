/**
 * A new run row as the SQL stores insert it: its columns in order and its values in the same
 * order (the columns a row from an older caller may lack given their defaults). One list, so the
 * SQLite and Postgres stores cannot bind a value to the wrong column.
 */

import type { RunRow } from "./types.js";

export const RUN_INSERT_COLUMNS = `id, workflow, version, args, status, attempts, budget_used, source, deadline, value, error, waiting_for, wake_at,
  parent, concurrency_key, rate_key, priority, dedupe_key, trace_context, cost_budget, spent_usd, spent_tokens,
  created_at, updated_at`;

export function runInsertValues(run: RunRow): Array<string | number | null> {
  return [
    run.id,
    run.workflow,
    run.version,
    run.args,
    run.status,
    run.attempts,
    run.budgetUsed,
    run.source,
    run.deadline,
    run.value,
    run.error,
    run.waitingFor,
    run.wakeAt,
    run.parent ?? null,
    run.concurrencyKey ?? null,
    run.rateKey ?? null,
    run.priority ?? 0,
    run.dedupeKey ?? null,
    run.traceContext ?? null,
    run.costBudget ?? null,
    run.spentUsd ?? 0,
    run.spentTokens ?? 0,
    run.createdAt,
    run.updatedAt,
  ];
}
