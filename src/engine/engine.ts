/**
 * createEngine: the app's handle on runs. start and continue resolve with how the attempt
 * ended; they reject only when the attempt is refused and never began.
 */

import { newRunId } from "./run-ids.js";
import { Attempt, type AttemptPlan, type RunResult } from "../steps/attempt.js";
import { decideClaim, decideWhileWriting, NotReady } from "../ownership/claim.js";
import { isWorkflow, type Workflow, type WorkflowArgs, type WorkflowResult } from "../workflow/define-workflow.js";
import { systemClock, type Clock } from "../base/clock.js";
import type { EngineSettings, ProgressEvent, TestHooks } from "../steps/settings.js";
import {
  ArgsRejectedError,
  EngineClosedError,
  RunBusyError,
  SteplogError,
  CodecKeyMissingError,
  InvalidOptionError,
  StoreUnreadableError,
  RunCancelledError,
  RunExistsError,
  RunNotFoundError,
  WorkflowNotRegisteredError,
} from "../base/errors.js";
import { isLiveHere } from "../ownership/live-attempts.js";
import { watchLease } from "../ownership/lease-watch.js";
import { recoverInterrupted, type RecoveredRun } from "../commands/recover.js";
import { answerApproval, sendEvent, type SendOptions } from "../commands/events.js";
import { cancelStoredRun } from "../commands/cancel.js";
import { validateWorkOptions, wakeWorkers, work, type WorkOptions, type WorkSummary } from "./worker.js";
import { listEscalations, resolveEscalation, type Escalation, type Resolution } from "../commands/escalations.js";
import { SignalHandlers } from "./signal-handlers.js";
import { Payloads, type Codec } from "../payloads/payloads.js";
import type { RedactRule } from "../payloads/redact.js";
import { markDone, markLive, type LiveToken } from "../ownership/live-attempts.js";
import { checkName } from "../workflow/names.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";
import { currentOwner } from "../ownership/owner.js";
import { validate, type Validation } from "../workflow/schema.js";
import { runtimeStore, type RuntimeStore } from "../store/runtime.js";
import { sqliteStore } from "../store/sqlite/store.js";
import type { AttemptRow, Consent, RunFilter, RunRow, RunStatus, Store, StoredRun } from "../store/types.js";
import { DEFAULT_MAX_VALUE_BYTES } from "../payloads/values.js";
import { holderGone, redactView, summarize, viewRun, type Judge, type RunSummary, type RunView } from "../commands/views.js";

export const TEST_HOOKS = Symbol.for("steplog.testHooks");

const ENGINE_KEYS: KnownKeys<EngineOptions> = { workflows: true, store: true, leaseMs: true, maxValueBytes: true, clock: true, onProgress: true, codec: true, redact: true, handleSignals: true };
const START_KEYS: KnownKeys<StartOptions> = { id: true, timeoutMs: true, signal: true, source: true };
const CONTINUE_KEYS: KnownKeys<ContinueOptions> = { fromStep: true, values: true, force: true, redo: true, reuse: true, timeoutMs: true, signal: true };
const SEND_KEYS: KnownKeys<SendOptions> = { keep: true };
const APPROVE_KEYS: KnownKeys<{ by?: string }> = { by: true };
const REJECT_KEYS: KnownKeys<{ by?: string; reason?: string }> = { by: true, reason: true };
const CANCEL_KEYS: KnownKeys<{ reason?: string }> = { reason: true };
const GET_KEYS: KnownKeys<{ redact?: boolean }> = { redact: true };
const LIST_KEYS: KnownKeys<ListFilter> = { status: true, workflow: true, limit: true };
const WORK_KEYS: KnownKeys<WorkOptions> = { concurrency: true, pollMs: true, signal: true };
const RESOLUTION_KEYS: KnownKeys<{ value?: unknown; redo?: true; by?: string }> = { value: true, redo: true, by: true };

export interface EngineOptions {
  /** The workflows whose runs this engine may continue. */
  workflows?: Workflow<any, any>[];
  /** Default: sqliteStore() at `.steplog/steplog.db` under the working directory. */
  store?: Store;
  /** How long a lease lasts without renewal, in ms. Default 30000; renewed every third of it. */
  leaseMs?: number;
  /** Largest encoded value a step may record, in bytes. Default 1 MiB. */
  maxValueBytes?: number;
  /** Wall clock, replaceable in tests. */
  clock?: Clock;
  /** Called with each step and attempt event, for progress views and logs. */
  onProgress?: (event: ProgressEvent) => void;
  /**
   * Encodes every stored payload (step values, args, results, event payloads, error details)
   * and decodes it back; async allowed. encryptedCodec({ keys, current }) seals them with
   * AES-256-GCM. Statuses, names and times stay plain so the step log can still be queried.
   */
  codec?: Codec;
  /** What get(id, { redact: true }) and the steplog command hide: dotted paths ("token", "card.number") or a function. */
  redact?: RedactRule;
  /**
   * Install SIGINT/SIGTERM handlers while attempts run: the first signal cancels them cleanly
   * (the open step recorded failed, leases released, start/continue resolve `cancelled`); a
   * second SIGINT before they have ended exits at once (a crash: the run reads interrupted).
   */
  handleSignals?: boolean;
  [TEST_HOOKS]?: TestHooks;
}

export interface StartOptions {
  /** The run's id; default a ULID. Keep it to continue the run later. */
  id?: string;
  /** A wall-clock deadline this many ms from now; past it the attempt ends `timed-out`. */
  timeoutMs?: number;
  /** Aborting it ends the attempt `cancelled`. */
  signal?: AbortSignal;
  /** Where the workflow's code lives (a file path, a package name); recorded once, never overwritten. */
  source?: string;
}

export interface ContinueOptions {
  /** Redo this step (a key such as "fetch#2", or a name for its first occurrence) and everything after it. */
  fromStep?: string;
  /** Values for steps before `fromStep` that have no succeeded record, by key. */
  values?: Record<string, unknown>;
  /** Take a dead-lettered run back with a fresh attempt budget (recorded on the attempt). */
  force?: boolean;
  /**
   * Succeeded irreversible steps (keys, or names for their first occurrence) this continue may
   * run again. Without consent a continue stops before such a step (REDO_IRREVERSIBLE). A step
   * named here is also a start point: it runs again even when everything before it is reused.
   */
  redo?: string[];
  /** Succeeded irreversible steps after the start point whose records are handed back instead of run again. */
  reuse?: string[];
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface ListFilter {
  status?: RunStatus | RunStatus[];
  workflow?: string;
  limit?: number;
}

export interface Engine {
  start<W extends Workflow<any, any>>(workflow: W | string, args: WorkflowArgs<W>, options?: StartOptions): Promise<RunResult<WorkflowResult<W>>>;
  continue(id: string, options?: ContinueOptions): Promise<RunResult>;
  /**
   * The run with its attempts and its step log, in execution order. RUN_NOT_FOUND if there is
   * none. With { redact: true }, values matching the engine's `redact` rules read "[redacted]".
   */
  get(id: string, options?: { redact?: boolean }): Promise<RunView>;
  list(filter?: ListFilter): Promise<RunSummary[]>;
  /**
   * Find runs whose attempt has no ending and whose owner is gone; mark them interrupted with
   * an explanation and fence the dead owner out. Re-runs nothing. A continue does not need it.
   */
  recover(): Promise<RecoveredRun[]>;
  /**
   * The saga: replay the run from its records and run the `compensate` of every succeeded
   * compensatable step, newest first, each recorded as a step row. Refused with PAST_PIVOT once
   * an irreversible step has succeeded. Takes the lease like a continue; counts no attempt.
   */
  compensate(id: string): Promise<RunResult>;
  /**
   * Record an event for a run. Refused (NOT_WAITING) when the run does not wait for it, unless
   * `keep: true` keeps it for a later wait. A worker in this process is woken at once.
   */
  send(id: string, event: string, payload?: unknown, options?: SendOptions): Promise<void>;
  /** Approve an `approval: true` step the run is parked on; a worker picks the run up. */
  approve(id: string, step: string, options?: { by?: string }): Promise<void>;
  /** Reject it: the run ends `stopped`, with the reason. */
  reject(id: string, step: string, options?: { by?: string; reason?: string }): Promise<void>;
  /**
   * Cancel a run: an attempt of this engine ends `cancelled` cleanly (its step's signal aborted);
   * a run held elsewhere is marked cancelled and its holder fenced out; a parked run stops
   * waiting. A continue goes on later. Resolves with the run's status.
   */
  cancel(id: string, options?: { reason?: string }): Promise<RunStatus>;
  /** Run a worker loop over ready runs until `signal` aborts. */
  work(options?: WorkOptions): Promise<WorkSummary>;
  /** The human queue: steps cut off inside an effect that must not be repeated blindly. */
  escalations(): Promise<Escalation[]>;
  /**
   * A person's answer for an escalated step: `{ value }` (it happened; the value is checked by the
   * step's result schema when the next continue reuses it) or `{ redo: true }` (it did not; the
   * next continue runs it again with the same idempotency key). The run then reads `ready`.
   */
  resolve(id: string, step: string, answer: Resolution): Promise<void>;
  /** Ends this engine's running attempts (`cancelled`, leases released) and closes the store. */
  close(): Promise<void>;
  readonly store: Store;
}

/** continue's redo and reuse, checked: lists of step keys, none in both. Undefined when neither is given. */
function consentOf(id: string, options: ContinueOptions): Consent | undefined {
  const q = JSON.stringify;
  const list = (name: "redo" | "reuse"): string[] => {
    const given = options[name];
    if (given === undefined) return [];
    if (!Array.isArray(given) || given.some((k) => typeof k !== "string" || k === "")) {
      throw new InvalidOptionError(`continue(${q(id)}): ${name} must be an array of step keys (or names), e.g. { ${name}: ["charge"] }.`, { runId: id });
    }
    return [...new Set(given)];
  };
  const redo = list("redo");
  const reuse = list("reuse");
  const both = redo.filter((k) => reuse.includes(k));
  if (both.length > 0) {
    throw new InvalidOptionError(`continue(${q(id)}): step ${q(both[0])} is in both redo and reuse; a step is either run again or handed back. Name it in one of them.`, { runId: id, step: both[0]! });
  }
  return redo.length + reuse.length === 0 ? undefined : { redo, reuse };
}

/** The longest a continue waits to see a lease go unrenewed (a longer lease is refused at once: RUN_BUSY says why). */
const MAX_CLAIM_WAIT_MS = 120_000;

/** A clock that reads whole ms (a clock made from performance.now() reads fractions). */
function wholeMs(clock: Clock): Clock {
  return clock === systemClock ? clock : { now: () => Math.floor(clock.now()) };
}

/** Wait `ms`, or less if `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

export function createEngine(options: EngineOptions = {}): Engine {
  return new SteplogEngine(options);
}

class SteplogEngine implements Engine {
  readonly store: Store;
  readonly #store: RuntimeStore;
  readonly #settings: EngineSettings;
  readonly #workflows = new Map<string, Workflow>();
  readonly #running = new Set<{ attempt: Attempt; done: Promise<RunResult> }>();
  #closed = false;
  readonly #signals: SignalHandlers | undefined;
  readonly #workers = new Set<AbortController>();
  readonly #workerRuns = new Set<Promise<WorkSummary>>();
  readonly #redact: RedactRule | undefined;

  constructor(options: EngineOptions) {
    checkKnownKeys("createEngine", options, ENGINE_KEYS);
    // Every stored time is a whole number of ms (Postgres keeps them in bigint columns): times
    // read from the clock are rounded down, lengths of time and what they lead to rounded up.
    const leaseMs = Math.ceil(options.leaseMs ?? 30_000);
    if (!(leaseMs >= 30)) throw new InvalidOptionError(`createEngine: leaseMs must be at least 30 ms, got ${String(options.leaseMs)}.`);
    const maxValueBytes = options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES;
    if (!(maxValueBytes > 0)) throw new InvalidOptionError(`createEngine: maxValueBytes must be > 0, got ${String(options.maxValueBytes)}.`);
    this.store = options.store ?? sqliteStore();
    // The engine uses the store through its runtime wrapper: defaults, one closed guard (store/runtime.ts).
    this.#store = runtimeStore(this.store);
    this.#settings = {
      store: this.#store,
      clock: wholeMs(options.clock ?? systemClock),
      leaseMs,
      maxValueBytes,
      payloads: new Payloads(maxValueBytes, options.codec, this.#store.location),
      onProgress: options.onProgress,
      hooks: options[TEST_HOOKS],
    };
    for (const workflow of options.workflows ?? []) this.#register(workflow);
    this.#redact = options.redact;
    if (options.handleSignals) {
      this.#signals = new SignalHandlers((signal) => this.#cancelAll(`received ${signal}`), () => this.#running.size);
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

  #deadline(timeoutMs: number | undefined, where: string): number | undefined {
    if (timeoutMs === undefined) return undefined;
    if (!(typeof timeoutMs === "number" && timeoutMs > 0)) throw new InvalidOptionError(`${where}: timeoutMs must be a number of milliseconds > 0, got ${String(timeoutMs)}.`);
    return Math.ceil(this.#settings.clock.now() + timeoutMs);
  }

  async start<W extends Workflow<any, any>>(workflowOrName: W | string, args: WorkflowArgs<W>, options: StartOptions = {}): Promise<RunResult<WorkflowResult<W>>> {
    this.#open();
    const workflow = typeof workflowOrName === "string" ? this.#workflow(workflowOrName, undefined) : workflowOrName;
    checkKnownKeys(`start(${JSON.stringify(workflow.name)})`, options, START_KEYS);
    if (typeof workflowOrName !== "string") this.#register(workflow);
    const id = options.id === undefined ? newRunId() : checkName("run id", options.id);
    const deadline = this.#deadline(options.timeoutMs, `start(${JSON.stringify(workflow.name)})`);
    if (options.source !== undefined && typeof options.source !== "string") {
      throw new InvalidOptionError(`start(${JSON.stringify(workflow.name)}): source must be a string (a file path, a package name), got ${typeof options.source}.`, { runId: id });
    }
    const checked = await this.#checkArgs(workflow, args);
    if (!checked.ok) throw new ArgsRejectedError(undefined, workflow.name, checked.issues, false);
    const argsText = (await this.#settings.payloads.encode(args, `The args of run ${JSON.stringify(id)}`, { runId: id })).stored;
    const now = this.#settings.clock.now();
    const run: RunRow = {
      id,
      workflow: workflow.name,
      version: workflow.version ?? null,
      args: argsText,
      status: "running",
      attempts: 1,
      budgetUsed: 1,
      source: options.source ?? null,
      deadline: deadline ?? null,
      value: null,
      error: null,
      waitingFor: null,
      wakeAt: null,
      createdAt: now,
      updatedAt: now,
    };
    const first: AttemptRow = { runId: id, number: 1, ...currentOwner(), startedAt: now, endedAt: null, ending: null, fromStep: null, forced: false, error: null };
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
      throw new RunExistsError(id, created.exists.status);
    }
    const stored: StoredRun = { run, attempts: [first], steps: [], lease: null, events: [] };
    const plan: AttemptPlan = { mode: "run", fromStep: undefined, values: undefined, redo: new Set(), reuse: new Set(), ignoreVersion: false, deadline, signal: options.signal };
    return this.#runAttempt(new Attempt(this.#settings, workflow, stored, created, plan, live), checked.value) as Promise<RunResult<WorkflowResult<W>>>;
  }

  async continue(id: string, options: ContinueOptions = {}): Promise<RunResult> {
    this.#open();
    checkName("run id", id);
    checkKnownKeys(`continue(${JSON.stringify(id)})`, options, CONTINUE_KEYS, { runId: id });
    if (options.fromStep !== undefined && typeof options.fromStep !== "string") {
      throw new InvalidOptionError(`continue(${JSON.stringify(id)}): fromStep must be a step key or name.`, { runId: id });
    }
    if (options.values !== undefined && (typeof options.values !== "object" || options.values === null || Array.isArray(options.values))) {
      throw new InvalidOptionError(`continue(${JSON.stringify(id)}): values must be an object of step key → value.`, { runId: id });
    }
    if (options.values !== undefined && options.fromStep === undefined && Object.keys(options.values).length > 0) {
      // Without fromStep the first step with no record is the start point: it runs, and a value
      // given for it would be ignored without a word.
      throw new InvalidOptionError(
        `continue(${JSON.stringify(id)}): values are for steps before fromStep, and no fromStep was given. ` +
          `Type engine.continue(${JSON.stringify(id)}, { fromStep: "<the step to redo from>", values: { … } }); without values, a continue runs the first step with no record.`,
        { runId: id },
      );
    }
    consentOf(id, options);
    const deadline = this.#deadline(options.timeoutMs, `continue(${JSON.stringify(id)})`);
    return this.#claimAndRun(id, "run", options, deadline);
  }

  async compensate(id: string): Promise<RunResult> {
    this.#open();
    checkName("run id", id);
    return this.#claimAndRun(id, "compensate", {}, undefined);
  }

  /** A CodecKeyMissingError for the first record of the run this engine's codec cannot open, if any. */
  #unopenable(current: StoredRun): CodecKeyMissingError | StoreUnreadableError | undefined {
    const payloads = this.#settings.payloads;
    const runId = current.run.id;
    const damaged = (what: string, reason: string) =>
      new StoreUnreadableError(
        this.#store.location,
        `run ${JSON.stringify(runId)}: ${what} does not decode (${reason}), so the store is damaged there`,
        undefined,
        false,
        `The run was not continued and nothing was written. Restore the store from a backup; steplog never overwrites it.`,
      );
    const sealed = payloads.sealedBeyond(current);
    if (sealed) return sealed;
    for (const step of current.steps) {
      const broken = payloads.damage(step.value) ?? payloads.damage(step.error);
      if (broken !== undefined) return damaged(`the record of step ${JSON.stringify(step.key)} (attempt ${step.attempt})`, broken);
    }
    for (const event of current.events) {
      const broken = payloads.damage(event.payload);
      if (broken !== undefined) return damaged(`the payload of event ${JSON.stringify(event.name)}`, broken);
    }
    return undefined;
  }

  /** Claim the run's lease (refusing in DESIGN's order) and run one attempt in `mode`. */
  async #claimAndRun(id: string, mode: "run" | "compensate", options: ContinueOptions, deadline: number | undefined, requireReady = false): Promise<RunResult> {
    // Only the run row is needed here: the claim reads the whole run in its own transaction.
    const before = await this.#store.loadRunRow(id);
    if (!before) throw new RunNotFoundError(id, this.#store.location);
    const workflow = this.#workflow(before.workflow, id);
    // Args never change after the start, so they are checked before the claim; the verdict is
    // applied inside it, after the refusals that come first.
    const args = await this.#checkArgs(workflow, await this.#settings.payloads.decode(before.args));
    const now = this.#settings.clock.now();
    let statusBefore: RunStatus | undefined;
    let live: LiveToken | undefined;
    const where = await this.#where();
    const decide = (current: StoredRun, seen?: { whileWriting: true }) => {
      if (seen?.whileWriting) return decideWhileWriting(current);
      statusBefore = current.run.status;
      // A record this engine cannot open would fail the attempt part-way, counting it (a worker
      // missing a key after a rotation would dead-letter the run): refused here, nothing counted.
      const sealed = this.#unopenable(current);
      if (sealed) return { kind: "refuse" as const, error: sealed };
      // A store may decide again after a lost connection: this claim's own mark from the try
      // before must not count as another attempt in this process holding the run.
      if (live) markDone(live);
      live = undefined;
      const decision = decideClaim(current, {
        mode,
        workflow,
        fromStep: options.fromStep,
        consent: consentOf(id, options),
        force: options.force === true,
        deadline,
        args,
        now,
        leaseMs: this.#settings.leaseMs,
        owners: { isHeldHere: () => isLiveHere(where, id), watch: (lease) => watchLease(where, lease) },
        requireReady,
      });
      // Marked live inside the claim's transaction: between its commit and the attempt's start,
      // another claim in this process must already see the run held.
      if (decision.kind === "take") live = markLive(where, id);
      return decision;
    };
    let claimed: Awaited<ReturnType<Store["claimRun"]>>;
    // A holder judged by its lease alone counts as gone only once this process has watched the
    // lease go unrenewed for a full period: a continue waits until then, looking again every
    // second, and is refused as soon as the lease is renewed (its holder is alive). A worker does
    // not wait: it looks again at its next poll.
    let decidedBy: number | undefined;
    for (;;) {
      try {
        claimed = await this.#store.claimRun(id, decide);
        break;
      } catch (error) {
        if (live) markDone(live);
        live = undefined;
        const wait = error instanceof RunBusyError ? error.decidedInMs : undefined;
        if (requireReady || wait === undefined || wait > MAX_CLAIM_WAIT_MS || options.signal?.aborted) throw error;
        const at = performance.now();
        // Renewed while watched: the deadline moved on.
        if (decidedBy !== undefined && at + wait > decidedBy + 250) throw error;
        if (decidedBy === undefined) {
          decidedBy = at + wait;
          this.#settings.onProgress?.({ type: "claim-waiting", runId: id, holder: (error as RunBusyError).holder, waitMs: wait });
        }
        await pause(Math.min(wait + 25, 1000), options.signal);
      }
    }
    if (claimed.kind === "missing") throw new RunNotFoundError(id, this.#store.location);
    const plan: AttemptPlan = {
      mode,
      fromStep: options.fromStep,
      values: options.values,
      redo: new Set(options.redo ?? []),
      reuse: new Set(options.reuse ?? []),
      // A run that has ever parked reuses its succeeded steps whatever the version: a deploy
      // while a run waits is normal.
      ignoreVersion: claimed.state.attempts.some((a) => a.ending === "waiting"),
      deadline,
      signal: options.signal,
      ...(statusBefore === undefined ? {} : { statusBefore }),
    };
    return this.#runAttempt(new Attempt(this.#settings, workflow, claimed.state, claimed.lease, plan, live!), (args as { value: unknown }).value);
  }

  async send(id: string, event: string, payload?: unknown, options: SendOptions = {}): Promise<void> {
    this.#open();
    checkName("run id", id);
    checkKnownKeys(`send(${JSON.stringify(id)}, ${JSON.stringify(event)})`, options, SEND_KEYS, { runId: id });
    await sendEvent(this.#store, id, event, payload, options, this.#settings.clock.now(), this.#settings.payloads);
    this.#wake();
  }

  async approve(id: string, step: string, options: { by?: string } = {}): Promise<void> {
    this.#open();
    checkName("run id", id);
    checkKnownKeys(`approve(${JSON.stringify(id)}, ${JSON.stringify(step)})`, options, APPROVE_KEYS, { runId: id });
    await answerApproval(this.#store, id, step, { approved: true, ...(options.by === undefined ? {} : { by: options.by }) }, this.#settings.clock.now(), this.#settings.payloads);
    this.#wake();
  }

  async reject(id: string, step: string, options: { by?: string; reason?: string } = {}): Promise<void> {
    this.#open();
    checkName("run id", id);
    checkKnownKeys(`reject(${JSON.stringify(id)}, ${JSON.stringify(step)})`, options, REJECT_KEYS, { runId: id });
    await answerApproval(this.#store, id, step, { approved: false, ...options }, this.#settings.clock.now(), this.#settings.payloads);
  }

  async cancel(id: string, options: { reason?: string } = {}): Promise<RunStatus> {
    this.#open();
    checkName("run id", id);
    checkKnownKeys(`cancel(${JSON.stringify(id)})`, options, CANCEL_KEYS, { runId: id });
    const reason = options.reason ?? "cancelled by request";
    const local = [...this.#running].find((entry) => entry.attempt.runId === id);
    if (local) {
      local.attempt.endWith("cancelled", new RunCancelledError(id, local.attempt.lastEntered, reason));
      return (await local.done).runStatus;
    }
    return cancelStoredRun(this.#store, id, reason, this.#settings.clock.now(), this.#settings.payloads);
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
        workflows: () => [...this.#workflows.values()].map((w) => ({ name: w.name, autoResume: w.autoResume })),
        isInterrupted: async (listing) => listing.run.status === "interrupted" || summarize(listing, this.#judge(await this.#where())).status === "interrupted",
        claimReady: async (runId) => {
          try {
            return await this.#claimAndRun(runId, "run", {}, undefined, true);
          } catch (error) {
            if (error instanceof NotReady || (error instanceof SteplogError && error.code === "RUN_BUSY")) return undefined;
            throw error;
          }
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

  async resolve(id: string, step: string, answer: Resolution): Promise<void> {
    this.#open();
    checkName("run id", id);
    const valid = typeof answer === "object" && answer !== null && ("value" in answer || (answer as { redo?: unknown }).redo === true);
    if (valid) checkKnownKeys(`resolve(${JSON.stringify(id)}, ${JSON.stringify(step)})`, answer, RESOLUTION_KEYS, { runId: id, step });
    if (!valid) throw new InvalidOptionError(`resolve(${JSON.stringify(id)}, ${JSON.stringify(step)}): pass { value } if the effect happened or { redo: true } if it did not.`, { runId: id, step });
    const judge = this.#judge(await this.#where());
    await resolveEscalation(this.#store, id, step, answer, judge.now, this.#settings.payloads, (current) => {
      const { lease } = current;
      const holder = lease?.attempt == null ? undefined : current.attempts.find((a) => a.number === lease.attempt);
      if (!lease || !holder || holderGone(lease, holder, judge)) return undefined;
      return new RunBusyError(id, { attempt: holder.number, host: holder.host, pid: holder.pid, expiresAt: lease.expiresAt });
    });
  }

  async #checkArgs(workflow: Workflow, args: unknown): Promise<Validation<unknown>> {
    return workflow.args ? validate(workflow.args, args) : { ok: true, value: args };
  }

  #runAttempt(attempt: Attempt, args: unknown): Promise<RunResult> {
    const done = attempt.run(args).then((result) => this.#afterFailure(attempt, result));
    const entry = { attempt, done };
    this.#running.add(entry);
    this.#signals?.install();
    return done.finally(() => {
      this.#running.delete(entry);
      if (this.#running.size === 0) this.#signals?.uninstall();
    });
  }

  /** onFailure: "compensate": a failed attempt is followed at once by the saga (unless past the pivot). */
  async #afterFailure(attempt: Attempt, result: RunResult): Promise<RunResult> {
    if (attempt.plan.mode !== "run" || attempt.workflow.onFailure !== "compensate" || result.status !== "failed" || result.error?.code === "LEASE_LOST") return result;
    try {
      const saga = await this.#claimAndRun(result.id, "compensate", {}, undefined);
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
    const view = await viewRun(stored, this.#judge(await this.#where()), this.#settings.payloads);
    return options.redact ? redactView(view, this.#redact) : view;
  }

  async list(filter: ListFilter = {}): Promise<RunSummary[]> {
    this.#open();
    checkKnownKeys("list", filter, LIST_KEYS);
    const wanted = filter.status === undefined ? undefined : Array.isArray(filter.status) ? filter.status : [filter.status];
    // `interrupted` is derived from `running` rows whose owner is gone.
    const stored: RunFilter = {};
    if (wanted) stored.status = wanted.includes("interrupted") && !wanted.includes("running") ? [...wanted, "running"] : wanted;
    if (filter.workflow !== undefined) stored.workflow = filter.workflow;
    const judge = this.#judge(await this.#where());
    const summaries = (await this.#store.listRuns(stored)).map((listing) => summarize(listing, judge));
    const matching = wanted ? summaries.filter((s) => wanted.includes(s.status)) : summaries;
    return filter.limit === undefined ? matching : matching.slice(0, filter.limit);
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

export type { RunResult, RecoveredRun, Escalation, Resolution, SendOptions, WorkOptions, WorkSummary };
