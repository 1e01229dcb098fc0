/**
 * One attempt's state: the run and its records, the engine's settings, and the three parts the
 * calls work through (the call order, the writes, the ending). Also the small types the step
 * protocol shares (the attempt's plan, a saga's entries, a stop's signal).
 */

import { StoppedError } from "../base/errors.js";
import type { Clock } from "../base/clock.js";
import type { Workflow } from "../workflow/define-workflow.js";
import type { Lease, StoredRun } from "../store/types.js";
import type { Payloads } from "../payloads/payloads.js";
import type { EngineSettings, ProgressEvent, TestHooks } from "./attempt-settings.js";
import type { WaitingFor } from "../workflow/step-resolution.js";
import type { AttemptTrace } from "./step-spans.js";
import type { StepCall } from "./step-call.js";
import { WatchedSteps } from "./watched-steps.js";
import { CallOrder, NO_KEYS } from "./call-order.js";
import type { AttemptPlan } from "./attempt-plan.js";
import { AttemptWrites } from "./attempt-writes.js";
import { AttemptEnding, type EndReason, type InFlight } from "./attempt-ending.js";
import { budgetOf, type RunBudget } from "./run-budget.js";

export { NO_KEYS };
export type { AttemptPlan };
export type { EndReason };
export type { WaitingFor };

/** A compensatable step the saga's replay reached: its call (with its compensate) and its recorded value. */
export interface SagaEntry {
  key: string;
  call: StepCall;
  value: unknown;
}

/** What the step path asks of the attempt's stream writers (streams.ts). */
export interface StreamsOfAttempt {
  /** Queue the writes ready to be (before an intent or an outcome); false when one is not ready yet: wait for `idle()` first. */
  queued(): boolean;
  /** Resolves once every write given so far is queued with the store. */
  idle(): Promise<void>;
  /** A step runs anew: what it wrote before is superseded. */
  redo(key: string): void;
}

/** Signals ctx.stop(reason) through the workflow's code. */
export class StopRequest extends Error {
  override name = "StopRequest";
  constructor(readonly reason: string) {
    super(`stopped: ${reason}`);
  }
}

/**
 * One attempt's state, in three parts with their own methods: the call order the planner reads
 * (call-order.ts), the attempt's writes (attempt-writes.ts) and its ending (attempt-ending.ts);
 * beside them what every call reads (the run, its records, the engine's payloads, clock and
 * hooks) and the attempt's counts. The attempt's lifecycle (attempt.ts) creates it.
 */
export class AttemptState {
  readonly runId: string;
  readonly number: number;
  readonly order: CallOrder;
  readonly writes: AttemptWrites;
  readonly ending: AttemptEnding;
  /** The steps in flight (the ending waits for them): the ending's. */
  readonly inFlight: InFlight;
  /** What the step path reads of the engine's settings. */
  readonly payloads: Payloads;
  readonly clock: Clock;
  readonly hooks: TestHooks | undefined;
  /**
   * Steps whose function ran to an outcome in this attempt, and cut-off records settled by their
   * policy, counted (perf: not kept, with many runs at once every key kept is a survivor the
   * collector copies).
   */
  ran = 0;
  resolved = 0;
  /** The step promises handed to the code: whether a failure among them went unobserved (watched-steps.ts). */
  readonly watched = new WatchedSteps();
  /** The step the previous attempt stopped at, if it stopped (read before the code runs: decoding is async). */
  previousStopStep: string | undefined;
  /** Compensatable steps found by a saga's replay, in the order the code reached them. */
  readonly saga: SagaEntry[] = [];
  /** Made on the first compensation (most runs have none). */
  #compensations: Map<string, number> | undefined = undefined;
  /** The attempt's stream writers, made at its first ctx.stream (streams.ts); most attempts have none. */
  streams: StreamsOfAttempt | undefined = undefined;
  /** The attempt's OpenTelemetry span (step-spans.ts); undefined when the engine does not trace. */
  trace: AttemptTrace | undefined;
  /** The run's spending budget (budget.ts); undefined when it has none, and a step checks nothing. */
  readonly budget: RunBudget | undefined;

  constructor(
    readonly settings: EngineSettings,
    readonly workflow: Workflow,
    readonly stored: StoredRun,
    lease: Lease,
    readonly plan: AttemptPlan,
  ) {
    this.runId = stored.run.id;
    this.number = lease.attempt;
    this.payloads = settings.payloads;
    this.clock = settings.clock;
    this.hooks = settings.hooks;
    this.ending = new AttemptEnding(this.runId, this.number);
    this.inFlight = this.ending.inFlight;
    this.writes = new AttemptWrites(settings.store, lease, this.runId, this.ending, (stored.steps.at(-1)?.seq ?? 0) + 1);
    const ending = this.ending;
    this.order = new CallOrder({
      runId: this.runId,
      attempt: this.number,
      stored,
      plan,
      onOrderChange: workflow.onOrderChange,
      stop: (error) => ending.stopWith(error),
    });
    for (const row of stored.steps) if (row.status === "compensated") this.addCompensation(row.key);
    this.budget = stored.run.costBudget == null ? undefined : budgetOf(stored);
  }

  get version(): string | null {
    return this.workflow.version ?? null;
  }

  /** True when someone listens to progress events (so hot paths skip building them otherwise). */
  get listening(): boolean {
    return this.settings.onProgress !== undefined;
  }

  emit(event: ProgressEvent): void {
    try {
      this.settings.onProgress?.(event);
    } catch {
      // A progress listener must never break a run.
    }
  }

  compensations(key: string): number {
    // Asked on every step's path; most runs never compensate.
    return this.#compensations === undefined ? 0 : (this.#compensations.get(key) ?? 0);
  }

  addCompensation(key: string): void {
    (this.#compensations ??= new Map()).set(key, this.compensations(key) + 1);
  }

  /** `${runId}:${key}`, and `…:2`, `…:3` once the step has been compensated. */
  idempotencyKeyFor(key: string): string {
    const base = `${this.runId}:${key}`;
    const compensations = this.compensations(key);
    return compensations === 0 ? base : `${base}:${compensations + 1}`;
  }

  /** A fenced write before a function is called again on its old row (writes.confirmLease). */
  confirmLease(): Promise<void> {
    return this.writes.confirmLease(this.clock, this.settings.leaseMs);
  }

  /** A stop names the last step entered and the fromStep to use; a repeat of the last attempt's stop says so. */
  stopError(reason: string): StoppedError {
    const step = this.order.lastEntered;
    const q = JSON.stringify;
    const previous = this.stored.attempts.filter((a) => a.number < this.number).at(-1);
    if (step !== undefined && this.ran === 0 && previous?.ending === "stopped" && this.previousStopStep === step) {
      return new StoppedError(
        this.runId,
        step,
        reason,
        `This attempt ran no step and stopped where attempt ${previous.number} did: the check ran on reused values, so it will stop again. ` +
          `To redo step ${q(step)}, type engine.continue(${q(this.runId)}, { fromStep: ${q(step)} }).`,
      );
    }
    const next =
      step === undefined
        ? `To go on, type engine.continue(${q(this.runId)}).`
        : `To go on, type engine.continue(${q(this.runId)}); to redo step ${q(step)} and everything after it, engine.continue(${q(this.runId)}, { fromStep: ${q(step)} }).`;
    return new StoppedError(this.runId, step, reason, next);
  }
}

/**
 * The step each error thrown out of ctx.step failed in: with steps running at once, the last step
 * entered is not always the one that failed, and the attempt's error must name the right one.
 */
const failedSteps = new WeakMap<object, string>();

export function markFailedStep(error: unknown, key: string): unknown {
  if (typeof error === "object" && error !== null && !failedSteps.has(error)) failedSteps.set(error, key);
  return error;
}

/** The step an error thrown out of ctx.step failed in, if it was one. */
export function failedStepOf(error: unknown): string | undefined {
  return typeof error === "object" && error !== null ? failedSteps.get(error) : undefined;
}
