/**
 * One attempt of one run, under a lease: runs the workflow's code with a context, keeps
 * the lease alive, enforces the deadline and the abort signal, and records how it ended.
 * The step protocol itself lives in step-runner.ts.
 */

import type { StepFunction, StepOptions, WorkflowContext } from "../workflow/context.js";
import type { Workflow } from "../workflow/define-workflow.js";
import {
  AttemptEndedError,
  FromStepNotReachedError,
  isSteplogError,
  isStoreRefusal,
  LeaseLostError,
  OrderChangedError,
  RunCancelledError,
  RunTimedOutError,
  SteplogError,
  StoppedError,
  toErrorInfo,
  type ErrorInfo,
} from "../base/errors.js";
import type { EngineSettings, ProgressEvent } from "./settings.js";
import { fault } from "../base/faults.js";
import { LeaseKeeper } from "../ownership/lease-keeper.js";
import { markDone, type LiveToken } from "../ownership/live-attempts.js";
import { runSaga, unreachable, type SagaEntry } from "./saga.js";
import { IN_SIBLING_WINDOW } from "./launched-beside.js";
import { failedStepOf, runStep, type StepCall } from "./step-runner.js";
import { findHandledFailures } from "./handled-failures.js";
import { sleep, waitForEvent, type WaitingFor } from "./waits.js";
import type { AttemptEnding, Lease, RunStatus, StepRow, StoredRun } from "../store/types.js";
import { decodeValue } from "../payloads/values.js";

export interface AttemptPlan {
  /** "run": run the workflow; "compensate": replay it from records and compensate (the saga). */
  mode: "run" | "compensate";
  /** The step key to redo from, when given. */
  fromStep: string | undefined;
  values: Record<string, unknown> | undefined;
  /** Succeeded irreversible steps this attempt may run again, and those it hands back (continue's redo and reuse). */
  redo: ReadonlySet<string>;
  reuse: ReadonlySet<string>;
  /** The run's status before this attempt's claim (for a saga that fails). */
  statusBefore?: RunStatus;
  /** A run that was parked reuses its records whatever the version. */
  ignoreVersion: boolean;
  deadline: number | undefined;
  signal: AbortSignal | undefined;
}

export interface RunResult<T = unknown> {
  id: string;
  /** How this attempt ended. */
  status: AttemptEnding;
  /** The run's status afterwards (differs when this was the last attempt allowed). */
  runStatus: RunStatus;
  value?: T;
  error?: ErrorInfo;
  attempt: number;
  /** When the attempt ended `waiting`: what the run waits for, and until when. */
  waitingFor?: WaitingFor;
}

/** Signals ctx.stop(reason) through the workflow's code. */
export class StopRequest extends Error {
  override name = "StopRequest";
  constructor(readonly reason: string) {
    super(`stopped: ${reason}`);
  }
}

interface EndReason {
  ending: AttemptEnding | "lease-lost";
  error: SteplogError;
}

export class Attempt {
  readonly runId: string;
  readonly number: number;
  readonly fence: Lease;
  /** The latest row of each step key: its current state. */
  readonly latest = new Map<string, StepRow>();
  readonly ran: string[] = [];
  readonly reused: string[] = [];
  readonly resolved: string[] = [];
  readonly inFlight = new Set<string>();
  /**
   * The step the last attempt stopped before with REDO_IRREVERSIBLE: a start point of this one
   * too, so what it redid before that step is not followed by stale records after it.
   */
  carriedStart: string | undefined;
  /** Keys whose current row is a failure the workflow handled: thrown again, not redone (handled-failures.ts). */
  handled: ReadonlySet<string> = new Set();
  /** Step names already found valid in this attempt (a loop calls the same name many times). */
  readonly checkedNames = new Set<string>();
  readonly controller = new AbortController();
  /** What the run parked on, when the attempt ends `waiting`. */
  parkedOn: WaitingFor | undefined;
  /** Compensatable steps found by a saga's replay, in the order the code reached them. */
  readonly saga: SagaEntry[] = [];
  readonly #keyCounts = new Map<string, number>();
  readonly #compensations = new Map<string, number>();
  nextSeq: number;
  started: boolean;
  /**
   * The implicit start point while it is unsettled and no other step has run anew: steps entered
   * meanwhile were launched beside it (Promise.all, an SDK's parallel tool calls), so they cannot
   * have used its value, and their succeeded records are reused rather than run again.
   */
  siblingsOf: string | undefined;
  /**
   * The newest attempt whose record this attempt has handed back so far. A sibling's record older
   * than that may have been made from inputs that have changed since: it is not reused.
   */
  newestReused = 0;
  lastEntered: string | undefined;
  endReason: EndReason | undefined;
  #settleEarly!: () => void;
  readonly #endedEarly = new Promise<void>((resolve) => (this.#settleEarly = resolve));
  readonly #keeper: LeaseKeeper;

  constructor(
    readonly settings: EngineSettings,
    readonly workflow: Workflow,
    readonly stored: StoredRun,
    lease: Lease,
    readonly plan: AttemptPlan,
    /** This attempt's registration as live in this process, made when its lease was taken. */
    private readonly live: LiveToken,
  ) {
    this.runId = stored.run.id;
    this.number = lease.attempt;
    this.fence = lease;
    for (const row of stored.steps) {
      this.latest.set(row.key, row);
      if (row.status === "compensated") this.addCompensation(row.key);
    }
    this.nextSeq = (stored.steps.at(-1)?.seq ?? 0) + 1;
    this.started = false;
    this.#keeper = new LeaseKeeper(settings, lease, (error) => this.endWith("lease-lost", error));
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

  /** Steps and waits entered so far: the next one's position in this attempt's call order. */
  entered = 0;

  /** The handed-back record recorded furthest along so far, to see records handed back out of order. */
  #furthest: { key: string; position: number } | undefined;
  #orderChangeSeen = false;

  /**
   * A record is handed back: if it was recorded at an earlier position than one handed back
   * before it, the code enters its steps in another order than when they were recorded (a
   * reordered list: a key may now hold another item's record). Warn once, or stop.
   */
  checkOrder(key: string, record: StepRow): void {
    const position = record.position;
    if (position === null || position === undefined) return;
    const furthest = this.#furthest;
    if (furthest === undefined || position > furthest.position) {
      this.#furthest = { key, position };
      return;
    }
    if (position === furthest.position || this.#orderChangeSeen) return;
    // Keys of a name used once (`greet:${user.id}`) hold their own item whatever the order; only
    // numbered keys (fetch, fetch#2, … in call order) can hand one item's record to another.
    if (!this.#repeatedName(key) && !this.#repeatedName(furthest.key)) return;
    this.#orderChangeSeen = true;
    const name = record.name;
    // Redo from the first step of that name this attempt entered: its record may be another item's too.
    const redoFrom = this.#keyCounts.has(name) ? name : key;
    if (this.workflow.onOrderChange === "stop") {
      const error = new OrderChangedError(this.runId, key, furthest.key, redoFrom);
      this.endWith("stopped", error);
      throw error;
    }
    process.emitWarning(
      `steplog: run ${JSON.stringify(this.runId)}, attempt ${this.number} handed back step ${JSON.stringify(key)} (recorded at position ${position}) after ${JSON.stringify(furthest.key)} (position ${furthest.position}): ` +
        `the code enters its steps in another order than when they were recorded, and records are matched by key, so one may hold another item's value. ` +
        `Name such steps after their item, redo them with engine.continue(${JSON.stringify(this.runId)}, { fromStep: ${JSON.stringify(redoFrom)} }), or set onOrderChange: "stop" on the workflow.`,
      { code: "STEPLOG_ORDER_CHANGED" },
    );
  }

  #repeated: Set<string> | undefined;

  /** True when the key's name has more than one key in the records (name, name#2, …). */
  #repeatedName(key: string): boolean {
    if (!this.#repeated) {
      const keysOf = new Map<string, Set<string>>();
      for (const row of this.stored.steps) keysOf.set(row.name, (keysOf.get(row.name) ?? new Set()).add(row.key));
      this.#repeated = new Set([...keysOf].filter(([, keys]) => keys.size > 1).map(([name]) => name));
    }
    const hash = key.lastIndexOf("#");
    return hash !== -1 || this.#repeated.has(key);
  }

  /** The next key for a step name in call order: name, name#2, name#3, … */
  nextKey(name: string): string {
    const n = (this.#keyCounts.get(name) ?? 0) + 1;
    this.#keyCounts.set(name, n);
    return n === 1 ? name : `${name}#${n}`;
  }

  /** Recorded step keys this attempt has not entered (so far). */
  notReached(): string[] {
    const entered = new Set(this.#keyCounts.keys());
    const reached = (key: string) => {
      const hash = key.lastIndexOf("#");
      const name = hash === -1 ? key : key.slice(0, hash);
      const n = hash === -1 ? 1 : Number(key.slice(hash + 1));
      return entered.has(name) && (this.#keyCounts.get(name) ?? 0) >= n;
    };
    return [...new Set(this.stored.steps.map((s) => s.key))].filter((key) => !reached(key));
  }

  compensations(key: string): number {
    return this.#compensations.get(key) ?? 0;
  }

  addCompensation(key: string): void {
    this.#compensations.set(key, this.compensations(key) + 1);
  }

  /** Await one of this attempt's writes; a refused fence means the lease is lost. */
  async write(write: Promise<void>): Promise<void> {
    try {
      await write;
    } catch (error) {
      throw this.writeFailed(error);
    }
  }

  /**
   * A fenced write committed before a function is called again without a new intent of its own
   * (a compensation cut off by a crash is run again on its old row): refused, and the attempt
   * ended LEASE_LOST, if another attempt took the run meanwhile — as a new intent would be.
   */
  async confirmLease(): Promise<void> {
    const now = this.settings.clock.now();
    await this.write(this.settings.store.renewLease(this.fence, now + this.settings.leaseMs, now));
    if (this.endReason) throw this.endReason.error;
  }

  /** What a failed write means for the attempt: a refused fence ends it (LEASE_LOST). Returns the error to throw. */
  writeFailed(error: unknown): unknown {
    if (error instanceof SteplogError && error.code === "LEASE_LOST") {
      const named = new LeaseLostError(this.runId, this.number, "another attempt took the run over");
      this.endWith("lease-lost", named);
      return named;
    }
    return error;
  }

  /** End the attempt early: no step starts after this, and the signal is aborted. */
  endWith(ending: EndReason["ending"], error: SteplogError): void {
    if (this.endReason) return;
    this.endReason = { ending, error };
    this.controller.abort(error);
    this.checkEarlyEnd();
  }

  checkEarlyEnd(): void {
    if (this.endReason && this.inFlight.size === 0) this.#settleEarly();
  }

  assertRunning(): void {
    if (this.endReason) throw new AttemptEndedError(this.runId, this.number, this.endReason.error.message);
  }

  /** Track a write nobody awaits now (a group-committed outcome); the ending waits for it. */
  track(write: Promise<void>): void {
    this.#tracked++;
    write.then(this.#onTrackedSettled, this.#onTrackedFailed);
  }

  /** Tracked writes not yet settled, and who waits for them all (handlers made once, not per step). */
  #tracked = 0;
  #drained: { promise: Promise<void>; resolve: () => void } | undefined;
  readonly #onTrackedSettled = (): void => {
    if (--this.#tracked > 0 || !this.#drained) return;
    const { resolve } = this.#drained;
    this.#drained = undefined;
    resolve();
  };
  readonly #onTrackedFailed = (error: unknown): void => {
    this.#failedWrite ??= error as Error;
    this.#onTrackedSettled();
  };

  /** The first group-committed write that failed (its promise is handled here, so never unhandled). */
  #failedWrite: Error | undefined;

  /** The step the previous attempt stopped at, if it stopped (read before the code runs: decoding is async). */
  #previousStopStep: string | undefined;

  async run(args: unknown): Promise<RunResult> {
    const previous = this.stored.attempts.filter((a) => a.number < this.number).at(-1);
    if (previous?.ending === "stopped" && previous.error) {
      try {
        const stop = await this.settings.payloads.decodeError(previous.error);
        this.#previousStopStep = stop.step;
        // Stopped before a succeeded irreversible step: that step is where the next continue starts.
        if (stop.code === "REDO_IRREVERSIBLE" && stop.step !== undefined) this.carriedStart = stop.step;
      } catch {
        // Only a hint for a stop's message; an unreadable one (a missing key) must not end the attempt here.
      }
    }
    this.#keeper.start();
    const cleanups = this.#watchDeadlineAndSignal();
    this.emit({ type: "attempt-started", runId: this.runId, workflow: this.workflow.name, attempt: this.number, fromStep: this.plan.fromStep });
    try {
      this.handled = await findHandledFailures(this.stored, this.settings.payloads);
      const settled = await Promise.race([this.#runCode(args), this.#endedEarly.then(() => ({ kind: "ended" as const }))]);
      if (settled.kind !== "ended") await this.#drain();
      if (this.plan.mode === "compensate") return await this.#finishSaga();
      return await this.#finish(settled);
    } finally {
      for (const cleanup of cleanups) cleanup();
      this.#keeper.stop();
      markDone(this.live);
    }
  }

  async #runCode(args: unknown): Promise<{ kind: "returned"; value: unknown } | { kind: "threw"; error: unknown }> {
    try {
      const value = await this.workflow.run(this.#context(), args as never);
      return { kind: "returned", value };
    } catch (error) {
      return { kind: "threw", error };
    }
  }

  /** Wait for steps the code did not await before it returned. */
  async #drain(): Promise<void> {
    while (this.inFlight.size > 0) {
      await new Promise<void>((resolve) => setTimeout(resolve, 5));
    }
  }

  #watchDeadlineAndSignal(): Array<() => void> {
    const cleanups: Array<() => void> = [];
    const { deadline, signal } = this.plan;
    if (deadline !== undefined) {
      // The deadline is a time of day: Node's timers run on a monotonic clock that stops while
      // the machine sleeps, so the wall clock is read again at least every second.
      let timer: NodeJS.Timeout | undefined;
      const check = () => {
        const left = deadline - this.settings.clock.now();
        if (left <= 0) return this.endWith("timed-out", new RunTimedOutError(this.runId, deadline, this.lastEntered));
        timer = setTimeout(check, Math.min(left, 1000));
      };
      check();
      cleanups.push(() => clearTimeout(timer));
    }
    if (signal) {
      const onAbort = () => {
        const reason = signal.reason instanceof Error ? signal.reason.message : signal.reason === undefined ? "signal aborted" : String(signal.reason);
        this.endWith("cancelled", new RunCancelledError(this.runId, this.lastEntered, reason));
      };
      if (signal.aborted) onAbort();
      else {
        signal.addEventListener("abort", onAbort, { once: true });
        cleanups.push(() => signal.removeEventListener("abort", onAbort));
      }
    }
    return cleanups;
  }

  #context(): WorkflowContext {
    const attempt = this;
    return {
      runId: this.runId,
      attempt: this.number,
      signal: this.controller.signal,
      step(name: string, optionsOrFn: StepOptions | StepFunction<unknown>, maybeFn?: StepFunction<unknown>) {
        const call: StepCall =
          typeof optionsOrFn === "function" ? { name, options: {}, fn: optionsOrFn } : { name, options: optionsOrFn ?? {}, fn: maybeFn! };
        return runStep(attempt, call);
      },
      waitForEvent(name: string, options?: { schema?: never; timeoutMs?: number }) {
        return waitForEvent(attempt, name, options);
      },
      sleep(name: string, msOrDate: number | Date) {
        return sleep(attempt, name, msOrDate);
      },
      stop(reason: string): never {
        attempt.endWith("stopped", attempt.stopError(String(reason)));
        throw new StopRequest(String(reason));
      },
      [IN_SIBLING_WINDOW]: () => (attempt.siblingsOf !== undefined ? attempt.newestReused : undefined),
    } as WorkflowContext;
  }

  async #finish(settled: { kind: "returned"; value: unknown } | { kind: "threw"; error: unknown } | { kind: "ended" }): Promise<RunResult> {
    let ending: AttemptEnding;
    let error: ErrorInfo | undefined;
    let valueText: { plain: string; stored: string } | null = null;
    if (this.endReason?.ending === "lease-lost") return await this.#leaseLost(this.endReason.error);
    if (this.endReason?.ending === "waiting") {
      ending = "waiting";
    } else if (this.endReason) {
      ending = this.endReason.ending as AttemptEnding;
      error = toErrorInfo(this.endReason.error);
    } else if (settled.kind === "threw") {
      ending = "failed";
      const thrown = (settled as { error: unknown }).error;
      error = toErrorInfo(thrown, failedStepOf(thrown) ?? this.lastEntered);
    } else if (this.plan.fromStep !== undefined && !this.started) {
      ending = "stopped";
      error = toErrorInfo(new FromStepNotReachedError(this.runId, this.plan.fromStep, this.notReached()));
    } else {
      ending = "completed";
      try {
        valueText = await this.settings.payloads.encode((settled as { value: unknown }).value, `The result of run ${JSON.stringify(this.runId)}`, { runId: this.runId });
      } catch (encodeError) {
        ending = "failed";
        error = toErrorInfo(encodeError);
      }
    }

    // Outcomes committed with a later write must be durable before the ending is.
    const writeFailure = await this.#settlePending();
    if (writeFailure) {
      if ((writeFailure as SteplogError).code === "LEASE_LOST") return await this.#leaseLost(writeFailure);
      ending = "failed";
      // The failure the workflow already met (say, the next step's intent in the same batch) says it best.
      if (error?.code !== "STORE_WRITE_FAILED") error = toErrorInfo(writeFailure);
      valueText = null;
    }

    const run = this.stored.run;
    // A store that refused a statement of steplog's own (a bug in steplog, not in the run) counts no attempt.
    const refusedByStore = [settled.kind === "threw" ? settled.error : undefined, writeFailure, this.endReason?.error].some(isStoreRefusal);
    const counts = ending !== "completed" && ending !== "waiting" && ending !== "escalated" && !refusedByStore;
    const budgetUsed = counts ? run.budgetUsed : Math.max(0, run.budgetUsed - 1);
    const runStatus: RunStatus = counts && budgetUsed >= this.workflow.maxAttempts ? "dead-lettered" : ending;
    return this.#recordEnding({ ending, runStatus, error, value: valueText, budgetUsed, parked: ending === "waiting" ? this.parkedOn : undefined });
  }

  /** Write the attempt's ending with the run's new status (releasing the lease), and say how it ended. */
  async #recordEnding(end: {
    ending: AttemptEnding;
    runStatus: RunStatus;
    error: ErrorInfo | undefined;
    value: { plain: string; stored: string } | null;
    budgetUsed: number;
    parked: WaitingFor | undefined;
  }): Promise<RunResult> {
    const { ending, runStatus, error, value, parked } = end;
    const now = this.settings.clock.now();
    const errorText = error ? await this.settings.payloads.encodeError(error) : null;
    fault("before-end", this.lastEntered ?? "*");
    try {
      await this.settings.store.endAttempt(this.fence, {
        attempt: this.number,
        ending,
        endedAt: now,
        error: errorText,
        run: {
          status: runStatus,
          value: value?.stored ?? null,
          error: errorText,
          budgetUsed: end.budgetUsed,
          updatedAt: now,
          waitingFor: parked ? JSON.stringify(parked) : null,
          wakeAt: parked?.until ?? null,
        },
        reused: this.reused,
        // An event (or approval) that arrived while this attempt was parking wakes the run at once.
        // Not for an approval: one cannot arrive before the run is parked on it, and the answers
        // of earlier asks (a rejection before a continue asked again) are kept, never consumed.
        ...(parked?.kind === "event" ? { wakeOnEvent: parked.event! } : {}),
      });
    } catch (endError) {
      if (endError instanceof SteplogError && endError.code === "LEASE_LOST") return await this.#leaseLost(endError);
      // A store that failed a step's write first (a full disk) fails the ending too: the first failure, naming its step, says what happened.
      const info = error?.code === "STORE_WRITE_FAILED" && isSteplogError(endError, "STORE_WRITE_FAILED") ? error : toErrorInfo(endError);
      this.emit({ type: "attempt-ended", runId: this.runId, attempt: this.number, status: "failed", runStatus: "running", error: info });
      return { id: this.runId, status: "failed", runStatus: "running", error: info, attempt: this.number };
    }
    const result: RunResult = { id: this.runId, status: ending, runStatus, attempt: this.number };
    if (parked) result.waitingFor = parked;
    if (value !== null) result.value = decodeValue(value.plain);
    if (error) result.error = error;
    this.emit({ type: "attempt-ended", runId: this.runId, attempt: this.number, status: ending, runStatus, ...(error ? { error } : {}) });
    return result;
  }

  /** The saga's ending: every reachable compensatable step compensated, or why not. */
  async #finishSaga(): Promise<RunResult> {
    if (this.endReason?.ending === "lease-lost") return await this.#leaseLost(this.endReason.error);
    let error: ErrorInfo | undefined;
    // However the replayed code ends (returns, throws, stops: often the very failure being
    // compensated), the replay is over; only a cancel or a deadline stops the saga itself.
    if (this.endReason && this.endReason.ending !== "stopped") error = toErrorInfo(this.endReason.error);
    else {
      const missing = unreachable(this);
      if (missing.length > 0) {
        error = {
          name: "Error",
          message: `Run ${JSON.stringify(this.runId)}: the code no longer reaches compensatable step(s) ${missing.map((k) => JSON.stringify(k)).join(", ")}, so their compensate functions are unknown. Nothing was compensated; undo them by hand or restore the step.`,
        };
      } else {
        try {
          await runSaga(this);
        } catch (sagaError) {
          error = toErrorInfo(sagaError);
          if ((sagaError as SteplogError).code === "LEASE_LOST") return await this.#leaseLost(sagaError as SteplogError);
        }
      }
    }
    // A saga counts no attempt; a failed one leaves the run as it was, to be compensated again.
    return this.#recordEnding({
      ending: error ? "failed" : "compensated",
      runStatus: error ? this.#previousStatus() : "compensated",
      error,
      value: null,
      budgetUsed: this.stored.run.budgetUsed,
      parked: undefined,
    });
  }

  #previousStatus(): RunStatus {
    const before = this.plan.statusBefore;
    return before === undefined || before === "running" || before === "interrupted" ? "failed" : before;
  }

  async #settlePending(): Promise<SteplogError | Error | undefined> {
    if (this.#tracked > 0) {
      if (!this.#drained) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        this.#drained = { promise, resolve };
      }
      await this.#drained.promise;
    }
    return this.#failedWrite;
  }

  async #leaseLost(error: SteplogError | Error): Promise<RunResult> {
    const info = toErrorInfo(error instanceof LeaseLostError && error.attempt !== undefined ? error : new LeaseLostError(this.runId, this.number, error.message));
    // The run belongs to whoever took it (another attempt, or a cancel): report its status as stored.
    let runStatus: RunStatus = "running";
    try {
      const store = this.settings.store;
      runStatus = (store.loadRunRow ? await store.loadRunRow(this.runId) : (await store.loadRun(this.runId))?.run)?.status ?? "running";
    } catch {
      // The store may be what failed; "running" is the honest guess.
    }
    this.emit({ type: "attempt-ended", runId: this.runId, attempt: this.number, status: "failed", runStatus, error: info });
    return { id: this.runId, status: "failed", runStatus, error: info, attempt: this.number };
  }

  /** A stop names the last step entered and the fromStep to use; a repeat of the last attempt's stop says so. */
  stopError(reason: string): StoppedError {
    const step = this.lastEntered;
    const q = JSON.stringify;
    const previous = this.stored.attempts.filter((a) => a.number < this.number).at(-1);
    if (step !== undefined && this.ran.length === 0 && previous?.ending === "stopped" && this.#previousStopStep === step) {
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
