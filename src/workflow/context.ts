/**
 * What a workflow's code sees: the context of one attempt, and the options of a step.
 */

import type { ErrorClass } from "../base/errors.js";
import type { InferInput, InferOutput, StandardSchemaV1 } from "./value-schemas.js";
import type { Effect } from "../store/types.js";

export type { Effect };

/** What to do with a step found `intended` with no outcome (the process died inside it). */
export type UnknownOutcomePolicy = "redrive" | "query" | "compensate" | "escalate";

/** Handed to a step's function. */
export interface StepInfo {
  runId: string;
  /** The step's key: its name, or `name#2`, `name#3` for repeats in one run. */
  step: string;
  /** `${runId}:${step}`; the same on every re-drive, `…:2` after a compensation. Pass it to the service. */
  idempotencyKey: string;
  /** The run's attempt number. */
  attempt: number;
  /** This step's retries within the attempt: 0 on the first call. */
  retry: number;
  /** Aborted when the step times out, the run's deadline passes, it is cancelled, or the lease is lost. */
  signal: AbortSignal;
  /** Set when the step is re-driven after an unknown outcome: check whether the effect landed. */
  previous?: { attempt: number; intendedAt: string; idempotencyKey: string };
  /**
   * Report what this call used (a model turn's tokens, an API's cost). Calls add up; the total
   * is stored on the step's record and summed per run (engine.get, the steplog command).
   */
  usage(used: Usage): void;
  /** The step's `input`, when it was given one. */
  input?: unknown;
}

/** What a step used. Every field is optional and numeric; other numeric fields are kept too. */
export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
  [other: string]: number | undefined;
}

export interface QueryInfo {
  runId: string;
  step: string;
  idempotencyKey: string;
  /** The input the cut-off call was recorded with (never the call's new one), when it had one. */
  input?: unknown;
}

export type QueryAnswer<T> = { done: true; value: T } | { done: false };

export interface CompensateInfo {
  runId: string;
  step: string;
  idempotencyKey: string;
}

export interface RetryOptions {
  /** Calls of the function, the first included. Default 1 (no retry). */
  maxAttempts?: number;
  /** Wait before the first retry, in ms. Default 1000. */
  backoffMs?: number;
  /** Each wait is the previous one times this. Default 2. */
  factor?: number;
  /** Cap on one wait, in ms. Default 30000. */
  maxBackoffMs?: number;
  /**
   * Retry only when this says so (it may return a promise: it is awaited). Default: every error
   * except a steplog stop. If it throws, the step fails with its own error, the predicate's as
   * the recorded `cause`.
   */
  retryIf?: (error: unknown, retry: number) => boolean | Promise<boolean>;
}

export interface StepOptions<T = unknown> {
  /** Schema of the value: checked when recorded and again when reused. */
  result?: StandardSchemaV1<unknown, T>;
  /** Turns a value recorded under an older shape into the current one, before the `result` check. */
  upcast?: (value: unknown, info: { version: string | null }) => unknown;
  /** What the step does to the world. Default "idempotent". */
  effect?: Effect;
  /** Overrides the effect's default answer to an unknown outcome. */
  onUnknown?: UnknownOutcomePolicy;
  /** Asks the service whether the effect happened, by idempotency key. */
  query?: (info: QueryInfo) => QueryAnswer<T> | Promise<QueryAnswer<T>>;
  /** The forward action that undoes the effect; must tolerate an effect that never happened. */
  compensate?: (value: T | undefined, info: CompensateInfo) => unknown;
  retry?: RetryOptions;
  /** Abort the function's signal after this many ms; the call fails with STEP_TIMED_OUT. */
  timeoutMs?: number;
  /**
   * Park the run before this step runs until a person calls engine.approve(id, step); with
   * engine.reject(id, step) the run ends stopped. An approval given once stands for the step.
   */
  approval?: boolean;
  /**
   * Error classes to rebuild when a continue throws this step's recorded failure again (a
   * failure the workflow caught is replayed, not redone): an error made by one of them comes
   * back as an instance of it (matched by class name), so `instanceof` works in the handler.
   */
  errors?: readonly ErrorClass[];
  /**
   * What the step acts on (the user, the amount, a tool call's arguments): plain data, encoded
   * like a value. Recorded with the intent (sealed by the codec) with a digest; the function gets
   * it as `info.input`. A continue that reaches the step's settled record with another input
   * stops before it (STEP_INPUT_CHANGED), unless the workflow's `onInputChange` is "redo".
   */
  input?: unknown;
}

export type StepFunction<T> = (info: StepInfo) => T | Promise<T>;

/** A workflow made with defineWorkflow, as ctx.child takes it: its args and result types. */
export interface ChildWorkflow<Args = unknown, R = unknown> {
  readonly kind: "steplog.workflow";
  readonly name: string;
  readonly run: (ctx: WorkflowContext, args: never) => Promise<R>;
  /** Type-only: the args a run of it takes. */
  readonly __args?: Args;
}

export interface ChildOptions {
  /** The child run's id. Default `<parent run id>/<step key>`, the same on every attempt of the parent. */
  id?: string;
  /**
   * `"parent"`: the child draws on the parent's budget (docs/budgets.md): its spend counts toward
   * it, and its steps park when the shared spend has reached it. The parent must have a budget.
   * Without it, the child has its own workflow's budget, if any, and its spend is its own.
   */
  budget?: "parent";
}

/** What ctx.startChild hands back: the child run's id, and a wait for its result. */
export interface ChildHandle<R = unknown> {
  readonly runId: string;
  /**
   * Wait for the child to end, as a step of the parent named `<name>.result`: resolves with its
   * value, or throws CHILD_FAILED. While the child runs elsewhere or waits, the parent parks.
   */
  result(): Promise<R>;
}

/** What ctx.stream(name) returns: a writer of one of the run's streams (docs/streams.md). */
export interface StreamWriter {
  /**
   * Append a chunk (a string or a JSON-encodable value, at most maxValueBytes once encoded; sealed
   * by the codec like a value). It is durable no later than the step that writes it (committed
   * with its outcome at the latest); one written outside a step, with the next write.
   */
  write(chunk: unknown): void;
  /** End the stream: readers stop once they have read it all. A write after it throws STREAM_CLOSED. */
  close(): void;
}

export interface WorkflowContext {
  readonly runId: string;
  /** This attempt's number: 1 for the start, then 2, 3, … */
  readonly attempt: number;
  /** Aborted when the attempt ends early: deadline, cancel, lost lease. */
  readonly signal: AbortSignal;

  /**
   * Run `fn` as a durable step.
   *
   * Failure semantics:
   * - Before `fn` is called, an intent record is durable (committed, possibly in one group commit
   *   with other writes issued at the same moment).
   * - After `fn` returns, its outcome is written. For `compensatable` and `irreversible` steps
   *   `ctx.step` returns only once the outcome is committed; for `read` and `idempotent` steps
   *   the outcome commits with the next write (at the latest the next step's intent or the
   *   attempt's end), so a crash just after may lose it: the step is then found `intended` and
   *   re-driven with the same idempotency key, never silently skipped.
   * - A step with a succeeded record before the start point is never called again: its
   *   recorded value is checked (`upcast`, then `result`) and handed back.
   * - A crash between intent and outcome leaves the step `intended`; the next attempt
   *   resolves it by the step's policy (see `effect`, `onUnknown`), never silently.
   * - The value returned is the decoded stored value, on the first attempt as on later ones.
   * - If `fn` throws after its retries, the error is recorded and rethrown here.
   */
  step<T>(name: string, fn: StepFunction<T>): Promise<T>;
  step<S extends StandardSchemaV1>(
    name: string,
    options: StepOptions<InferOutput<S>> & { result: S },
    fn: StepFunction<InferInput<S>>,
  ): Promise<InferOutput<S>>;
  step<T>(name: string, options: StepOptions<T>, fn: StepFunction<T>): Promise<T>;

  /**
   * Wait for an event sent with engine.send(runId, name, payload). If one already arrived (sent
   * with { keep: true }) it is consumed at once; otherwise the run parks: the attempt ends
   * `waiting`, its lease is released and the process may exit. Events are consumed exactly once,
   * in order of arrival. The payload is checked by `schema` when consumed (EVENT_REJECTED);
   * past `timeoutMs` the wait throws WAIT_TIMED_OUT here.
   */
  waitForEvent<S extends StandardSchemaV1 | undefined = undefined>(
    name: string,
    options?: { schema?: S; timeoutMs?: number },
  ): Promise<S extends StandardSchemaV1 ? InferOutput<S> : unknown>;

  /**
   * Run another workflow as a child run, as a step of this one, and resolve with its value. The
   * child's id (`options.id`, default `<runId>/<step key>`) is recorded in this run's step log
   * before the child starts, so a continue finds the same child and never starts a second. The
   * child's attempt runs here; if it parks (or runs elsewhere), this run parks too and is woken
   * when the child ends. A child that ends otherwise than completed throws CHILD_FAILED here;
   * a continue that redoes this step continues the child.
   */
  child<A, R>(name: string, workflow: ChildWorkflow<A, R>, args: A, options?: ChildOptions): Promise<R>;

  /**
   * Start a child run (as ctx.child does, its id recorded first) and resolve as soon as it exists,
   * its attempt going on in the background; `handle.result()` waits for it.
   */
  startChild<A, R>(name: string, workflow: ChildWorkflow<A, R>, args: A, options?: ChildOptions): Promise<ChildHandle<R>>;

  /** A durable timer: the run parks until `msOrDate` (wall clock; time asleep counts), then goes on. */
  sleep(name: string, msOrDate: number | Date): Promise<void>;

  /**
   * End the attempt `stopped` with a reason. Inside a step, that step is recorded stopped and a
   * continue redoes it; between steps, a continue runs the code between steps again.
   */
  stop(reason: string): never;

  /**
   * A writer of the run's stream `name`, which engine.readStream follows live. A continue that
   * redoes a step that had written chunks supersedes them (and every chunk after them): readers
   * are told with a `reset` item. Chunks written outside a step are not written twice by the
   * replay of a continue.
   */
  stream(name: string): StreamWriter;
}
