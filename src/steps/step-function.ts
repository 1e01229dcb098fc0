/**
 * Calling a step's function, once its intent is durable: each call told to listeners and counted
 * on the row, given its StepInfo, watched when it has a timeout, test hooks or a span; after a
 * failed call its error kept on the row, then either a retry (after its backoff) or the step
 * recorded failed or stopped.
 */

import { isOutcomeUnknown, StepOutcomeUnknownError, type OutcomeUnknown, StepTimedOutError, toErrorInfo, type SteplogError } from "../base/errors.js";
import type { StepFunction, StepInfo, Usage } from "../workflow/context.js";
import { backoffDelay, type RetryPolicy } from "../workflow/retry-policy.js";
import type { StepRow } from "../store/types.js";
import { noteCallError, settle, thrownNow } from "./step-log.js";
import { markFailedStep, StopRequest, type AttemptState } from "./state.js";
import type { EndReason } from "./attempt-ending.js";
import type { StepCall } from "./step-call.js";
import { defaultPolicy } from "./unknown-outcome.js";

/** Whether the call is watched: a timeout, test hooks or a span (the common call is none of these). */
function watched(state: AttemptState, call: StepCall): boolean {
  return call.options.timeoutMs !== undefined || state.hooks !== undefined || call.span !== undefined;
}

/**
 * Call the function the first time: its value, or a rejection with what it threw (callAgain then
 * decides). perf: the common call is the function's own promise, awaited by the caller; no
 * promise or closure of its own.
 */
export function callOnce(state: AttemptState, call: StepCall, info: CallInfo): unknown {
  return watched(state, call) ? callWatched(state, call, info) : call.fn(info);
}

/**
 * After a call threw `error`: the retries its policy allows, each after its backoff; the value of
 * the first that returns, or (afterFailedCall) the step recorded failed or stopped and its error
 * thrown.
 */
export async function callAgain(state: AttemptState, call: StepCall, error: unknown): Promise<unknown> {
  for (let retry = 0; ;) {
    // Returns when the step is to be called again (after its backoff); else throws its error.
    await afterFailedCall(state, call, error, retry);
    retry++;
    const ended = state.writes.endIfFailed();
    if (ended) throw await endedUnderway(state, call, ended);
    const info = startCall(state, call, retry);
    try {
      return await callOnce(state, call, info);
    } catch (thrown) {
      error = thrown;
    } finally {
      info.release();
    }
  }
}

/** A call about to be made: told to listeners, counted on the row, and what its function is given. */
export function startCall(state: AttemptState, call: StepCall, retry: number): CallInfo {
  if (state.listening) state.emit({ type: "step-started", runId: state.runId, step: call.key, retry });
  const row = call.row!;
  row.calls++;
  const identity = call.identity!;
  const given = new CallInfo(state, call, retry);
  if (identity.previous) given.previous = identity.previous;
  return given;
}

/**
 * After a call failed: its error kept on the row, then either a retry is due (returns after the
 * backoff) or the step ends failed or stopped (throws).
 */
async function afterFailedCall(state: AttemptState, call: StepCall, error: unknown, retry: number): Promise<void> {
  const { key } = call;
  const row = call.row!;
  const policy = call.policy!;
  if (error instanceof StopRequest) {
    await settle(state, row, { status: "stopped", error: toErrorInfo(state.ending.reason?.error ?? error, key) });
    throw error;
  }
  if (isOutcomeUnknown(error)) throw leftUnknown(state, call, error);
  // Every failed call's error is kept on the row, the ones a retry follows too.
  const callError = toErrorInfo(error, key);
  call.span?.callFailed(row.calls, callError);
  await noteCallError(state, row, callError);
  if (state.ending.reason) throw await endedUnderway(state, call, state.ending.reason);
  const verdict = retry + 1 < policy.maxAttempts ? await askRetryIf(policy, error, retry) : { again: false as const };
  if (verdict.again) {
    await sleep(backoffDelay(policy, retry + 1), state.ending.signal);
    const ended = state.writes.endIfFailed();
    if (!ended) return;
    throw await endedUnderway(state, call, ended);
  }
  // The predicate may have taken a while (it is awaited): an attempt that ended meanwhile says so.
  const endedWhileAsking = state.writes.endIfFailed();
  if (endedWhileAsking) throw await endedUnderway(state, call, endedWhileAsking);
  const info = toErrorInfo(error, key);
  if ("threw" in verdict && !(error instanceof Error && Object.hasOwn(error, "cause"))) {
    // A predicate that throws decides nothing: the step failed with its own error, the
    // predicate's kept as its cause (unless it has one: what is recorded is what is thrown).
    info.cause = toErrorInfo(verdict.threw);
    if (error instanceof Error) Object.defineProperty(error, "cause", { value: verdict.threw, configurable: true, writable: true });
  }
  await settle(state, row, { status: "failed", error: info, thrown: thrownNow(state) });
  throw markFailedStep(error, key);
}

/**
 * The function cannot tell whether its effect happened: not retried, not recorded failed (a
 * continue would redo it). The row stays intended, the attempt ends, and the next continue
 * settles the step by its policy, as after a crash inside the effect.
 */
function leftUnknown(state: AttemptState, call: StepCall, reason: OutcomeUnknown): SteplogError {
  const { key, options } = call;
  const effect = call.row!.effect;
  const policy = options.onUnknown ?? defaultPolicy(effect, options.query !== undefined, options.compensate !== undefined);
  const error = new StepOutcomeUnknownError(state.runId, key, effect, reason, policy);
  state.ending.endWith("failed", error);
  markFailedStep(error, key);
  return error;
}

/**
 * The attempt ended while the step was under way (before its call, or between calls): the step
 * is recorded failed with the ending's error, unless the lease is lost (then nothing may be
 * written), and that error is what it throws.
 */
export async function endedUnderway(state: AttemptState, call: StepCall, ended: EndReason): Promise<SteplogError> {
  if (ended.ending !== "lease-lost") await settle(state, call.row!, { status: "failed", error: toErrorInfo(ended.error, call.key) });
  return ended.error;
}

/** `retry.retryIf`, awaited (it may be async), and a throw kept rather than taken for an answer. */
async function askRetryIf(policy: RetryPolicy, error: unknown, retry: number): Promise<{ again: boolean } | { again: false; threw: unknown }> {
  try {
    return { again: Boolean(await policy.retryIf(error, retry)) };
  } catch (threw) {
    return { again: false, threw };
  }
}

/** Add a call's reported usage to the row's total (numbers only; retries add up). */
function addUsage(row: StepRow, used: Usage): void {
  if (typeof used !== "object" || used === null) return;
  const total = (row.usage ? JSON.parse(row.usage) : {}) as Record<string, number>;
  for (const [field, amount] of Object.entries(used)) {
    if (typeof amount === "number" && Number.isFinite(amount)) total[field] = (total[field] ?? 0) + amount;
  }
  row.usage = JSON.stringify(total);
}

/** What a step's function is given. perf: a class, not a literal with a getter (V8 builds those the slow way). */
export class CallInfo implements StepInfo {
  // perf: `declare`d, so no field is defined (undefined) before the constructor sets it.
  declare readonly runId: string;
  declare readonly attempt: number;
  declare readonly step: string;
  declare readonly idempotencyKey: string;
  declare readonly retry: number;
  previous?: StepInfo["previous"];
  /**
   * The call's own signal and what links it to the attempt's, made when first asked for (most
   * steps never look at it). perf: no `= undefined` initializer (about 340 instructions a step).
   */
  #link: SignalLink | undefined;
  /** Kept as an own property (not a method or getter) so `const { usage } = info` and `{ ...info }` keep it. */
  declare readonly usage: (used: Usage) => void;
  declare readonly input?: unknown;
  readonly #state: AttemptState;

  constructor(state: AttemptState, call: StepCall, retry: number) {
    this.runId = state.runId;
    this.attempt = state.number;
    this.step = call.key;
    this.idempotencyKey = call.identity!.idempotencyKey;
    this.retry = retry;
    this.#state = state;
    const row = call.row!;
    this.usage = (used: Usage) => addUsage(row, used);
    if (call.input !== undefined) this.input = call.input.value;
  }

  get signal(): AbortSignal {
    return this.#linked().controller.signal;
  }

  /** The call is over: the attempt's signal no longer forwards its abort to the call's. */
  release(): void {
    const link = this.#link;
    if (link) link.parent.removeEventListener("abort", link.onParentAbort);
  }

  /** Abort the call's own signal (its timeout fired). Static: not a member the step's function sees on its `info`. */
  static abort(info: CallInfo, reason: unknown): void {
    info.#linked().controller.abort(reason);
  }

  #linked(): SignalLink {
    return (this.#link ??= linkSignal(this.#state.ending.signal));
  }
}

/** A call's signal: a child of the attempt's, aborted with it (with its reason) until the call is over. */
interface SignalLink {
  controller: AbortController;
  parent: AbortSignal;
  onParentAbort: () => void;
}

function linkSignal(parent: AbortSignal): SignalLink {
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent.reason);
  if (parent.aborted) onParentAbort();
  else parent.addEventListener("abort", onParentAbort, { once: true });
  return { controller, parent, onParentAbort };
}

/** A call with a timeout, test hooks or a span: its value, or a rejection with its error (the timeout's, if it fired). */
async function callWatched(state: AttemptState, call: StepCall, info: CallInfo): Promise<unknown> {
  const { key } = call;
  const timeoutMs = call.options.timeoutMs;
  let timedOut: StepTimedOutError | undefined;
  let timer: NodeJS.Timeout | undefined;
  if (timeoutMs !== undefined) {
    timer = setTimeout(() => {
      timedOut = new StepTimedOutError(state.runId, key, timeoutMs);
      CallInfo.abort(info, timedOut);
    }, timeoutMs);
  }
  try {
    const hooks = state.hooks;
    hooks?.onCall?.(key, "function");
    const fn = (hooks?.override?.(key, call.name) as StepFunction<unknown> | undefined) ?? call.fn;
    // A value that arrives after the timeout fired is still the call's result: the effect happened.
    // Traced: the function runs with its step's span active, so the app's own spans in it hang from the step.
    return await (call.span ? call.span.within(() => fn(info)) : fn(info));
  } catch (error) {
    throw timedOut && !(error instanceof StopRequest) ? timedOut : error;
  } finally {
    if (timer) clearTimeout(timer);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
