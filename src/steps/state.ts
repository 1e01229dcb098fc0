/**
 * One attempt's state, as the step protocol sees it: the records it started from and the latest
 * row of each key, where the code has got to (keys entered, the start point, the steps launched
 * beside it), what is in flight, and how the attempt ends early. Everything a step does reads
 * and changes this; the attempt's lifecycle (attempt.ts) creates it and records its ending.
 */

import { AttemptEndedError, LeaseLostError, OrderChangedError, SteplogError, StoppedError, StoreWriteFailedError } from "../base/errors.js";
import type { Workflow } from "../workflow/define-workflow.js";
import type { AttemptEnding, Lease, RunStatus, StepOutcome, StepRow, StoredRun } from "../store/types.js";
import type { StepFunction, StepInfo, StepOptions } from "../workflow/context.js";
import type { PlanState } from "./plan.js";
import type { EngineSettings, ProgressEvent } from "./settings.js";
import type { WaitingFor } from "../workflow/step-resolution.js";
import { checkName } from "../workflow/names.js";
import type { AttemptTrace, StepSpan } from "./tracing.js";
import { WatchedSteps } from "./watched-steps.js";

/**
 * The keys of the steps in flight: a key per entry, one entry per add (a resolution and the run it
 * leads to each hold the key until they end). The first in a field of its own, the rest in an
 * array made when a second is added: most runs have one step in flight at a time, and a Set or
 * Map rebuilds its table each time it empties (an allocation a step).
 */
export class InFlight {
  #first: string | undefined = undefined;
  #rest: string[] | undefined = undefined;

  get size(): number {
    return this.#first === undefined ? 0 : 1 + (this.#rest?.length ?? 0);
  }

  add(key: string): void {
    if (this.#first === undefined) this.#first = key;
    else (this.#rest ??= []).push(key);
  }

  delete(key: string): void {
    const rest = this.#rest;
    if (this.#first === key) {
      this.#first = rest !== undefined && rest.length > 0 ? rest.pop() : undefined;
      return;
    }
    if (rest === undefined) return;
    const at = rest.lastIndexOf(key);
    if (at === -1) return;
    rest[at] = rest[rest.length - 1]!;
    rest.pop();
  }

  /** The keys in flight other than `key`, each once. */
  others(key: string): string[] {
    if (this.#first === undefined) return [];
    return [...new Set([this.#first, ...(this.#rest ?? [])])].filter((k) => k !== key);
  }
}

/** The options of a step called without any (shared: never written to). */
export const NO_OPTIONS: StepOptions = Object.freeze({});

/**
 * An empty set of step keys, shared: most attempts have no handled failures and no keys to redo
 * or reuse, and each empty Set an attempt holds while its run is in flight is a hash table the
 * collector copies (a few hundred bytes a run, with a thousand runs at once).
 */
export const NO_KEYS: ReadonlySet<string> = new Set();

/** One ctx.step call as the protocol carries it. */
export interface StepCall {
  name: string;
  options: StepOptions;
  fn: StepFunction<unknown>;
  /** Where it was entered in this attempt's call order (steps and waits, reused ones included). */
  position?: number;
  /** Its OpenTelemetry span, when the attempt is traced (tracing.ts). */
  span?: StepSpan;
}

/** The idempotency key a call is made with, and what it is told of a cut-off call it re-drives. */
export interface Identity {
  idempotencyKey: string;
  previous?: StepInfo["previous"];
}

export type { WaitingFor };

/** A compensatable step the saga's replay reached: its call (with its compensate) and its recorded value. */
export interface SagaEntry {
  key: string;
  call: StepCall;
  value: unknown;
}

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

/** Signals ctx.stop(reason) through the workflow's code. */
export class StopRequest extends Error {
  override name = "StopRequest";
  constructor(readonly reason: string) {
    super(`stopped: ${reason}`);
  }
}

export interface EndReason {
  ending: AttemptEnding | "lease-lost";
  error: SteplogError;
}

export class AttemptState implements PlanState {
  readonly runId: string;
  readonly number: number;
  readonly fence: Lease;
  /**
   * The latest row of each step key: the records the attempt started from, and the rows it has
   * written since, except a step that succeeded in this attempt (no key is entered twice in one
   * attempt, so its row is not read again; execute drops it) and a step still running that had
   * no earlier record (its row comes in once a failed or stopped outcome of it is written; a row
   * whose outcome was never written, its attempt cut short, stays out).
   */
  #latest: Map<string, StepRow> | undefined = undefined;
  /**
   * Steps whose function ran to an outcome in this attempt, and cut-off records settled by their
   * policy, counted (not kept: with many runs at once, every key a running attempt kept would be
   * a survivor the collector copies). The keys reused are kept: the attempt's ending records them.
   */
  ran = 0;
  resolved = 0;
  readonly reused: string[] = [];
  readonly inFlight = new InFlight();
  /** The step promises handed to the code: whether a failure among them went unobserved (watched-steps.ts). */
  readonly watched = new WatchedSteps();
  /**
   * The step the last attempt stopped before with REDO_IRREVERSIBLE: a start point of this one
   * too, so what it redid before that step is not followed by stale records after it.
   */
  carriedStart: string | undefined;
  /** The step the previous attempt stopped at, if it stopped (read before the code runs: decoding is async). */
  previousStopStep: string | undefined;
  /** Keys whose current row is a failure the workflow handled: thrown again, not redone (handled-failures.ts). */
  handled: ReadonlySet<string> = NO_KEYS;
  /**
   * The signal's controller, made when first asked for (`ctx.signal`, a step's `info.signal`, a
   * retry's back-off): with many runs in flight, each unused one is an event target and two hash
   * tables the collector copies.
   */
  #controller: AbortController | undefined = undefined;
  /** What the run parked on, when the attempt ends `waiting`. */
  parkedOn: WaitingFor | undefined;
  /** Compensatable steps found by a saga's replay, in the order the code reached them. */
  readonly saga: SagaEntry[] = [];
  /** Steps entered so far by name: a box a name, counted up in place (a step looks its name up once, and sets nothing). */
  readonly #keyCounts = new Map<string, { entered: number }>();
  /** Made on the first compensation (most runs have none; see NO_KEYS). */
  #compensations: Map<string, number> | undefined = undefined;
  nextSeq: number;
  /** Whether the start point has been reached: before it records are handed back, from it steps run. */
  started = false;
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
  /** Steps and waits entered so far: the next one's position in this attempt's call order. */
  entered = 0;
  endReason: EndReason | undefined;
  /** The attempt's OpenTelemetry span (tracing.ts); undefined when the engine does not trace. */
  trace: AttemptTrace | undefined;
  /** Told once the attempt has ended early and nothing is in flight any more (set by the attempt: whenEndedEarly). */
  #onEndedEarly: (() => void) | undefined = undefined;

  constructor(
    readonly settings: EngineSettings,
    readonly workflow: Workflow,
    readonly stored: StoredRun,
    lease: Lease,
    readonly plan: AttemptPlan,
  ) {
    this.runId = stored.run.id;
    this.number = lease.attempt;
    this.fence = lease;
    for (const row of stored.steps) {
      this.keepLatest(row);
      if (row.status === "compensated") this.addCompensation(row.key);
    }
    this.nextSeq = (stored.steps.at(-1)?.seq ?? 0) + 1;
  }

  /**
   * The key's latest row, if it has one. The table is made for the first row kept (a run's first
   * attempt often has none: no empty table held while it runs), and a key is hashed only when
   * there are rows to look in.
   */
  latestRow(key: string): StepRow | undefined {
    const latest = this.#latest;
    return latest === undefined || latest.size === 0 ? undefined : latest.get(key);
  }

  /** Make `row` its key's latest row. */
  keepLatest(row: StepRow): void {
    (this.#latest ??= new Map()).set(row.key, row);
  }

  /** Make `row` its key's latest row if the key has one (a new row of a key with none is kept only once it fails or stops). */
  replaceLatest(row: StepRow): void {
    if (this.latestRow(row.key) !== undefined) this.#latest!.set(row.key, row);
  }

  /** Forget a key's latest row (a step that succeeded in this attempt: nothing reads it again). */
  dropLatest(key: string): void {
    this.#latest?.delete(key);
  }

  get version(): string | null {
    return this.workflow.version ?? null;
  }

  // What the step planner reads (PlanState in plan.ts), as the attempt holds it: no view is built per step.
  get attempt(): number {
    return this.number;
  }
  get fromStep(): string | undefined {
    return this.plan.fromStep;
  }
  get redo(): ReadonlySet<string> {
    return this.plan.redo;
  }
  get reuse(): ReadonlySet<string> {
    return this.plan.reuse;
  }
  get values(): Record<string, unknown> | undefined {
    return this.plan.values;
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

  /**
   * The next key for a step name in call order: name, name#2, name#3, … A name is checked the
   * first time it is entered (a loop calls the same name many times); an invalid one throws
   * before it counts.
   */
  nextKey(name: string): string {
    const count = this.#keyCounts.get(name);
    if (count === undefined) {
      checkName("step name", name);
      this.#keyCounts.set(name, { entered: 1 });
      return name;
    }
    return `${name}#${++count.entered}`;
  }

  /** Whether a step of this name was entered in this attempt. */
  hasEntered(name: string): boolean {
    return this.#keyCounts.has(name);
  }

  /** Recorded step keys this attempt has not entered (so far). */
  notReached(): string[] {
    const reached = (key: string) => {
      const hash = key.lastIndexOf("#");
      const name = hash === -1 ? key : key.slice(0, hash);
      const n = hash === -1 ? 1 : Number(key.slice(hash + 1));
      return (this.#keyCounts.get(name)?.entered ?? 0) >= n;
    };
    return [...new Set(this.stored.steps.map((s) => s.key))].filter((key) => !reached(key));
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

  /** The attempt's abort signal (`ctx.signal`): aborted when the attempt ends early, with the reason. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.endReason) this.#controller.abort(this.endReason.error);
    }
    return this.#controller.signal;
  }

  /** End the attempt early: no step starts after this, and the signal is aborted. */
  endWith(ending: EndReason["ending"], error: SteplogError): void {
    if (this.endReason) return;
    this.endReason = { ending, error };
    this.#controller?.abort(error);
    this.checkEarlyEnd();
  }

  /** End the attempt with `error` and throw it: the step it is in goes no further. */
  stopWith(error: SteplogError, ending: "stopped" | "escalated" = "stopped"): never {
    this.endWith(ending, error);
    throw error;
  }

  checkEarlyEnd(): void {
    if (this.endReason && this.inFlight.size === 0) this.#onEndedEarly?.();
  }

  /**
   * Call `then` once the attempt has ended early and nothing is in flight (now, if it has). A
   * callback rather than a promise raced against the code's: a run in flight holds one closure,
   * not a promise and the race's reactions.
   */
  whenEndedEarly(then: () => void): void {
    this.#onEndedEarly = then;
    this.checkEarlyEnd();
  }

  assertRunning(): void {
    if (this.endReason) throw new AttemptEndedError(this.runId, this.number, this.endReason.error.message);
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

  /**
   * Write an outcome nobody awaits now (group commit); the ending waits for it. The store calls
   * one of the two handlers back when it has committed or failed: no promise a step.
   */
  writeOutcomeLater(outcome: StepOutcome): void {
    this.#tracked++;
    this.settings.store.writeOutcomeLater(this.fence, outcome, this.#onTrackedSettled, this.#onTrackedFailed);
  }

  /**
   * Tracked writes not yet settled, and who waits for them all (handlers made once, not per
   * step). The store may call a handler from inside any later call on it (its batch commits
   * then), so they only count and note: they never throw, and never call the store.
   */
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

  /**
   * The attempt's end reason, ending it first if a group-committed outcome failed to be written:
   * the next continue re-drives that step and would then run everything after it again, so no
   * later function may be called in this attempt. Asked just before a function is called (a
   * write failing in the same batch as that step's intent is thrown by the intent instead).
   */
  endIfWriteFailed(): EndReason | undefined {
    const failed = this.#failedWrite;
    if (failed !== undefined && !this.endReason) {
      const named = this.writeFailed(failed);
      if (!this.endReason) {
        this.endWith(
          "failed",
          named instanceof SteplogError
            ? named
            : new StoreWriteFailedError(this.settings.store.location, "a step's outcome", { runId: this.runId, cause: named }),
        );
      }
    }
    return this.endReason;
  }

  /** The first group-committed write that failed (reported to #onTrackedFailed, so never an unhandled rejection). */
  #failedWrite: Error | undefined;

  /** Wait for every tracked write; the first that failed, if one did. */
  async settlePending(): Promise<SteplogError | Error | undefined> {
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
    const redoFrom = this.hasEntered(name) ? name : key;
    if (this.workflow.onOrderChange === "stop") this.stopWith(new OrderChangedError(this.runId, key, furthest.key, redoFrom));
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

  /** A stop names the last step entered and the fromStep to use; a repeat of the last attempt's stop says so. */
  stopError(reason: string): StoppedError {
    const step = this.lastEntered;
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
