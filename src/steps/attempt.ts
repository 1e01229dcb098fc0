/**
 * One attempt of one run, under a lease, from its claim to its ending: runs the workflow's code
 * with a context (context.ts), keeps the lease alive, enforces the deadline and the abort
 * signal, waits for what is in flight, and records how the attempt ended. The step protocol
 * works on the attempt's state (state.ts); this is its lifecycle.
 */

import type { Workflow } from "../workflow/define-workflow.js";
import { FromStepNotReachedError, isSteplogError, isStoreRefusal, LeaseLostError, SteplogError, toErrorInfo, type ErrorInfo } from "../base/errors.js";
import type { EngineSettings } from "./attempt-settings.js";
import { fault } from "../base/faults.js";
import { LeaseKeeper } from "../ownership/lease-keeper.js";
import { markDone, type LiveToken } from "../ownership/live-attempts.js";
import { runSaga, unreachable } from "./saga.js";
import { contextFor } from "./context-impl.js";
import { findHandledFailures } from "./handled-failures.js";
import { AttemptState, failedStepOf, type EndReason, type WaitingFor } from "./state.js";
import { shownWaitingFor } from "../workflow/step-resolution.js";
import type { AttemptPlan } from "./attempt-plan.js";
import type { AttemptEnding, Lease, RunStatus, StoredRun } from "../store/types.js";
import { decodeValue } from "../payloads/values.js";
import { ENDED_STATUSES } from "../store/types.js";
import type { AttemptTrace } from "./step-spans.js";

export type { AttemptPlan };

export interface RunResult<T = unknown> {
  id: string;
  /**
   * How this attempt ended. From a start that attached to a run (`ifExists: "attach"`): how the
   * run's last attempt ended, as engine.get shows it: `interrupted` when it has no ending and its
   * owner is gone, `running` while it runs elsewhere.
   */
  status: AttemptEnding | "interrupted" | "running";
  /** The run's status afterwards (differs when this was the last attempt allowed). */
  runStatus: RunStatus;
  value?: T;
  error?: ErrorInfo;
  attempt: number;
  /** When the attempt ended `waiting`: what the run waits for, and until when. */
  waitingFor?: WaitingFor;
  /** Set by a start that found the run rather than made it (`ifExists: "attach"`, a `dedupeKey` in use): it ran nothing. */
  attached?: true;
}

export class Attempt {
  readonly state: AttemptState;
  readonly #keeper: LeaseKeeper;

  constructor(
    settings: EngineSettings,
    workflow: Workflow,
    stored: StoredRun,
    lease: Lease,
    plan: AttemptPlan,
    /** This attempt's registration as live in this process, made when its lease was taken. */
    private readonly live: LiveToken,
    /** Its span, begun when its lease was taken (tracing.ts); undefined when the engine does not trace. */
    trace?: AttemptTrace,
  ) {
    this.state = new AttemptState(settings, workflow, stored, lease, plan);
    this.state.trace = trace;
    this.#keeper = new LeaseKeeper(settings, lease, (error) => this.state.ending.endWith("lease-lost", error));
  }

  get runId(): string {
    return this.state.runId;
  }

  get plan(): AttemptPlan {
    return this.state.plan;
  }

  get workflow(): Workflow {
    return this.state.workflow;
  }

  /** The last step the code entered, for a cancel's message. */
  get lastEntered(): string | undefined {
    return this.state.order.lastEntered;
  }

  /** End the attempt early (a cancel, a signal, close()): no step starts after this. */
  endWith(ending: EndReason["ending"], error: SteplogError): void {
    this.state.ending.endWith(ending, error);
  }

  /** Run the attempt to its ending; its span, when traced, ends with it. */
  run(args: unknown): Promise<RunResult> {
    const trace = this.state.trace;
    if (!trace) return this.#run(args);
    return this.#run(args).then(
      (result) => {
        const { ran, resolved } = this.state;
        trace.end({ ...result, ran, reused: this.state.order.reused.length, resolved });
        return result;
      },
      (error: unknown) => {
        trace.fail(error);
        throw error;
      },
    );
  }

  async #run(args: unknown): Promise<RunResult> {
    const state = this.state;
    const previous = state.stored.attempts.filter((a) => a.number < state.number).at(-1);
    let carriedStart: string | undefined;
    if (previous?.ending === "stopped" && previous.error) {
      try {
        const stop = await state.payloads.decodeError(previous.error);
        state.previousStopStep = stop.step;
        // Stopped before a succeeded irreversible step: that step is where the next continue starts.
        if (stop.code === "REDO_IRREVERSIBLE" && stop.step !== undefined) carriedStart = stop.step;
      } catch {
        // Only a hint for a stop's message; an unreadable one (a missing key) must not end the attempt here.
      }
    }
    this.#keeper.start();
    const cleanups = state.ending.watchDeadlineAndSignal(state.plan, state.clock, () => state.order.lastEntered);
    if (state.listening) {
      state.emit({ type: "attempt-started", runId: state.runId, workflow: state.workflow.name, attempt: state.number, fromStep: state.plan.fromStep });
    }
    try {
      // Awaited only when there are failures to judge (a promise and a turn of the microtasks a run otherwise).
      const handled = findHandledFailures(state.stored, state.payloads);
      state.order.startFrom(handled instanceof Promise ? await handled : handled, carriedStart);
      // Whichever comes first: the code settles, or the attempt ends early with nothing in flight.
      const settled = await new Promise<Settled | Ended>((resolve) => {
        this.#runCode(args, resolve);
        state.ending.whenEndedEarly(() => resolve(ENDED));
      });
      if (settled.kind !== "ended" && (state.inFlight.size > 0 || state.watched.unsettled > 0)) await this.#drain();
      if (state.plan.mode === "compensate") return await this.#finishSaga();
      return await this.#finish(settled);
    } finally {
      for (const cleanup of cleanups) cleanup();
      this.#keeper.stop();
      markDone(this.live);
    }
  }

  /**
   * The workflow's code, run until it settles; `settle` is told how. Not an async function: the
   * attempt waits for it through the whole run, and a suspended async frame (its registers, its
   * promise, its await's closures) would be held by every run in flight.
   */
  #runCode(args: unknown, settle: (settled: Settled) => void): void {
    let running: unknown;
    try {
      const ctx = contextFor(this.state);
      const trace = this.state.trace;
      // Traced: the workflow's code runs with the attempt's span active, so the app's own spans hang from it.
      running = trace ? trace.activate(() => this.state.workflow.run(ctx, args as never)) : this.state.workflow.run(ctx, args as never);
    } catch (error) {
      return settle(threw(error));
    }
    Promise.resolve(running).then(
      (value) => settle(returned(value)),
      (error: unknown) => settle(threw(error)),
    );
  }

  /** Wait for steps the code did not await before it returned: one may yet fail with nothing to observe it. */
  async #drain(): Promise<void> {
    while (this.state.inFlight.size > 0 || this.state.watched.unsettled > 0) {
      await new Promise<void>((resolve) => setTimeout(resolve, 5));
    }
  }

  async #finish(settled: Settled | Ended): Promise<RunResult> {
    let ending: AttemptEnding;
    let error: ErrorInfo | undefined;
    let valueText: { plain: string; stored: string } | null = null;
    if (this.state.ending.reason?.ending === "lease-lost") return await this.#leaseLost(this.state.ending.reason.error);
    const unawaited = this.state.watched.unobservedFailure(this.state.runId);
    if (this.state.ending.reason?.ending === "waiting") {
      ending = "waiting";
    } else if (this.state.ending.reason) {
      ending = this.state.ending.reason.ending as AttemptEnding;
      error = toErrorInfo(this.state.ending.reason.error);
    } else if (settled.kind === "threw") {
      ending = "failed";
      const thrown = (settled as { error: unknown }).error;
      error = toErrorInfo(thrown, failedStepOf(thrown) ?? this.state.order.lastEntered);
    } else if (this.state.plan.fromStep !== undefined && !this.state.order.started) {
      ending = "stopped";
      error = toErrorInfo(new FromStepNotReachedError(this.state.runId, this.state.plan.fromStep, this.state.order.notReached()));
    } else if (unawaited) {
      // A step failed and the code went on as if it had not (a forgotten `await`): not a completion.
      ending = "failed";
      error = toErrorInfo(unawaited);
    } else {
      ending = "completed";
      try {
        valueText = await this.state.payloads.encode((settled as { value: unknown }).value, `The result of run ${JSON.stringify(this.state.runId)}`, {
          runId: this.state.runId,
        });
      } catch (encodeError) {
        ending = "failed";
        error = toErrorInfo(encodeError);
      }
    }

    // Outcomes committed with a later write must be durable before the ending is.
    const writeFailure = await this.state.writes.settlePending();
    if (writeFailure) {
      if ((writeFailure as SteplogError).code === "LEASE_LOST") return await this.#leaseLost(writeFailure);
      ending = "failed";
      // The failure the workflow already met (say, the next step's intent in the same batch) says it best.
      if (error?.code !== "STORE_WRITE_FAILED") error = toErrorInfo(writeFailure);
      valueText = null;
    }

    const run = this.state.stored.run;
    // A store that refused a statement of steplog's own (a bug in steplog, not in the run) counts no attempt.
    const refusedByStore = [settled.kind === "threw" ? settled.error : undefined, writeFailure, this.state.ending.reason?.error].some(isStoreRefusal);
    const counts = ending !== "completed" && ending !== "waiting" && ending !== "escalated" && !refusedByStore;
    const budgetUsed = counts ? run.budgetUsed : Math.max(0, run.budgetUsed - 1);
    const runStatus: RunStatus = counts && budgetUsed >= this.state.workflow.maxAttempts ? "dead-lettered" : ending;
    return this.#recordEnding({
      ending,
      runStatus,
      error,
      value: valueText,
      budgetUsed,
      parked: ending === "waiting" ? this.state.ending.parkedOn : undefined,
    });
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
    const now = this.state.clock.now();
    const errorText = error ? await this.state.payloads.encodeError(error) : null;
    fault("before-end", this.state.order.lastEntered ?? "*");
    try {
      await this.state.settings.store.endAttempt(this.state.writes.fence, {
        attempt: this.state.number,
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
          // A run parked past its deadline is due then, so a worker ends it timed-out.
          wakeAt: parked ? earliest(parked.until, this.state.plan.deadline) : null,
        },
        reused: this.state.order.reused,
        // An event (or approval) that arrived while this attempt was parking wakes the run at once.
        // Not for an approval: one cannot arrive before the run is parked on it, and the answers
        // of earlier asks (a rejection before a continue asked again) are kept, never consumed.
        ...(parked?.kind === "event" ? { wakeOnEvent: parked.event! } : {}),
      });
    } catch (endError) {
      if (endError instanceof SteplogError && endError.code === "LEASE_LOST") return await this.#leaseLost(endError);
      // A store that failed a step's write first (a full disk) fails the ending too: the first failure, naming its step, says what happened.
      const info = error?.code === "STORE_WRITE_FAILED" && isSteplogError(endError, "STORE_WRITE_FAILED") ? error : toErrorInfo(endError);
      this.state.emit({ type: "attempt-ended", runId: this.state.runId, attempt: this.state.number, status: "failed", runStatus: "running", error: info });
      return { id: this.state.runId, status: "failed", runStatus: "running", error: info, attempt: this.state.number };
    }
    await this.#wakeAcrossChildren(runStatus, parked);
    const result: RunResult = { id: this.state.runId, status: ending, runStatus, attempt: this.state.number };
    if (parked) result.waitingFor = shownWaitingFor(parked);
    if (value !== null) result.value = decodeValue(value.plain);
    if (error) result.error = error;
    if (this.state.listening) {
      this.state.emit({ type: "attempt-ended", runId: this.state.runId, attempt: this.state.number, status: ending, runStatus, ...(error ? { error } : {}) });
    }
    return result;
  }

  /**
   * After the ending committed: a child run that ended wakes its parent if it waits for it; a run
   * that parked on a child that ended meanwhile wakes itself (engine/children.ts says why both).
   * A failure here loses nothing: a worker finds such parents (ChildRuns.wakeParentsOfEnded).
   */
  async #wakeAcrossChildren(runStatus: RunStatus, parked: WaitingFor | undefined): Promise<void> {
    const children = this.state.settings.children;
    if (!children) return;
    const parent = this.state.stored.run.parent;
    try {
      if (parent && ENDED_STATUSES.includes(runStatus)) {
        fault("before-wake", this.state.runId);
        await children.ended(parent, this.state.runId);
      }
      if (parked?.kind === "child" && parked.child !== undefined) await children.parked(this.state.runId, parked.child);
    } catch {
      // Only a wake-up was lost; see above.
    }
  }

  /** The saga's ending: every reachable compensatable step compensated, or why not. */
  async #finishSaga(): Promise<RunResult> {
    if (this.state.ending.reason?.ending === "lease-lost") return await this.#leaseLost(this.state.ending.reason.error);
    let error: ErrorInfo | undefined;
    // However the replayed code ends (returns, throws, stops: often the very failure being
    // compensated), the replay is over; only a cancel or a deadline stops the saga itself.
    if (this.state.ending.reason && this.state.ending.reason.ending !== "stopped") error = toErrorInfo(this.state.ending.reason.error);
    else {
      const missing = unreachable(this.state);
      if (missing.length > 0) {
        error = {
          name: "Error",
          message: `Run ${JSON.stringify(this.state.runId)}: the code no longer reaches compensatable step(s) ${missing.map((k) => JSON.stringify(k)).join(", ")}, so their compensate functions are unknown. Nothing was compensated; undo them by hand or restore the step.`,
        };
      } else {
        try {
          await runSaga(this.state);
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
      budgetUsed: this.state.stored.run.budgetUsed,
      parked: undefined,
    });
  }

  #previousStatus(): RunStatus {
    const before = this.state.plan.statusBefore;
    return before === undefined || before === "running" || before === "interrupted" ? "failed" : before;
  }

  async #leaseLost(error: SteplogError | Error): Promise<RunResult> {
    const info = toErrorInfo(
      error instanceof LeaseLostError && error.attempt !== undefined ? error : new LeaseLostError(this.state.runId, this.state.number, error.message),
    );
    // The run belongs to whoever took it (another attempt, or a cancel): report its status as stored.
    let runStatus: RunStatus = "running";
    try {
      const store = this.state.settings.store;
      runStatus = (await store.loadRunRow(this.state.runId))?.status ?? "running";
    } catch {
      // The store may be what failed; "running" is the honest guess.
    }
    this.state.emit({ type: "attempt-ended", runId: this.state.runId, attempt: this.state.number, status: "failed", runStatus, error: info });
    return { id: this.state.runId, status: "failed", runStatus, error: info, attempt: this.state.number };
  }
}

/** How the workflow's code settled. */
type Settled = { kind: "returned"; value: unknown } | { kind: "threw"; error: unknown };

/** The attempt ended early (a cancel, a deadline, a stop, a lost lease) with nothing in flight. */
type Ended = { kind: "ended" };
const ENDED: Ended = { kind: "ended" };

const returned = (value: unknown): Settled => ({ kind: "returned", value });
const threw = (error: unknown): Settled => ({ kind: "threw", error });

function earliest(a: number | undefined, b: number | undefined): number | null {
  if (a === undefined) return b ?? null;
  return b === undefined ? a : Math.min(a, b);
}
