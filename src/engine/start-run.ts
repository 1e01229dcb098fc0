/**
 * The start path: engine.start's checks, a new run created with its first attempt and lease in
 * one store.createRun (or queued for its turn when the workflow has flow limits, then claimed
 * like any due run), and what a start hands back when the run exists: another run holding the
 * dedupe key, or the same id attached to (attach.ts). A parent's child step creates its child
 * through createRun too (child-runs.ts).
 */

import { ArgsRejectedError, InvalidOptionError, isSteplogError, RunExistsError, RunNotFoundError } from "../base/errors.js";
import { NotReady } from "../ownership/claim.js";
import { isLiveHere, markDone, markLive } from "../ownership/live-attempts.js";
import { Attempt, type AttemptPlan, type RunResult } from "../steps/attempt.js";
import { NO_KEYS } from "../steps/state.js";
import type { Store, StoredRun } from "../store/types.js";
import type { Workflow, WorkflowArgs, WorkflowResult } from "../workflow/define-workflow.js";
import { flowColumns, queues } from "../workflow/flow-control.js";
import { checkName } from "../workflow/names.js";
import { checkBudget, formatBudget } from "../workflow/budgets.js";
import { checkKnownKeys } from "../base/options.js";
import { START_KEYS, type StartOptions } from "./api.js";
import { checkIfExists, checkSameRun, markAttached, storedResult } from "./attach.js";
import { claimAndRun } from "./claim-and-run.js";
import type { EngineCore } from "./engine-core.js";
import { attemptLabels } from "./load-tracing.js";
import { checkArgs, runDeadline } from "./run-checks.js";
import { newRunId } from "./run-ids.js";
import { queuedRow, startRows } from "./start-rows.js";

/** What createRun is told of the new run beyond its workflow and args. */
export interface NewRun {
  id: string;
  deadline: number | undefined;
  source?: string | undefined;
  parent?: string;
  signal?: AbortSignal | undefined;
  dedupeKey?: string | undefined;
  priority?: number | undefined;
  /** The run's budget as stored (RunRow.costBudget): start's or the workflow's own limits, or the parent's a child draws on. */
  costBudget?: string | undefined;
}

/** engine.start: the options checked, the run created (or found), and the result of its first attempt or of the run found. */
export async function startRun<W extends Workflow<any, any>>(
  core: EngineCore,
  workflowOrName: W | string,
  args: WorkflowArgs<W>,
  options: StartOptions,
): Promise<RunResult<WorkflowResult<W>>> {
  core.open();
  const workflow = typeof workflowOrName === "string" ? core.workflow(workflowOrName, undefined) : workflowOrName;
  checkKnownKeys(`start(${JSON.stringify(workflow.name)})`, options, START_KEYS);
  if (typeof workflowOrName !== "string") core.register(workflow);
  const id = options.id === undefined ? newRunId() : checkName("run id", options.id);
  const deadline = runDeadline(options, `start(${JSON.stringify(workflow.name)})`, core.settings.clock, workflow.timeoutMs);
  if (options.source !== undefined && typeof options.source !== "string") {
    throw new InvalidOptionError(
      `start(${JSON.stringify(workflow.name)}): source must be a string (a file path, a package name), got ${typeof options.source}.`,
      { runId: id },
    );
  }
  const ifExists = checkIfExists(options.ifExists, `start(${JSON.stringify(workflow.name)})`, id);
  const where = `start(${JSON.stringify(workflow.name)})`;
  if (options.dedupeKey !== undefined) checkName("dedupe key", options.dedupeKey);
  if (options.priority !== undefined && !Number.isSafeInteger(options.priority)) {
    throw new InvalidOptionError(`${where}: priority must be a whole number (higher runs first), got ${String(options.priority)}.`, { runId: id });
  }
  const budget = options.budget === undefined ? workflow.budget : checkBudget(where, options.budget, id);
  const made = await createRun(core, workflow, args, {
    id,
    deadline,
    source: options.source,
    signal: options.signal,
    dedupeKey: options.dedupeKey,
    priority: options.priority,
    ...(budget === undefined ? {} : { costBudget: formatBudget({ own: budget }) }),
  });
  if ("exists" in made) {
    // Another run holds the dedupe key and has not ended: that run, whatever its args.
    if (made.exists.id !== id) return markAttached(await observe(core, made.exists.id)) as RunResult<WorkflowResult<W>>;
    if (ifExists === "refuse") throw new RunExistsError(id, made.exists.status);
    return markAttached(await attach(core, made.exists, workflow.name, made.argsPlain)) as RunResult<WorkflowResult<W>>;
  }
  return made.done as Promise<RunResult<WorkflowResult<W>>>;
}

/**
 * A new run and its first attempt, started here (start, and a parent's child step): the args
 * checked and encoded, the run created with its lease, the attempt running. When the id is
 * taken, the run that has it, and nothing written.
 */
export async function createRun(
  core: EngineCore,
  workflow: Workflow,
  args: unknown,
  options: NewRun,
): Promise<{ exists: StoredRun["run"]; argsPlain: string } | { done: Promise<RunResult> }> {
  const { id, deadline } = options;
  const { settings, store } = core;
  // Awaited only when they answer with a promise (an args schema, a codec that seals asynchronously).
  const checking = checkArgs(workflow, args);
  const checked = checking instanceof Promise ? await checking : checking;
  if (!checked.ok) throw new ArgsRejectedError(undefined, workflow.name, checked.issues, false);
  const encoding = settings.payloads.encode(args, `The args of run ${JSON.stringify(id)}`, { runId: id });
  const { plain: argsPlain, stored: argsText } = "then" in encoding ? await encoding : encoding;
  const tracing = settings.tracing;
  const now = settings.clock.now();
  const flow = flowColumns(workflow.name, workflow.flow, checked.value, { priority: options.priority });
  const dedupeKey = options.dedupeKey === undefined ? null : `${workflow.name}:${options.dedupeKey}`;
  const waitsForTurn = queues(workflow.flow);
  // Traced: the first attempt's span begins before the insert, which records its context with
  // the run (a later attempt anywhere continues its trace); a queued run has no attempt yet and
  // records the caller's span, if any. An insert that creates nothing drops the span unended.
  const caller = tracing?.active();
  const trace = tracing && !waitsForTurn ? tracing.beginAttempt(attemptLabels(workflow, id, 1, "run", undefined), null, caller!) : undefined;
  const traceContext = trace ? trace.traceparent : tracing ? tracing.callerTraceparent(caller!) : null;
  const costBudget = options.costBudget ?? (workflow.budget === undefined ? undefined : formatBudget({ own: workflow.budget }));
  const { run, first } = startRows({
    id,
    workflow,
    argsText,
    source: options.source,
    deadline,
    parent: options.parent,
    now,
    flow,
    dedupeKey,
    traceContext,
    costBudget,
  });
  if (waitsForTurn) {
    // A run with limits waits for its turn: queued, then claimed like any due run, now if there is room.
    const queued = await store.enqueueRun(queuedRow(run, now), now);
    if ("exists" in queued) return { exists: queued.exists, argsPlain };
    const done = firstTurn(core, id, options.signal).finally(() => core.firstTurns.delete(id));
    core.firstTurns.set(id, done);
    return { done };
  }
  // Marked live before the lease exists, so no claim in this process can judge it abandoned.
  const live = markLive(await core.where(), id);
  let created: Awaited<ReturnType<Store["createRun"]>>;
  try {
    created = await store.createRun(run, first, { expiresAt: now + settings.leaseMs, now });
  } catch (error) {
    markDone(live);
    throw error;
  }
  if ("exists" in created) {
    markDone(live);
    return { exists: created.exists, argsPlain };
  }
  const stored: StoredRun = { run, attempts: [first], steps: [], lease: null, events: [] };
  const plan: AttemptPlan = {
    mode: "run",
    fromStep: undefined,
    values: undefined,
    redo: NO_KEYS,
    reuse: NO_KEYS,
    ignoreVersion: false,
    deadline,
    signal: options.signal,
  };
  return { done: core.running.run(new Attempt(settings, workflow, stored, created, plan, live, trace), checked.value) };
}

/** A queued run's first claim: its first attempt now if the limits leave room, else it waits for its turn (a worker takes it). */
async function firstTurn(core: EngineCore, id: string, signal: AbortSignal | undefined): Promise<RunResult> {
  try {
    return await claimAndRun(core.claims, id, "run", signal ? { signal } : {}, undefined, true);
  } catch (error) {
    // A worker took it first: as an attach does, its attempt's result if it runs in this process.
    if (isSteplogError(error, "RUN_BUSY")) return watch(core, id);
    // No room now (FLOW_LIMITED), or no longer due: the run as it stands.
    if (!(isSteplogError(error, "FLOW_LIMITED") || error instanceof NotReady)) throw error;
    const stored = await core.store.loadRun(id);
    if (!stored) throw new RunNotFoundError(id, core.store.location);
    return storedResult(stored, core.judge(await core.where()), core.settings.payloads);
  }
}

/**
 * start's `ifExists: "attach"` for a run that exists (attach.ts): refused unless it is the same
 * run; then the result of its attempt running in this process, once that ends, or the run as
 * stored. Starts no attempt: the signal and deadline given to this start touch nothing.
 */
async function attach(core: EngineCore, existing: StoredRun["run"], workflow: string, argsPlain: string): Promise<RunResult> {
  await checkSameRun(existing, workflow, argsPlain, core.settings.payloads);
  return observe(core, existing.id);
}

/**
 * The result of the run's start claiming its first turn here, or of its attempt running in
 * this process, once it ends; else the run as stored.
 */
async function observe(core: EngineCore, id: string): Promise<RunResult> {
  return core.firstTurns.get(id) ?? watch(core, id);
}

/** The result of the run's attempt running in this process, once it ends, or the run as stored (a first turn itself asks this). */
async function watch(core: EngineCore, id: string): Promise<RunResult> {
  for (;;) {
    const local = core.running.of(id);
    if (local) return local.done;
    const where = await core.where();
    if (!isLiveHere(where, id)) {
      const stored = await core.store.loadRun(id);
      if (!stored) throw new RunNotFoundError(id, core.store.location);
      return storedResult(stored, core.judge(where), core.settings.payloads);
    }
    // Live in this process but not (yet) in this engine: another engine's attempt, or one a
    // claim here is still registering. Look again until it is here or has ended.
    core.open();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
