/**
 * The rows a start writes in its one createRun: the run row, running on the first attempt of
 * its budget, and that attempt's row, owned by this process. Apart from the engine so the
 * shape of a new run reads in one place, field by field.
 */

import { currentOwner } from "../ownership/owner.js";
import type { AttemptRow, RunRow } from "../store/types.js";
import type { Workflow } from "../workflow/define-workflow.js";

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
}

/** The run row and first attempt row of a run started now. */
export function startRows({ id, workflow, argsText, source, deadline, parent, now }: NewRun): { run: RunRow; first: AttemptRow } {
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
