/**
 * createEngine: the app's handle on runs. start and continue resolve with how the attempt
 * ended; they reject only when the attempt is refused and never began. The engine holds what
 * is this process's (workflows, running attempts, workers, signal handlers); the Engine
 * interface and option types are in api.ts, their checks in settings.ts and
 * continue-options.ts, the claim behind continue, compensate and a worker's pick in
 * claim-and-run.ts.
 */

import { newRunId } from "./run-ids.js";
import { Attempt, type AttemptPlan, type RunResult } from "../steps/attempt.js";
import { NO_KEYS } from "../steps/state.js";
import { NotReady } from "../ownership/claim.js";
import { isWorkflow, type Workflow, type WorkflowArgs, type WorkflowResult } from "../workflow/define-workflow.js";
import type { EngineSettings } from "../steps/attempt-settings.js";
import {
  ArgsRejectedError,
  EngineClosedError,
  isSteplogError,
  RunBusyError,
  SteplogError,
  InvalidOptionError,
  RunCancelledError,
  RunExistsError,
  RunNotFoundError,
  WorkflowNotRegisteredError,
} from "../base/errors.js";
import { isLiveHere, markDone, markLive } from "../ownership/live-attempts.js";
import { recoverInterrupted, type RecoveredRun } from "../commands/recover.js";
import { answerApproval, sendEvent, type Delivery, type SendOptions } from "../commands/events.js";
import { cancelStoredRun } from "../commands/cancel.js";
import { validateWorkOptions, wakeWorkers, work, type WorkOptions, type WorkSummary } from "./worker.js";
import { listSchedules, SCHEDULES_KEYS, startTick, type SchedulesOptions, type ScheduleView } from "./schedules.js";
import { listEscalations, resolveEscalation, type Escalation, type Resolution } from "../commands/escalations.js";
import { SignalHandlers } from "./signal-handlers.js";
import type { RedactRule } from "../payloads/redact.js";
import { checkName } from "../workflow/names.js";
import { checkKnownKeys } from "../base/options.js";
import type { RuntimeStore } from "../store/runtime.js";
import type { RunStatus, Store, StoredRun } from "../store/types.js";
import { holderGone, redactView, summarize, viewRun, type Judge, type RunSummary, type RunView } from "../commands/views.js";
import { APPROVE_KEYS, CANCEL_KEYS, GET_KEYS, LIST_KEYS, REJECT_KEYS, RESOLUTION_KEYS, SEND_KEYS, START_KEYS, WORK_KEYS } from "./api.js";
import type { CancelOptions, ContinueOptions, Engine, EngineOptions, ListFilter, RunCount, StartOptions } from "./api.js";
import { countRuns, listRuns } from "./listing.js";
import { engineSetup } from "./settings.js";
import { checkContinueOptions } from "./continue-options.js";
import { checkArgs } from "./run-checks.js";
import { claimAndRun, type ClaimContext } from "./claim-and-run.js";
import { queuedRow, startRows } from "./start-rows.js";
import { checkIfExists, checkSameRun, markAttached, storedResult } from "./attach.js";
import { flowColumns, queues } from "../workflow/flow-control.js";
import { ChildRuns } from "./children.js";
import { attemptLabels } from "./tracing.js";
import { ENDED_STATUSES } from "../store/types.js";

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
  readonly #running = new Set<RunningAttempt>();
  #closed = false;
  readonly #signals: SignalHandlers | undefined;
  readonly #workers = new Set<AbortController>();
  readonly #workerRuns = new Set<Promise<WorkSummary>>();
  readonly #redact: RedactRule | undefined;
  /** What the claim behind continue, compensate and a worker's pick needs of this engine. */
  readonly #claims: ClaimContext;
  readonly #children: ChildRuns;
  /** Queued runs whose start is claiming their first turn in this engine: an attach waits for it. */
  readonly #firstTurns = new Map<string, Promise<RunResult>>();

  constructor(options: EngineOptions) {
    const { store, runtime, settings } = engineSetup(options);
    this.store = store;
    this.#store = runtime;
    this.#settings = settings;
    this.#claims = {
      store: this.#store,
      settings: this.#settings,
      workflow: (name, runId) => this.#workflow(name, runId),
      where: () => this.#where(),
      runAttempt: (attempt, args) => this.#runAttempt(attempt, args),
    };
    this.#children = new ChildRuns({
      store: this.#store,
      payloads: this.#settings.payloads,
      now: () => this.#settings.clock.now(),
      judge: async () => this.#judge(await this.#where()),
      register: (workflow) => this.#register(workflow),
      create: async (workflow, args, id, parent, source) => {
        const deadline = this.#deadline({}, `the child run ${JSON.stringify(id)}`, workflow.timeoutMs);
        const made = await this.#create(workflow, args, { id, deadline, parent, source: source ?? undefined });
        return "exists" in made ? undefined : { done: made.done };
      },
      runningHere: (id) => [...this.#running].find((entry) => entry.attempt.runId === id)?.done,
      continue: (id) => this.continue(id),
      wake: () => this.#wake(),
    });
    this.#settings.children = this.#children;
    for (const workflow of options.workflows ?? []) this.#register(workflow);
    this.#redact = options.redact;
    if (options.handleSignals) {
      this.#signals = new SignalHandlers(
        (signal) => this.#cancelAll(`received ${signal}`),
        () => this.#running.size,
      );
    }
  }

  #cancelAll(reason: string): Promise<unknown> {
    for (const { attempt } of this.#running) {
      attempt.endWith("cancelled", new RunCancelledError(attempt.runId, attempt.lastEntered, reason));
    }
    return Promise.allSettled([...this.#running].map((entry) => entry.done));
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

  /** A run deadline from `timeoutMs` (ms from now) or `deadline` (a time), at most one of them; else `fallbackMs` from now. */
  #deadline(options: { timeoutMs?: number; deadline?: Date | number }, where: string, fallbackMs?: number): number | undefined {
    const { timeoutMs, deadline } = options;
    if (timeoutMs !== undefined && deadline !== undefined) throw new InvalidOptionError(`${where}: give timeoutMs or deadline, not both.`);
    if (deadline !== undefined) {
      const at = deadline instanceof Date ? deadline.getTime() : deadline;
      if (!(typeof at === "number" && Number.isFinite(at)))
        throw new InvalidOptionError(`${where}: deadline must be a Date or a number of ms since the epoch, got ${String(deadline)}.`);
      return Math.ceil(at);
    }
    const ms = timeoutMs ?? fallbackMs;
    if (ms === undefined) return undefined;
    if (!(typeof ms === "number" && ms > 0)) throw new InvalidOptionError(`${where}: timeoutMs must be a number of milliseconds > 0, got ${String(ms)}.`);
    return Math.ceil(this.#settings.clock.now() + ms);
  }

  async start<W extends Workflow<any, any>>(
    workflowOrName: W | string,
    args: WorkflowArgs<W>,
    options: StartOptions = {},
  ): Promise<RunResult<WorkflowResult<W>>> {
    this.#open();
    const workflow = typeof workflowOrName === "string" ? this.#workflow(workflowOrName, undefined) : workflowOrName;
    checkKnownKeys(`start(${JSON.stringify(workflow.name)})`, options, START_KEYS);
    if (typeof workflowOrName !== "string") this.#register(workflow);
    const id = options.id === undefined ? newRunId() : checkName("run id", options.id);
    const deadline = this.#deadline(options, `start(${JSON.stringify(workflow.name)})`, workflow.timeoutMs);
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
    const made = await this.#create(workflow, args, {
      id,
      deadline,
      source: options.source,
      signal: options.signal,
      dedupeKey: options.dedupeKey,
      priority: options.priority,
    });
    if ("exists" in made) {
      // Another run holds the dedupe key and has not ended: that run, whatever its args.
      if (made.exists.id !== id) return markAttached(await this.#observe(made.exists.id)) as RunResult<WorkflowResult<W>>;
      if (ifExists === "refuse") throw new RunExistsError(id, made.exists.status);
      return markAttached(await this.#attach(made.exists, workflow.name, made.argsPlain)) as RunResult<WorkflowResult<W>>;
    }
    return made.done as Promise<RunResult<WorkflowResult<W>>>;
  }

  /**
   * A new run and its first attempt, started here (start, and a parent's child step): the args
   * checked and encoded, the run created with its lease, the attempt running. When the id is
   * taken, the run that has it, and nothing written.
   */
  async #create(
    workflow: Workflow,
    args: unknown,
    options: {
      id: string;
      deadline: number | undefined;
      source?: string | undefined;
      parent?: string;
      signal?: AbortSignal | undefined;
      dedupeKey?: string | undefined;
      priority?: number | undefined;
    },
  ): Promise<{ exists: StoredRun["run"]; argsPlain: string } | { done: Promise<RunResult> }> {
    const { id, deadline } = options;
    // Awaited only when they answer with a promise (an args schema, a codec that seals asynchronously).
    const checking = checkArgs(workflow, args);
    const checked = checking instanceof Promise ? await checking : checking;
    if (!checked.ok) throw new ArgsRejectedError(undefined, workflow.name, checked.issues, false);
    const encoding = this.#settings.payloads.encode(args, `The args of run ${JSON.stringify(id)}`, { runId: id });
    const { plain: argsPlain, stored: argsText } = "then" in encoding ? await encoding : encoding;
    const tracing = this.#settings.tracing;
    const now = this.#settings.clock.now();
    const flow = flowColumns(workflow.name, workflow.flow, checked.value, { priority: options.priority });
    const dedupeKey = options.dedupeKey === undefined ? null : `${workflow.name}:${options.dedupeKey}`;
    const waitsForTurn = queues(workflow.flow);
    // Traced: the first attempt's span begins before the insert, which records its context with
    // the run (a later attempt anywhere continues its trace); a queued run has no attempt yet and
    // records the caller's span, if any. An insert that creates nothing drops the span unended.
    const caller = tracing?.active();
    const trace = tracing && !waitsForTurn ? tracing.beginAttempt(attemptLabels(workflow, id, 1, "run", undefined), null, caller!) : undefined;
    const traceContext = trace ? trace.traceparent : tracing ? tracing.callerTraceparent(caller!) : null;
    const { run, first } = startRows({ id, workflow, argsText, source: options.source, deadline, parent: options.parent, now, flow, dedupeKey, traceContext });
    if (waitsForTurn) {
      // A run with limits waits for its turn: queued, then claimed like any due run, now if there is room.
      const queued = await this.#store.enqueueRun(queuedRow(run, now), now);
      if ("exists" in queued) return { exists: queued.exists, argsPlain };
      const done = this.#firstTurn(id, options.signal).finally(() => this.#firstTurns.delete(id));
      this.#firstTurns.set(id, done);
      return { done };
    }
    // Marked live before the lease exists, so no claim in this process can judge it abandoned.
    const live = markLive(await this.#where(), id);
    let created: Awaited<ReturnType<Store["createRun"]>>;
    try {
      created = await this.#store.createRun(run, first, { expiresAt: now + this.#settings.leaseMs, now });
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
    return { done: this.#runAttempt(new Attempt(this.#settings, workflow, stored, created, plan, live, trace), checked.value) };
  }

  /** A queued run's first claim: its first attempt now if the limits leave room, else it waits for its turn (a worker takes it). */
  async #firstTurn(id: string, signal: AbortSignal | undefined): Promise<RunResult> {
    try {
      return await claimAndRun(this.#claims, id, "run", signal ? { signal } : {}, undefined, true);
    } catch (error) {
      // A worker took it first: as an attach does, its attempt's result if it runs in this process.
      if (isSteplogError(error, "RUN_BUSY")) return this.#watch(id);
      // No room now (FLOW_LIMITED), or no longer due: the run as it stands.
      if (!(isSteplogError(error, "FLOW_LIMITED") || error instanceof NotReady)) throw error;
      const stored = await this.#store.loadRun(id);
      if (!stored) throw new RunNotFoundError(id, this.#store.location);
      return storedResult(stored, this.#judge(await this.#where()), this.#settings.payloads);
    }
  }

  /**
   * start's `ifExists: "attach"` for a run that exists (attach.ts): refused unless it is the same
   * run; then the result of its attempt running in this process, once that ends, or the run as
   * stored. Starts no attempt: the signal and deadline given to this start touch nothing.
   */
  async #attach(existing: StoredRun["run"], workflow: string, argsPlain: string): Promise<RunResult> {
    await checkSameRun(existing, workflow, argsPlain, this.#settings.payloads);
    return this.#observe(existing.id);
  }

  /**
   * The result of the run's start claiming its first turn here, or of its attempt running in
   * this process, once it ends; else the run as stored.
   */
  async #observe(id: string): Promise<RunResult> {
    return this.#firstTurns.get(id) ?? this.#watch(id);
  }

  /** The result of the run's attempt running in this process, once it ends, or the run as stored (a first turn itself asks this). */
  async #watch(id: string): Promise<RunResult> {
    for (;;) {
      const local = [...this.#running].find((entry) => entry.attempt.runId === id);
      if (local) return local.done;
      const where = await this.#where();
      if (!isLiveHere(where, id)) {
        const stored = await this.#store.loadRun(id);
        if (!stored) throw new RunNotFoundError(id, this.#store.location);
        return storedResult(stored, this.#judge(where), this.#settings.payloads);
      }
      // Live in this process but not (yet) in this engine: another engine's attempt, or one a
      // claim here is still registering. Look again until it is here or has ended.
      this.#open();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async continue(id: string, options: ContinueOptions = {}): Promise<RunResult> {
    this.#open();
    checkName("run id", id);
    checkContinueOptions(id, options);
    const deadline = this.#deadline(options, `continue(${JSON.stringify(id)})`);
    return claimAndRun(this.#claims, id, "run", options, deadline);
  }

  async compensate(id: string): Promise<RunResult> {
    this.#open();
    checkName("run id", id);
    return claimAndRun(this.#claims, id, "compensate", {}, undefined);
  }

  async send(id: string, event: string, payload?: unknown, options: SendOptions = {}): Promise<Delivery> {
    this.#open();
    checkName("run id", id);
    checkKnownKeys(`send(${JSON.stringify(id)}, ${JSON.stringify(event)})`, options, SEND_KEYS, { runId: id });
    if (options.key !== undefined) checkName("event key", options.key);
    const sent = await sendEvent(this.#store, id, event, payload, options, this.#settings.clock.now(), this.#settings.payloads);
    if (!sent.duplicate) this.#wake();
    return sent;
  }

  async approve(id: string, step: string, options: { by?: string } = {}): Promise<void> {
    this.#open();
    checkName("run id", id);
    checkKnownKeys(`approve(${JSON.stringify(id)}, ${JSON.stringify(step)})`, options, APPROVE_KEYS, { runId: id });
    await answerApproval(
      this.#store,
      id,
      step,
      { approved: true, ...(options.by === undefined ? {} : { by: options.by }) },
      this.#settings.clock.now(),
      this.#settings.payloads,
    );
    this.#wake();
  }

  async reject(id: string, step: string, options: { by?: string; reason?: string } = {}): Promise<void> {
    this.#open();
    checkName("run id", id);
    checkKnownKeys(`reject(${JSON.stringify(id)}, ${JSON.stringify(step)})`, options, REJECT_KEYS, { runId: id });
    await answerApproval(this.#store, id, step, { approved: false, ...options }, this.#settings.clock.now(), this.#settings.payloads);
  }

  async cancel(id: string, options: CancelOptions = {}): Promise<RunStatus> {
    this.#open();
    checkName("run id", id);
    checkKnownKeys(`cancel(${JSON.stringify(id)})`, options, CANCEL_KEYS, { runId: id });
    if (options.children !== undefined && typeof options.children !== "boolean") {
      throw new InvalidOptionError(`cancel(${JSON.stringify(id)}): children must be true or false, got ${String(options.children)}.`, { runId: id });
    }
    const reason = options.reason ?? "cancelled by request";
    const local = [...this.#running].find((entry) => entry.attempt.runId === id);
    let status: RunStatus;
    if (local) {
      local.attempt.endWith("cancelled", new RunCancelledError(id, local.attempt.lastEntered, reason));
      status = (await local.done).runStatus;
    } else {
      status = await cancelStoredRun(this.#store, id, reason, this.#settings.clock.now(), this.#settings.payloads);
      // A parked run's attempt records no ending to wake its parent: the cancel does.
      const parent = (await this.#store.loadRunRow(id))?.parent;
      if (parent) await this.#children.ended(parent, id).catch(() => {});
    }
    if (options.children) {
      // The parent first, so it starts no more; then each child that has not ended, and theirs.
      for (const child of await this.#store.listRuns({ parent: id })) {
        if (ENDED_STATUSES.includes(child.run.status)) continue;
        await this.cancel(child.run.id, { reason: `its parent run ${JSON.stringify(id)} was cancelled: ${reason}`, children: true });
      }
    }
    return status;
  }

  #wake(): void {
    wakeWorkers();
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
    const done = work(
      {
        store: this.#store,
        now: () => this.#settings.clock.now(),
        workflows: () => [...this.#workflows.values()].map((w) => ({ name: w.name, autoResume: w.autoResume, schedule: w.schedule })),
        isInterrupted: async (listing) => listing.run.status === "interrupted" || summarize(listing, this.#judge(await this.#where())).status === "interrupted",
        claimReady: async (runId) => {
          try {
            return await claimAndRun(this.#claims, runId, "run", {}, undefined, true);
          } catch (error) {
            if (error instanceof NotReady || (error instanceof SteplogError && error.code === "RUN_BUSY")) return undefined;
            throw error;
          }
        },
        wakeParentsOfEnded: (workflows) => this.#children.wakeParentsOfEnded(workflows),
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
    this.#workerRuns.add(done);
    try {
      return await done;
    } finally {
      this.#workers.delete(stop);
      this.#workerRuns.delete(done);
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  async escalations(): Promise<Escalation[]> {
    this.#open();
    return listEscalations(this.#store);
  }

  async schedules(options: SchedulesOptions = {}): Promise<ScheduleView[]> {
    this.#open();
    checkKnownKeys("schedules", options, SCHEDULES_KEYS);
    const judge = this.#judge(await this.#where());
    return listSchedules(this.#store, [...this.#workflows.values()], judge.now, options, (listing) => summarize(listing, judge));
  }

  async resolve(id: string, step: string, answer: Resolution): Promise<void> {
    this.#open();
    checkName("run id", id);
    const valid = typeof answer === "object" && answer !== null && ("value" in answer || (answer as { redo?: unknown }).redo === true);
    if (valid) checkKnownKeys(`resolve(${JSON.stringify(id)}, ${JSON.stringify(step)})`, answer, RESOLUTION_KEYS, { runId: id, step });
    if (!valid)
      throw new InvalidOptionError(
        `resolve(${JSON.stringify(id)}, ${JSON.stringify(step)}): pass { value } if the effect happened or { redo: true } if it did not.`,
        { runId: id, step },
      );
    const judge = this.#judge(await this.#where());
    await resolveEscalation(this.#store, id, step, answer, judge.now, this.#settings.payloads, (current) => {
      const { lease } = current;
      const holder = lease?.attempt == null ? undefined : current.attempts.find((a) => a.number === lease.attempt);
      if (!lease || !holder || holderGone(lease, holder, judge)) return undefined;
      return new RunBusyError(id, { attempt: holder.number, host: holder.host, pid: holder.pid, expiresAt: lease.expiresAt });
    });
  }

  /**
   * An attempt run here, known as running until it (and a saga that follows it) ends. Plain
   * handlers rather than an async wrapper or then-then-finally: every run in flight holds them.
   */
  #runAttempt(attempt: Attempt, args: unknown): Promise<RunResult> {
    // The handlers run after this returns, by when `entry` below is made.
    const done: Promise<RunResult> = attempt.run(args).then(
      (result) => {
        if (!needsSaga(attempt, result)) {
          this.#ended(entry);
          return result;
        }
        return this.#compensateAfter(result).finally(() => this.#ended(entry));
      },
      (error: unknown) => {
        this.#ended(entry);
        throw error;
      },
    );
    const entry: RunningAttempt = { attempt, done };
    this.#running.add(entry);
    this.#signals?.install();
    return done;
  }

  #ended(entry: RunningAttempt): void {
    this.#running.delete(entry);
    if (this.#running.size === 0) this.#signals?.uninstall();
  }

  /** onFailure: "compensate": a failed attempt is followed at once by the saga (unless past the pivot). */
  async #compensateAfter(result: RunResult): Promise<RunResult> {
    try {
      const saga = await claimAndRun(this.#claims, result.id, "compensate", {}, undefined);
      return saga.status === "compensated" ? { ...result, runStatus: "compensated" } : result;
    } catch (error) {
      if (error instanceof SteplogError && error.code === "PAST_PIVOT") return result;
      throw error;
    }
  }

  async get(id: string, options: { redact?: boolean } = {}): Promise<RunView> {
    this.#open();
    checkName("run id", id);
    checkKnownKeys(`get(${JSON.stringify(id)})`, options, GET_KEYS, { runId: id });
    const stored = await this.#store.loadRun(id);
    if (!stored) throw new RunNotFoundError(id, this.#store.location);
    const judge = this.#judge(await this.#where());
    const children = (await this.#store.listRuns({ parent: id })).map((listing) => summarize(listing, judge)).reverse();
    const view = await viewRun(stored, judge, this.#settings.payloads, children);
    return options.redact ? redactView(view, this.#redact) : view;
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
    await this.#cancelAll("the engine was closed");
    await Promise.allSettled([...this.#workerRuns]);
    this.#signals?.uninstall();
    await this.#store.close();
  }
}

export type { RunResult, RecoveredRun, Escalation, Resolution, SendOptions, Delivery, WorkOptions, WorkSummary, ScheduleView, SchedulesOptions };

/** An attempt running in this process, and its result (with the saga that may follow it). */
interface RunningAttempt {
  attempt: Attempt;
  done: Promise<RunResult>;
}

/** Whether a failed attempt is followed at once by the saga (onFailure: "compensate"; not after a lost lease). */
function needsSaga(attempt: Attempt, result: RunResult): boolean {
  return attempt.plan.mode === "run" && attempt.workflow.onFailure === "compensate" && result.status === "failed" && result.error?.code !== "LEASE_LOST";
}
