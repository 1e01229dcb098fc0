/**
 * The rows a start writes in its one createRun: the run row, running on the first attempt of
 * its budget, and that attempt's row, owned by this process. Apart from the engine so the
 * shape of a new run reads in one place, field by field.
 */

import { currentOwner } from "../ownership/owner.js";
import type { AttemptRow, RunRow } from "../store/types.js";
import type { Workflow } from "../workflow/define-workflow.js";
import type { WaitingFor } from "../workflow/step-resolution.js";

export interface NewRun {
  id: string;
  workflow: Workflow;
  /** The args as stored (encoded by the engine's codec). */
  argsText: string;
  source: string | undefined;
  deadline: number | undefined;
  /** The run that starts this one as its child, if one does. */
  parent?: string | undefined;
  now: number;
  /** Its flow-control keys and priority (workflow/flow-control.ts). */
  flow?: { concurrencyKey: string | null; rateKey: string | null; priority: number };
  /** start's dedupeKey, as stored (`<workflow>:<key>`). */
  dedupeKey?: string | null;
  /** The W3C traceparent the run's attempts hang from (tracing on), else null. */
  traceContext?: string | null;
  /** Its budget as stored (RunRow.costBudget), else null. */
  costBudget?: string | null;
}

/** The run row and first attempt row of a run started now. */
export function startRows({ id, workflow, argsText, source, deadline, parent, now, flow, dedupeKey, traceContext, costBudget }: NewRun): {
  run: RunRow;
  first: AttemptRow;
} {
  const run: RunRow = {
    id,
    workflow: workflow.name,
    version: workflow.version ?? null,
    args: argsText,
    status: "running",
    attempts: 1,
    budgetUsed: 1,
    source: source ?? null,
    deadline: deadline ?? null,
    value: null,
    error: null,
    waitingFor: null,
    wakeAt: null,
    parent: parent ?? null,
    concurrencyKey: flow?.concurrencyKey ?? null,
    rateKey: flow?.rateKey ?? null,
    priority: flow?.priority ?? 0,
    dedupeKey: dedupeKey ?? null,
    traceContext: traceContext ?? null,
    ...(costBudget == null ? {} : { costBudget, spentUsd: 0, spentTokens: 0 }),
    createdAt: now,
    updatedAt: now,
  };
  const first: AttemptRow = {
    runId: id,
    number: 1,
    ...currentOwner(),
    startedAt: now,
    endedAt: null,
    ending: null,
    fromStep: null,
    forced: false,
    error: null,
  };
  return { run, first };
}

/**
 * A run of a workflow with limits as it is queued: no attempt yet, waiting for its turn and due
 * at once, so the start's own claim (or a worker's) takes it when the limits leave room.
 */
export function queuedRow(run: RunRow, now: number): RunRow {
  const waitingFor: WaitingFor = { kind: "turn", step: "" };
  return { ...run, status: "waiting", attempts: 0, budgetUsed: 0, waitingFor: JSON.stringify(waitingFor), wakeAt: now };
}
