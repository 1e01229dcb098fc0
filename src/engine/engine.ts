/**
 * createEngine: the app's handle on runs. start and continue resolve with how the attempt
 * ended; they reject only when the attempt is refused and never began. The engine holds what
 * is this process's (workflows, running attempts, workers, signal handlers) and hands each
 * call to the part that does it: the start path (start-run.ts), the claim behind continue,
 * compensate and a worker's pick (claim-and-run.ts), the methods on one run by id
 * (run-methods.ts), the attempts running here (running-attempts.ts). The Engine interface and
 * option types are in api.ts, their checks in engine-setup.ts and continue-options.ts.
 */

import type { RunResult } from "../steps/attempt.js";
import type { Workflow, WorkflowArgs, WorkflowResult } from "../workflow/define-workflow.js";
import { isWorkflow } from "../workflow/define-workflow.js";
import type { EngineSettings } from "../steps/attempt-settings.js";
import { EngineClosedError, InvalidOptionError, SteplogError, WorkflowNotRegisteredError } from "../base/errors.js";
import { NotReady } from "../ownership/claim.js";
import { isLiveHere } from "../ownership/live-attempts.js";
import type { RecoveredRun } from "../operations/recover.js";
import { recoverInterrupted } from "../operations/recover.js";
import type { Delivery, SendOptions } from "../operations/events.js";
import { validateWorkOptions, wakeWorkers, work, type WorkOptions, type WorkSummary } from "./worker.js";
import { listSchedules, SCHEDULES_KEYS, startTick, type SchedulesOptions, type ScheduleView } from "./schedules.js";
import { listEscalations, type Escalation, type Resolution } from "../operations/escalations.js";
import { checkName } from "../workflow/names.js";
import { checkKnownKeys } from "../base/options.js";
import type { RuntimeStore } from "../store/runtime.js";
import type { RunStatus, Store } from "../store/types.js";
import { summarize, type Judge, type RunSummary, type RunView } from "../operations/views.js";
import { APPROVALS_KEYS, ESCALATIONS_KEYS, LIST_KEYS, WORK_KEYS, type ApproveOptions } from "./api.js";
import { listApprovals, type ApprovalsFilter, type PendingApproval } from "../operations/approvals.js";
import type { CancelOptions, ContinueOptions, Engine, EngineOptions, ListFilter, RunCount, StartOptions } from "./api.js";
import type { Budget } from "../workflow/budgets.js";
import { countRuns, listRuns } from "./listing.js";
import { engineSetup } from "./engine-setup.js";
import { checkContinueOptions } from "./continue-options.js";
import { runDeadline } from "./run-checks.js";
import { claimAndRun, type ClaimContext } from "./claim-and-run.js";
import { ChildRuns } from "./child-runs.js";
import type { EngineCore } from "./engine-core.js";
import { RunningAttempts } from "./running-attempts.js";
import { createRun, startRun } from "./start-run.js";
import * as runMethods from "./run-methods.js";
import { exportRun, importRun } from "./export-import.js";
import type { ExportOptions, ImportResult, RunExport } from "../operations/export.js";
import { checkReadStream, readStream, type ReadStreamOptions, type StreamItem } from "../operations/read-stream.js";
import { listStreams, type StreamInfo } from "../operations/stream-list.js";
import { prune } from "./prune.js";
import type { PruneOptions, PruneResult } from "./prune-options.js";
import { applyRetention } from "./retention.js";
import type { Retention } from "./retention-options.js";

export { TEST_HOOKS } from "./api.js";
export type { Engine, EngineOptions, StartOptions, ContinueOptions, ListFilter, RunCount, CancelOptions, TracerLike } from "./api.js";

export function createEngine(options: EngineOptions = {}): Engine {
  return new SteplogEngine(options);
}

class SteplogEngine implements Engine {
  readonly store: Store;
  readonly #store: RuntimeStore;
  readonly #settings: EngineSettings;
  readonly #workflows = new Map<string, Workflow>();
  readonly #running: RunningAttempts;
  #closed = false;
  readonly #workers = new Set<AbortController>();
  readonly #workerRuns = new Set<Promise<WorkSummary>>();
  /** What the engine's parts (the start path, the methods on one run) share of it. */
  readonly #core: EngineCore;
  /** createEngine's retention, checked: applied by each worker. */
  readonly #retention: Retention | undefined;

  constructor(options: EngineOptions) {
    const { store, runtime, settings, retention } = engineSetup(options);
    this.#retention = retention;
    this.store = store;
    this.#store = runtime;
    this.#settings = settings;
    const claims: ClaimContext = {
      store: this.#store,
      settings: this.#settings,
      workflow: (name, runId) => this.#workflow(name, runId),
      where: () => this.#where(),
      runAttempt: (attempt, args) => this.#running.run(attempt, args),
    };
    this.#running = new RunningAttempts((runId) => claimAndRun(claims, runId, "compensate", {}, undefined), Boolean(options.handleSignals));
    const children = new ChildRuns({
      store: this.#store,
      payloads: this.#settings.payloads,
      now: () => this.#settings.clock.now(),
      judge: async () => this.#judge(await this.#where()),
      register: (workflow) => this.#register(workflow),
      create: async (workflow, args, id, parent, source, costBudget) => {
        const deadline = runDeadline({}, `the child run ${JSON.stringify(id)}`, this.#settings.clock, workflow.timeoutMs);
        const made = await createRun(this.#core, workflow, args, { id, deadline, parent, source: source ?? undefined, ...(costBudget ? { costBudget } : {}) });
        return "exists" in made ? undefined : { done: made.done };
      },
      runningHere: (id) => this.#running.of(id)?.done,
      continue: (id) => this.continue(id),
      wake: () => this.#wake(),
    });
    this.#settings.children = children;
    this.#core = {
      store: this.#store,
      settings: this.#settings,
      claims,
      running: this.#running,
      children,
      firstTurns: new Map(),
      redact: options.redact,
      open: () => this.#open(),
      workflow: (name, runId) => this.#workflow(name, runId),
      register: (workflow) => this.#register(workflow),
      where: () => this.#where(),
      judge: (where) => this.#judge(where),
      wake: () => this.#wake(),
    };
    for (const workflow of options.workflows ?? []) this.#register(workflow);
  }

  #register(workflow: Workflow): void {
    if (!isWorkflow(workflow)) throw new InvalidOptionError("createEngine: workflows must be made with defineWorkflow(...).");
    const known = this.#workflows.get(workflow.name);
    if (known && known !== workflow) {
      throw new InvalidOptionError(`Two different workflows are named ${JSON.stringify(workflow.name)}; a run belongs to a name, so names must be unique.`);
    }
    this.#workflows.set(workflow.name, workflow);
  }

  #workflow(name: string, runId: string | undefined): Workflow {
    const workflow = this.#workflows.get(name);
    if (!workflow) throw new WorkflowNotRegisteredError(name, runId, [...this.#workflows.keys()]);
    return workflow;
  }

  /**
   * The store's storage as this process's live attempts are keyed: the same for every store
   * object on it, however its path or server was spelled (Store.storageId; else its location).
   */
  async #where(): Promise<string> {
    // Asked each time (the stores keep it once it cannot change): a file's id may still change
    // when the file is created. A plain string from a custom store is fine too.
    return this.#store.storageId();
  }

  #judge(where: string): Judge {
    return { now: this.#settings.clock.now(), isHeldHere: (runId) => isLiveHere(where, runId), where };
  }

  #open(): void {
    if (this.#closed) throw new EngineClosedError();
  }

  #wake(): void {
    wakeWorkers();
  }

  start<W extends Workflow<any, any>>(workflowOrName: W | string, args: WorkflowArgs<W>, options: StartOptions = {}): Promise<RunResult<WorkflowResult<W>>> {
    return startRun(this.#core, workflowOrName, args, options);
  }

  async continue(id: string, options: ContinueOptions = {}): Promise<RunResult> {
    this.#open();
    checkName("run id", id);
    checkContinueOptions(id, options);
    const deadline = runDeadline(options, `continue(${JSON.stringify(id)})`, this.#settings.clock);
    return claimAndRun(this.#core.claims, id, "run", options, deadline);
  }

  async compensate(id: string): Promise<RunResult> {
    this.#open();
    checkName("run id", id);
    return claimAndRun(this.#core.claims, id, "compensate", {}, undefined);
  }

  send(id: string, event: string, payload?: unknown, options: SendOptions = {}): Promise<Delivery> {
    return runMethods.send(this.#core, id, event, payload, options);
  }

  approve(id: string, step: string, options: ApproveOptions = {}): Promise<void> {
    return runMethods.approve(this.#core, id, step, options);
  }

  async approvals(filter: ApprovalsFilter = {}): Promise<PendingApproval[]> {
    this.#open();
    checkKnownKeys("approvals", filter, APPROVALS_KEYS);
    return listApprovals(this.#store, this.#settings.payloads, filter, this.#core.redact);
  }

  reject(id: string, step: string, options: { by?: string; reason?: string } = {}): Promise<void> {
    return runMethods.reject(this.#core, id, step, options);
  }

  raiseBudget(id: string, limits: Budget): Promise<Budget> {
    return runMethods.raiseBudget(this.#core, id, limits);
  }

  cancel(id: string, options: CancelOptions = {}): Promise<RunStatus> {
    return runMethods.cancel(this.#core, id, options);
  }

  resolve(id: string, step: string, answer: Resolution): Promise<void> {
    return runMethods.resolve(this.#core, id, step, answer);
  }

  get(id: string, options: { redact?: boolean } = {}): Promise<RunView> {
    return runMethods.get(this.#core, id, options);
  }

  export(id: string, options: ExportOptions = {}): Promise<RunExport> {
    return exportRun(this.#core, id, options);
  }

  import(doc: unknown): Promise<ImportResult> {
    return importRun(this.#core, doc);
  }

  readStream(id: string, name: string, options: ReadStreamOptions = {}): AsyncIterable<StreamItem> {
    this.#open();
    checkReadStream(id, name, options);
    return readStream(this.#store, this.#settings.payloads, id, name, options, this.#core.redact);
  }

  streams(id: string): Promise<StreamInfo[]> {
    this.#open();
    checkName("run id", id);
    return listStreams(this.#store, id);
  }

  prune(options: PruneOptions): Promise<PruneResult> {
    return prune(this.#core, options);
  }

  async work(options: WorkOptions = {}): Promise<WorkSummary> {
    this.#open();
    checkKnownKeys("work", options, WORK_KEYS);
    validateWorkOptions(options);
    // Stops on the caller's signal or when the engine closes.
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    if (options.signal?.aborted) stop.abort();
    options.signal?.addEventListener("abort", onAbort);
    this.#workers.add(stop);
    const looping = work(
      {
        store: this.#store,
        now: () => this.#settings.clock.now(),
        workflows: () => [...this.#workflows.values()].map((w) => ({ name: w.name, autoResume: w.autoResume, schedule: w.schedule })),
        isInterrupted: async (listing) => listing.run.status === "interrupted" || summarize(listing, this.#judge(await this.#where())).status === "interrupted",
        claimReady: async (runId) => {
          try {
            return await claimAndRun(this.#core.claims, runId, "run", {}, undefined, true);
          } catch (error) {
            if (error instanceof NotReady || (error instanceof SteplogError && error.code === "RUN_BUSY")) return undefined;
            throw error;
          }
        },
        wakeParentsOfEnded: (workflows) => this.#core.children.wakeParentsOfEnded(workflows),
        startTick: (tick) => {
          const source = options.sources?.[tick.workflow];
          return startTick(this.#workflow(tick.workflow, undefined), tick, (args) =>
            this.start(tick.workflow, args as never, { id: tick.id, ...(source === undefined ? {} : { source }) }),
          );
        },
      },
      options,
      stop.signal,
    );
    // Retention beside the loop, stopped with it (its turn given back before the store closes).
    const retained = this.#retention ? applyRetention(this.#core, this.#retention, stop.signal) : undefined;
    const done = retained ? Promise.all([looping, retained]).then(([summary]) => summary) : looping;
    this.#workerRuns.add(done);
    try {
      return await done;
    } finally {
      this.#workers.delete(stop);
      this.#workerRuns.delete(done);
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  async escalations(options: { redact?: boolean } = {}): Promise<Escalation[]> {
    this.#open();
    checkKnownKeys("escalations", options, ESCALATIONS_KEYS);
    return listEscalations(this.#store, this.#settings.payloads, options.redact ? this.#core.redact : undefined);
  }

  async schedules(options: SchedulesOptions = {}): Promise<ScheduleView[]> {
    this.#open();
    checkKnownKeys("schedules", options, SCHEDULES_KEYS);
    const judge = this.#judge(await this.#where());
    return listSchedules(this.#store, [...this.#workflows.values()], judge.now, options, (listing) => summarize(listing, judge));
  }

  async list(filter: ListFilter = {}): Promise<RunSummary[]> {
    this.#open();
    checkKnownKeys("list", filter, LIST_KEYS);
    return listRuns(this.#store, this.#judge(await this.#where()), filter);
  }

  async count(filter: ListFilter = {}): Promise<RunCount> {
    this.#open();
    checkKnownKeys("count", filter, LIST_KEYS);
    return countRuns(this.#store, this.#judge(await this.#where()), filter);
  }

  async recover(): Promise<RecoveredRun[]> {
    this.#open();
    return recoverInterrupted(this.#store, this.#judge(await this.#where()), this.#settings.payloads);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Workers stop claiming; the attempts they run are cancelled below with the others.
    for (const worker of this.#workers) worker.abort();
    await this.#running.cancelAll("the engine was closed");
    await Promise.allSettled([...this.#workerRuns]);
    this.#running.uninstallSignals();
    await this.#store.close();
  }
}
