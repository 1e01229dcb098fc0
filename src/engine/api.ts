/**
 * The engine's public surface as types: the Engine interface, the options its methods accept
 * (createEngine's, start's, continue's, list's filter), and the tables of known keys each call
 * checks its options against. Apart from engine.ts so the files that check options and claim
 * runs can read them without importing the engine; engine.ts re-exports every type here.
 */

import type { ReadStreamOptions, StreamItem } from "../operations/read-stream.js";
import type { Clock } from "../base/clock.js";
import type { KnownKeys } from "../base/options.js";
import type { Delivery, SendOptions } from "../operations/events.js";
import type { Codec } from "../payloads/payloads.js";
import type { RedactRule } from "../payloads/redact.js";
import type { ProgressEvent, TestHooks } from "../steps/attempt-settings.js";
import type { RecoveredRun } from "../operations/recover.js";
import type { Escalation, Resolution } from "../operations/escalations.js";
import type { ApprovalsFilter, PendingApproval } from "../operations/approvals.js";

export interface ApproveOptions {
  /** Who approved (recorded). */
  by?: string;
  /** Approve only the input with this digest (as engine.approvals() showed it). */
  inputDigest?: string;
}
import type { RunSummary, RunView } from "../operations/views.js";
import type { StreamInfo } from "../operations/stream-list.js";
import type { ExportOptions, ImportResult, RunExport } from "../operations/export.js";
import type { RunResult } from "../steps/attempt.js";
import type { RunStatus, Store } from "../store/types.js";
import type { Workflow, WorkflowArgs, WorkflowResult } from "../workflow/define-workflow.js";
import type { Budget } from "../workflow/budgets.js";
import type { WorkOptions, WorkSummary } from "./worker.js";
import type { SchedulesOptions, ScheduleView } from "./schedules.js";
import type { PruneOptions, PruneResult } from "./prune-options.js";
import type { RetentionOptions } from "./retention-options.js";

export const TEST_HOOKS = Symbol.for("steplog.testHooks");

export const ENGINE_KEYS: KnownKeys<EngineOptions> = {
  workflows: true,
  store: true,
  leaseMs: true,
  maxValueBytes: true,
  clock: true,
  onProgress: true,
  codec: true,
  redact: true,
  handleSignals: true,
  tracing: true,
  retention: true,
};
export const START_KEYS: KnownKeys<StartOptions> = {
  id: true,
  timeoutMs: true,
  deadline: true,
  signal: true,
  source: true,
  ifExists: true,
  dedupeKey: true,
  priority: true,
  budget: true,
};
export const CONTINUE_KEYS: KnownKeys<ContinueOptions> = {
  fromStep: true,
  values: true,
  force: true,
  redo: true,
  reuse: true,
  timeoutMs: true,
  deadline: true,
  signal: true,
};
export const SEND_KEYS: KnownKeys<SendOptions> = { keep: true, key: true };
export const APPROVE_KEYS: KnownKeys<ApproveOptions> = { by: true, inputDigest: true };
export const APPROVALS_KEYS: KnownKeys<ApprovalsFilter> = { workflow: true, runId: true, redact: true };
export const ESCALATIONS_KEYS: KnownKeys<{ redact?: boolean }> = { redact: true };
export const REJECT_KEYS: KnownKeys<{ by?: string; reason?: string }> = { by: true, reason: true };
export const CANCEL_KEYS: KnownKeys<CancelOptions> = { reason: true, children: true };
export const BUDGET_KEYS: KnownKeys<Budget> = { usd: true, tokens: true };
export const GET_KEYS: KnownKeys<{ redact?: boolean }> = { redact: true };
export const EXPORT_KEYS: KnownKeys<ExportOptions> = { children: true, redact: true };
export const LIST_KEYS: KnownKeys<ListFilter> = { status: true, workflow: true, parent: true, idContains: true, after: true, limit: true };
export const WORK_KEYS: KnownKeys<WorkOptions> = { concurrency: true, pollMs: true, signal: true, sources: true };
export const RESOLUTION_KEYS: KnownKeys<{ value?: unknown; redo?: true; by?: string }> = { value: true, redo: true, by: true };

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
  /**
   * OpenTelemetry spans for attempts and steps (docs/observability.md). Default: on when
   * `@opentelemetry/api` is installed, sent to the globally registered TracerProvider (none
   * registered: nothing recorded); without the package nothing is loaded and nothing changes.
   * `false`: off, the package not even loaded. `true`: as the default, plus a process warning if
   * the package cannot be loaded. `{ tracer }`: spans from this Tracer instead of the global one.
   */
  tracing?: boolean | { tracer: TracerLike };
  /**
   * How long ended runs are kept, by status ("30d", "12h", or ms): `{ completed: "30d", failed:
   * "90d" }`. Applied by workers (engine.work) when they begin and every `every` (default "1h"),
   * one at a time across processes, as engine.prune with `status` set to each status named (a
   * dead-lettered run or one with an open escalation only under its own key). Default: none.
   */
  retention?: RetentionOptions;
  [TEST_HOOKS]?: TestHooks;
}

/**
 * An OpenTelemetry `Tracer`, as `trace.getTracer(name)` of `@opentelemetry/api` returns it; typed
 * loosely so that steplog's types need no OpenTelemetry package installed.
 */
export interface TracerLike {
  startSpan(name: string, options?: object, context?: object): object;
}

export interface StartOptions {
  /** The run's id; default a ULID. Keep it to continue the run later. */
  id?: string;
  /**
   * The run's deadline, this many ms from now (wall clock). It is recorded on the run and holds
   * across attempts and parks: past it the attempt running ends `timed-out`, and a run waiting
   * (for an event, an approval, a timer) is ended `timed-out` by a worker. Default: the
   * workflow's `timeoutMs`, else none.
   */
  timeoutMs?: number;
  /** The run's deadline as a time (a Date, or ms since the epoch); as `timeoutMs`, not with it. */
  deadline?: Date | number;
  /** Aborting it ends the attempt `cancelled`. */
  signal?: AbortSignal;
  /** Where the workflow's code lives (a file path, a package name); recorded once, never overwritten. */
  source?: string;
  /**
   * When a run with this id exists: `"refuse"` (default) rejects with RUN_EXISTS; `"attach"`
   * resolves with that run's result instead (waiting for its attempt when one runs in this
   * process), if it is of the same workflow and was started with the same args (else RUN_EXISTS,
   * naming what differs). Attaching starts no attempt; to go on with an interrupted run, continue it.
   */
  ifExists?: "attach" | "refuse";
  /**
   * While a run of this workflow started with this key has not ended (completed, failed, …),
   * start creates nothing and resolves with that run's result instead (as `ifExists: "attach"`
   * does, whatever the args): a request delivered twice starts one run.
   */
  dedupeKey?: string;
  /** Among due runs, higher runs first (a worker's order); default the workflow's `priority`, else 0. */
  priority?: number;
  /** The run's spending budget (docs/budgets.md); default the workflow's `budget`, else none. */
  budget?: Budget;
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
  /**
   * A new deadline for the run, this many ms from now, replacing the one it has. Without one
   * the run keeps its deadline, except a run that timed out: it goes on with none.
   */
  timeoutMs?: number;
  /** A new deadline as a time; as `timeoutMs`, not with it. */
  deadline?: Date | number;
  signal?: AbortSignal;
}

export interface ListFilter {
  status?: RunStatus | RunStatus[];
  workflow?: string;
  /** Only the child runs of this run. */
  parent?: string;
  /** Only runs whose id contains this text (case-sensitive). */
  idContains?: string;
  /**
   * The id of a run: list only the runs after it, newest first (older, or as old with a greater
   * id). Pass the last run of a page to get the next one; INVALID_OPTION if there is no such run.
   */
  after?: string;
  limit?: number;
}

/** How many runs a filter matches, in all and per workflow (by name). */
export interface RunCount {
  runs: number;
  workflows: Array<{ workflow: string; runs: number }>;
}

export interface CancelOptions {
  /** Recorded with the cancellation (RUN_CANCELLED's message). Default "cancelled by request". */
  reason?: string;
  /** Cancel its child runs that have not ended too, and theirs. Default false. */
  children?: boolean;
}

export interface Engine {
  start<W extends Workflow<any, any>>(workflow: W | string, args: WorkflowArgs<W>, options?: StartOptions): Promise<RunResult<WorkflowResult<W>>>;
  continue(id: string, options?: ContinueOptions): Promise<RunResult>;
  /**
   * The run with its attempts and its step log, in execution order. RUN_NOT_FOUND if there is
   * none. With { redact: true }, values matching the engine's `redact` rules read "[redacted]".
   */
  get(id: string, options?: { redact?: boolean }): Promise<RunView>;
  /**
   * The run as one versioned JSON document (`format: "steplog-run"`, `version: 1`): its run row,
   * attempts, steps and events as stored (a sealed value stays sealed; the document holds no
   * key), with `children: true` its child runs' too. RUN_NOT_FOUND if there is none. With
   * `redact: true` every value is decoded and passed through the `redact` rules, and the
   * document is marked redacted: for reading, not for importing.
   */
  export(id: string, options?: ExportOptions): Promise<RunExport>;
  /**
   * Write an exported run (and the child runs in it) into this engine's store, in one
   * transaction, owned by nobody: a continue goes on with it as with any run cut off. Refused,
   * with nothing written: IMPORT_RUN_EXISTS when the store has a run with its id,
   * IMPORT_INVALID for a document of another format or version, a redacted one, or one whose
   * rows are not a run export's.
   */
  import(doc: RunExport): Promise<ImportResult>;
  /**
   * A run's stream (written with ctx.stream(name)) as an async iterable of `{ type: "chunk",
   * offset, chunk }` items from `from` (inclusive, default 0), following the run live until the
   * stream is closed or the run has ended (`follow: false`: what is recorded now). A
   * `{ type: "reset", offset }` item says a continue redid the step that wrote the chunks from
   * `offset` on: drop them, the new ones follow. RUN_NOT_FOUND if there is no such run.
   */
  readStream(id: string, name: string, options?: ReadStreamOptions): AsyncIterable<StreamItem>;
  /**
   * The run's streams as they stand, in name order: each one's name, its standing chunks and
   * whether it is closed (a stream never written is not listed). RUN_NOT_FOUND if there is no
   * such run; STREAMS_UNSUPPORTED on a store without streamNames.
   */
  streams(id: string): Promise<StreamInfo[]>;
  /**
   * Delete runs that ended before `endedBefore` with every row they own (attempts, lease, steps,
   * events), a run and its child runs together, in small batches (one transaction each); with
   * `dryRun` count them only. Never a run that has not ended, nor a child whose parent is kept;
   * a dead-lettered run or one with an open escalation only when `status` names
   * "dead-lettered" or "escalated". PRUNE_UNSUPPORTED on a store without pruneRuns.
   */
  prune(options: PruneOptions): Promise<PruneResult>;
  /** Runs newest first (ties by id), filtered; a page at a time with `limit` and `after`. */
  list(filter?: ListFilter): Promise<RunSummary[]>;
  /** How many runs `list(filter)` would list without its limit, in all and per workflow. */
  count(filter?: ListFilter): Promise<RunCount>;
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
   * `keep: true` keeps it for a later wait. With `key`, a second send with that key changes
   * nothing and resolves with the first delivery (`duplicate: true`). A worker in this process
   * is woken at once.
   */
  send(id: string, event: string, payload?: unknown, options?: SendOptions): Promise<Delivery>;
  /**
   * Approve an `approval: true` step the run is parked on; a worker picks the run up. A step
   * given an `input` is approved for the input waiting now (its digest is recorded); with
   * `inputDigest` only for that input: refused (APPROVAL_STALE) if the input waiting is another.
   */
  approve(id: string, step: string, options?: ApproveOptions): Promise<void>;
  /** The pending approvals across runs (newest run first), each with the input to be approved and its digest, and `stale` when an earlier approval was for another input. */
  approvals(filter?: ApprovalsFilter): Promise<PendingApproval[]>;
  /** Reject it: the run ends `stopped`, with the reason. */
  reject(id: string, step: string, options?: { by?: string; reason?: string }): Promise<void>;
  /**
   * Set new limits for a run parked on its budget (absolute, each above what it has spent; a
   * limit not given stays), and wake it and the child runs that draw on its budget: a worker
   * (or a continue) goes on. Resolves with the budget now in force.
   */
  raiseBudget(id: string, limits: Budget): Promise<Budget>;
  /**
   * Cancel a run: an attempt of this engine ends `cancelled` cleanly (its step's signal aborted);
   * a run held elsewhere is marked cancelled and its holder fenced out; a parked run stops
   * waiting. A continue goes on later. Resolves with the run's status. With `children: true` its
   * child runs that have not ended are cancelled too (and theirs).
   */
  cancel(id: string, options?: CancelOptions): Promise<RunStatus>;
  /** Run a worker loop over ready runs, and the ticks of the workflows' schedules, until `signal` aborts. */
  work(options?: WorkOptions): Promise<WorkSummary>;
  /** Each schedule of this engine's workflows, with its last started tick and its next ticks (on the engine's clock). */
  schedules(options?: SchedulesOptions): Promise<ScheduleView[]>;
  /** The human queue: steps cut off inside an effect that must not be repeated blindly. */
  escalations(options?: { redact?: boolean }): Promise<Escalation[]>;
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
