/**
 * The ctx.step protocol. As each step is entered the plan (plan.ts) decides from its record
 * what to do; this carries it out: hand a record back (hand-back.ts), settle an unknown outcome
 * by its policy (unknown-outcome.ts), or run the step: write the intent (durable before the
 * function runs), call the function with retries and a timeout, encode its value and write the
 * outcome (step-log.ts).
 */

import type { StepFunction, StepInfo, Usage } from "../workflow/context.js";
import {
  EffectUnrecordedError,
  InvalidOptionError,
  PivotOrderError,
  ResultRejectedError,
  StepTimedOutError,
  toErrorInfo,
  type SteplogError,
  type SteplogErrorDetails,
} from "../base/errors.js";
import { fault, faultArmed } from "../base/faults.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";
import { backoffDelay, retryPolicy, type RetryPolicy } from "../workflow/retry-policy.js";
import { validate } from "../workflow/value-schemas.js";
import type { StepOptions } from "../workflow/context.js";
import { EFFECTS, type Effect, type StepRow } from "../store/types.js";
import { decodedOf, type Encoded } from "../payloads/payloads.js";
import { replayForSaga } from "./saga.js";
import { checkApproval } from "./waits.js";
import { LAUNCHED_BESIDE_START } from "./launched-beside.js";
import { defaultPolicy, owedRedrive, resolveUnknownOutcome } from "./unknown-outcome.js";
import { planStep, type Plan, type StepDecision } from "./plan.js";
import type { StepOutcomeName } from "./tracing.js";
import { handBack, supply } from "./hand-back.js";
import { newRow, noteCallError, settle, thrownNow, writeOutcome, writeOutcomeLater } from "./step-log.js";
import { markFailedStep, NO_OPTIONS, StopRequest, type AttemptState, type EndReason, type Identity, type StepCall } from "./state.js";

export type { StepCall, Identity };

const POLICIES = ["redrive", "query", "compensate", "escalate"];

/**
 * ctx.step. Not an async function itself: it hands back the promise of the path it takes (an
 * async wrapper would add a promise and its ticks to every step), and turns a synchronous throw
 * into a rejection so callers see one behaviour.
 */
export function runStep(state: AttemptState, call: StepCall): Promise<unknown> {
  try {
    return route(state, call);
  } catch (error) {
    return Promise.reject(error);
  }
}

function route(state: AttemptState, call: StepCall): Promise<unknown> {
  state.assertRunning();
  checkOptions(state, call);
  const key = state.nextKey(call.name);
  call.position = state.entered++;
  state.lastEntered = key;
  state.settings.hooks?.onEnter?.(key, call.name);
  if (state.plan.mode === "compensate") return replayForSaga(state, key, call);
  const record = state.latestRow(key);
  const launched = (call.options as Record<symbol, unknown>)[LAUNCHED_BESIDE_START];
  const { decision, started, siblings } = planStep(state, {
    key,
    record,
    effect: call.options.effect,
    launchedBeside: typeof launched === "number" ? launched : undefined,
  });
  state.started = started;
  if (siblings === "close") state.siblingsOf = undefined;
  const span = state.trace?.step(key, call.name, call.options.effect, OUTCOMES[decision.kind]);
  if (span === undefined) return act(state, key, call, record, decision, siblings);
  call.span = span;
  let done: Promise<unknown>;
  try {
    done = act(state, key, call, record, decision, siblings);
  } catch (error) {
    done = Promise.reject(error);
  }
  return span.follow(done, () => state.latestRow(key));
}

/** The outcome a step span starts with, by the plan's decision (a resolution that re-drives the step makes it "ran"). */
const OUTCOMES: Record<StepDecision["kind"], StepOutcomeName> = {
  "hand-back": "reused",
  supply: "supplied",
  stop: "stopped",
  resolve: "resolved",
  run: "ran",
};

/** Carry out the plan's decision for the step entered. */
function act(
  state: AttemptState,
  key: string,
  call: StepCall,
  record: StepRow | undefined,
  decision: StepDecision,
  siblings: Plan["siblings"],
): Promise<unknown> {
  let done: Promise<unknown>;
  switch (decision.kind) {
    case "hand-back":
      return handBack(state, key, record!, call.options);
    case "supply":
      return supply(state, key, call, state.plan.values![key]);
    case "stop":
      state.stopWith(decision.error, decision.ending);
    // falls through: stopWith throws
    case "resolve":
      done = resolveThenRun(state, key, record!, call);
      break;
    case "run":
      done = execute(state, key, call, owedRedrive(state, key, record) ?? { idempotencyKey: state.idempotencyKeyFor(key) });
      break;
  }
  if (siblings === "open") {
    // Steps entered while it is unsettled were launched beside it (see AttemptState.siblingsOf).
    state.siblingsOf = key;
    const close = () => {
      if (state.siblingsOf === key) state.siblingsOf = undefined;
    };
    done.then(close, close);
  }
  return done;
}

/**
 * A cut-off row of another attempt: settled by the step's policy, then (unless the policy found
 * the effect done) the step runs. In flight throughout: a cancel or a deadline waits for a query
 * or a compensation to settle, as for a step's own function, and an irreversible step cannot
 * start beside it.
 */
async function resolveThenRun(state: AttemptState, key: string, record: StepRow, call: StepCall): Promise<unknown> {
  state.inFlight.add(key);
  try {
    // Named before settling: an escalation (or a failing query) throws out of it.
    if (call.span) {
      const { options } = call;
      call.span.policy = options.onUnknown ?? defaultPolicy(options.effect ?? "idempotent", options.query !== undefined, options.compensate !== undefined);
    }
    const resolved = await resolveUnknownOutcome(state, key, record, call);
    if (call.span && resolved.kind === "run") call.span.outcome = "ran";
    return resolved.kind === "found" ? resolved.value : await execute(state, key, call, resolved.identity);
  } finally {
    state.inFlight.delete(key);
    state.checkEarlyEnd();
  }
}

const STEP_KEYS: KnownKeys<StepOptions> = {
  result: true,
  upcast: true,
  effect: true,
  onUnknown: true,
  query: true,
  compensate: true,
  retry: true,
  timeoutMs: true,
  approval: true,
  errors: true,
};

function checkOptions(state: AttemptState, call: StepCall): void {
  if (typeof call.fn !== "function") throw badOption(state, call.name, "the last argument of ctx.step must be the step's function");
  if (call.options !== NO_OPTIONS) checkGivenOptions(state, call);
}

/** Kept apart from checkOptions: its closure would make every step allocate a context, options or not. */
function checkGivenOptions(state: AttemptState, call: StepCall): void {
  const { options, name } = call;
  const bad = (what: string) => badOption(state, name, what);
  checkKnownKeys(() => `Run ${JSON.stringify(state.runId)}, step ${JSON.stringify(name)}`, options, STEP_KEYS, { runId: state.runId, step: name });
  if (options.errors !== undefined && !(Array.isArray(options.errors) && options.errors.every((c) => typeof c === "function"))) {
    throw bad("errors must be an array of error classes, e.g. [CardDeclined]");
  }
  if (options.effect !== undefined && !EFFECTS.includes(options.effect)) throw bad(`effect must be one of ${EFFECTS.join(", ")}`);
  if (options.onUnknown !== undefined && !POLICIES.includes(options.onUnknown)) throw bad(`onUnknown must be one of ${POLICIES.join(", ")}`);
  if (options.onUnknown === "query" && !options.query) throw bad(`onUnknown "query" needs a query function`);
  if (options.onUnknown === "compensate" && !options.compensate) throw bad(`onUnknown "compensate" needs a compensate function`);
  if (options.timeoutMs !== undefined && !(options.timeoutMs > 0)) throw bad("timeoutMs must be a number of milliseconds > 0");
}

function badOption(state: AttemptState, name: string, what: string): InvalidOptionError {
  return new InvalidOptionError(`Run ${JSON.stringify(state.runId)}, step ${JSON.stringify(name)}: ${what}.`, { runId: state.runId, step: name });
}

/**
 * Write the intent, call the function (with retries and timeouts), record the outcome. Not an
 * async function: what comes before the intent is checked here, and the step's path from its
 * intent on (`run`) is an async function with as few locals as can be, since every await saves
 * its whole frame and a step in flight holds it.
 */
export function execute(state: AttemptState, key: string, call: StepCall, identity: Identity): Promise<unknown> {
  try {
    // A step other than the start point runs anew: later records may have used what it returned before.
    if (state.siblingsOf !== key) state.siblingsOf = undefined;
    const effect = call.options.effect ?? "idempotent";
    if (effect === "irreversible") checkPivotOrder(state, key);
    if (call.options.approval) return approvedThenRun(state, key, call, identity, effect);
    return run(state, key, call, identity, retryPolicy(call.options.retry, key));
  } catch (error) {
    return Promise.reject(error);
  }
}

async function approvedThenRun(state: AttemptState, key: string, call: StepCall, identity: Identity, effect: Effect): Promise<unknown> {
  await checkApproval(state, key);
  // Another step may have started while the approval was looked up.
  if (effect === "irreversible") checkPivotOrder(state, key);
  return await run(state, key, call, identity, retryPolicy(call.options.retry, key));
}

/** From the intent to the outcome: the step is in flight throughout. */
async function run(state: AttemptState, key: string, call: StepCall, identity: Identity, policy: RetryPolicy): Promise<unknown> {
  state.inFlight.add(key);
  try {
    const row = newRow(state, key, call, identity.idempotencyKey, state.settings.clock.now());
    if (call.span) call.span.row = row;
    fault("before-intent", key);
    // writeIntent (step-log.ts) spelled out: on every step's path, one promise fewer.
    try {
      await state.settings.store.writeIntent(state.fence, row);
    } catch (error) {
      throw state.writeFailed(error);
    }
    // The new row replaces an earlier record of the key; a key with none gets its row when the
    // step fails or stops (nothing reads an in-flight key's row, and adding then deleting a
    // Map's only entry rebuilds its table: an allocation a step).
    state.replaceLatest(row);
    fault("after-intent", key);

    // The attempt may have ended while the intent was being written: then the function is not called.
    const endedBefore = endReasonOf(state);
    if (endedBefore) throw await endedUnderway(state, key, row, endedBefore);
    let value: unknown;
    if (call.options.timeoutMs !== undefined || state.settings.hooks !== undefined || call.span !== undefined) {
      value = await callWithRetries(state, key, call, identity, row, policy, false, undefined);
    } else {
      // The common call (no timeout, hooks or span), awaited here: no promise or closures of its own.
      const given = startCall(state, key, identity, row, 0);
      let threw = false;
      let error: unknown;
      try {
        value = await call.fn(given);
      } catch (thrown) {
        threw = true;
        error = thrown;
      }
      given.release();
      if (threw) value = await callWithRetries(state, key, call, identity, row, policy, true, error);
    }
    fault("after-fn", key);
    const recorded = recordValue(state, key, call.options, row, value);
    // A promise only on the paths that wait (see recordValue): a step's value is never one.
    return recorded instanceof Promise ? await recorded : recorded;
  } finally {
    state.inFlight.delete(key);
    state.checkEarlyEnd();
  }
}

/**
 * The calls of a step whose first call threw (`failed`, with its `error`), or that is watched (a
 * timeout, test hooks or a span): each failure is kept on the row, then either a retry is due
 * or the step ends failed or stopped (afterFailedCall throws).
 */
async function callWithRetries(
  state: AttemptState,
  key: string,
  call: StepCall,
  identity: Identity,
  row: StepRow,
  policy: RetryPolicy,
  failed: boolean,
  error: unknown,
): Promise<unknown> {
  let retry = 0;
  for (;;) {
    if (failed) {
      // Returns when the step is to be called again (after its backoff); else throws its error.
      await afterFailedCall(state, key, call, row, policy, error, retry);
      retry++;
      const ended = endReasonOf(state);
      if (ended) throw await endedUnderway(state, key, row, ended);
    }
    const result = await callWatched(state, key, call, startCall(state, key, identity, row, retry));
    if (result.ok) return result.value;
    failed = true;
    error = result.error;
  }
}

/** A call about to be made: told to listeners, counted on the row, and what its function is given. */
function startCall(state: AttemptState, key: string, identity: Identity, row: StepRow, retry: number): CallInfo {
  if (state.listening) state.emit({ type: "step-started", runId: state.runId, step: key, retry });
  row.calls++;
  const given = new CallInfo(state, key, identity.idempotencyKey, retry, row);
  if (identity.previous) given.previous = identity.previous;
  return given;
}

/**
 * The function returned `value`: its effect happened and its value is known, so it is recorded
 * even if the attempt ended meanwhile (a deadline, a cancel, another step's stop or escalation) —
 * throwing it away would make a continue do the effect again. Only a lost lease forbids it.
 * Returns what the step hands back; on the common path (a read or idempotent step, no `result`
 * schema, a codec that answers at once) without waiting, its outcome group-committed. Otherwise
 * a promise of it (recordValueAwaited).
 */
function recordValue(state: AttemptState, key: string, options: StepOptions, row: StepRow, value: unknown): unknown {
  const ended = endReasonOf(state);
  if (ended?.ending === "lease-lost") throw ended.error;
  const effect = row.effect;
  let encoded: Encoded | Promise<Encoded>;
  try {
    encoded = state.settings.payloads.encode(value, stepValueName, { runId: state.runId, step: key });
  } catch (error) {
    return rejectWithValueFailure(state, key, row, effect, options, error);
  }
  if ("then" in encoded || options.result || outcomeWaits(row, key)) return recordValueAwaited(state, key, options, row, value, encoded, ended);
  // The step hands back what a continue would: the value decoded from its record (a plain
  // value's copy, made as it was encoded; a long model answer is not copied again).
  const decoded = decodedOf(value, encoded);
  succeeded(state, row, encoded.stored);
  writeOutcomeLater(state, row);
  return recorded(state, key, row, decoded, ended);
}

/**
 * Group commit: a read or idempotent step's outcome may commit with the next write (a crash
 * before it re-drives the step with the same key); any other effect's outcome is durable before
 * ctx.step returns (and so is one a crash test is to be killed after).
 */
function outcomeWaits(row: StepRow, key: string): boolean {
  return !(row.effect === "read" || row.effect === "idempotent") || faultArmed("after-outcome", key);
}

/** recordValue's paths that wait: a codec's seal, a `result` schema, or an outcome durable before ctx.step returns (any effect but read and idempotent). */
async function recordValueAwaited(
  state: AttemptState,
  key: string,
  options: StepOptions,
  row: StepRow,
  value: unknown,
  encoded: Encoded | Promise<Encoded>,
  ended: EndReason | undefined,
): Promise<unknown> {
  let text: Encoded;
  let decoded: unknown;
  try {
    text = "then" in encoded ? await encoded : encoded;
    decoded = decodedOf(value, text);
    if (options.result) {
      const checked = await validate(options.result, decoded);
      if (!checked.ok) throw new ResultRejectedError(state.runId, key, checked.issues, false);
      decoded = checked.value;
    }
  } catch (error) {
    throw await valueFailure(state, key, row, row.effect, options, error);
  }
  succeeded(state, row, text.stored);
  if (outcomeWaits(row, key)) await writeOutcome(state, row);
  else writeOutcomeLater(state, row);
  return recorded(state, key, row, decoded, ended);
}

function succeeded(state: AttemptState, row: StepRow, stored: string): void {
  row.status = "succeeded";
  row.value = stored;
  row.endedAt = state.settings.clock.now();
}

/** The outcome is written (or queued for the next commit): counted, told, and handed back — unless the attempt ended meanwhile. */
function recorded(state: AttemptState, key: string, row: StepRow, decoded: unknown, ended: EndReason | undefined): unknown {
  fault("after-outcome", key);
  state.ran++;
  // No key is entered twice in one attempt, so nothing reads this row again: kept in `latest`
  // until the run ends, every step's row would be a long-lived object the GC promotes and marks.
  state.dropLatest(key);
  if (state.listening) state.emit({ type: "step-succeeded", runId: state.runId, step: key, durationMs: row.endedAt! - row.intendedAt });
  // Recorded; but the attempt is over, so the workflow's code does not go on past this step.
  if (ended && ended.ending !== "waiting") throw ended.error;
  return decoded;
}

/** valueFailure's error, once what it means is recorded, as a rejection (recordValue's callers await what it returns). */
async function rejectWithValueFailure(state: AttemptState, key: string, row: StepRow, effect: Effect, options: StepOptions, error: unknown): Promise<never> {
  throw await valueFailure(state, key, row, effect, options, error);
}

/**
 * After a call failed: its error kept on the row, then either a retry is due (returns after the
 * backoff) or the step ends failed or stopped (throws). Kept out of `run`, whose frame every
 * step's awaits carry.
 */
async function afterFailedCall(
  state: AttemptState,
  key: string,
  call: StepCall,
  row: StepRow,
  policy: RetryPolicy,
  error: unknown,
  retry: number,
): Promise<void> {
  if (error instanceof StopRequest) {
    await settle(state, key, row, "stopped", toErrorInfo(state.endReason?.error ?? error, key));
    throw error;
  }
  // Every failed call's error is kept on the row, the ones a retry follows too.
  const callError = toErrorInfo(error, key);
  call.span?.callFailed(row.calls, callError);
  await noteCallError(state, row, callError);
  if (state.endReason) throw await endedUnderway(state, key, row, state.endReason);
  const verdict = retry + 1 < policy.maxAttempts ? await askRetryIf(policy, error, retry) : { again: false as const };
  if (verdict.again) {
    await sleep(backoffDelay(policy, retry + 1), state.signal);
    const ended = endReasonOf(state);
    if (!ended) return;
    throw await endedUnderway(state, key, row, ended);
  }
  // The predicate may have taken a while (it is awaited): an attempt that ended meanwhile says so.
  const endedWhileAsking = endReasonOf(state);
  if (endedWhileAsking) throw await endedUnderway(state, key, row, endedWhileAsking);
  const info = toErrorInfo(error, key);
  if ("threw" in verdict && !(error instanceof Error && Object.hasOwn(error, "cause"))) {
    // A predicate that throws decides nothing: the step failed with its own error, the
    // predicate's kept as its cause (unless it has one: what is recorded is what is thrown).
    info.cause = toErrorInfo(verdict.threw);
    if (error instanceof Error) Object.defineProperty(error, "cause", { value: verdict.threw, configurable: true, writable: true });
  }
  await settle(state, key, row, "failed", info, thrownNow(state));
  throw markFailedStep(error, key);
}

/**
 * The attempt ended while the step was under way (before its call, or between calls): the step
 * is recorded failed with the ending's error, unless the lease is lost (then nothing may be
 * written), and that error is what it throws.
 */
async function endedUnderway(state: AttemptState, key: string, row: StepRow, ended: EndReason): Promise<SteplogError> {
  if (ended.ending !== "lease-lost") await settle(state, key, row, "failed", toErrorInfo(ended.error, key));
  return ended.error;
}

/**
 * The function returned but its value cannot be recorded (it does not encode, or `result`
 * rejects it): what the step throws, once what that means is recorded.
 */
async function valueFailure(state: AttemptState, key: string, row: StepRow, effect: Effect, options: StepOptions, error: unknown): Promise<unknown> {
  if (effect === "compensatable" || effect === "irreversible") {
    // The effect happened and its value is lost: a failure would be redone, a second charge.
    // Left intended, it is an unknown outcome the next continue settles by the step's policy.
    const policy = options.onUnknown ?? defaultPolicy(effect, options.query !== undefined, options.compensate !== undefined);
    const unrecorded = new EffectUnrecordedError(state.runId, key, effect, error, policy);
    state.endWith("failed", unrecorded);
    return markFailedStep(unrecorded, key);
  }
  await settle(state, key, row, "failed", toErrorInfo(error, key), thrownNow(state));
  return markFailedStep(error, key);
}

/** A step's value, named for an error message from the error's details (no closure a step). */
const stepValueName = (details: SteplogErrorDetails): string => `The value of step ${JSON.stringify(details.step)} in run ${JSON.stringify(details.runId)}`;

/** `retry.retryIf`, awaited (it may be async), and a throw kept rather than taken for an answer. */
async function askRetryIf(policy: RetryPolicy, error: unknown, retry: number): Promise<{ again: boolean } | { again: false; threw: unknown }> {
  try {
    return { again: Boolean(await policy.retryIf(error, retry)) };
  } catch (threw) {
    return { again: false, threw };
  }
}

/** An irreversible step starts only when no other step of the run is in flight. */
function checkPivotOrder(state: AttemptState, key: string): void {
  const others = state.inFlight.others(key);
  if (others.length > 0) throw new PivotOrderError(state.runId, key, others);
}

type CallResult = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Add a call's reported usage to the row's total (numbers only; retries add up). */
function addUsage(row: StepRow, used: Usage): void {
  if (typeof used !== "object" || used === null) return;
  const total = (row.usage ? JSON.parse(row.usage) : {}) as Record<string, number>;
  for (const [field, amount] of Object.entries(used)) {
    if (typeof amount === "number" && Number.isFinite(amount)) total[field] = (total[field] ?? 0) + amount;
  }
  row.usage = JSON.stringify(total);
}

/**
 * What a step's function is given. A class, not an object literal with a getter: made once a
 * call on every step's path, and V8 builds literals with accessors the slow way.
 */
class CallInfo implements StepInfo {
  readonly runId: string;
  readonly attempt: number;
  previous?: StepInfo["previous"];
  /**
   * The call's own signal and what links it to the attempt's, made when first asked for (most
   * steps never look at it). No `= undefined` initializer: with one, V8 made a runtime property
   * lookup at every construction (about 340 instructions a step, counted with callgrind).
   */
  #link: SignalLink | undefined;
  /** Kept as an own property (not a method or getter) so `const { usage } = info` and `{ ...info }` keep it. */
  readonly usage: (used: Usage) => void;
  readonly #state: AttemptState;

  constructor(
    state: AttemptState,
    readonly step: string,
    readonly idempotencyKey: string,
    readonly retry: number,
    row: StepRow,
  ) {
    this.runId = state.runId;
    this.attempt = state.number;
    this.#state = state;
    this.usage = (used: Usage) => addUsage(row, used);
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
    return (this.#link ??= linkSignal(this.#state.signal));
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

/** A call with a timeout, test hooks or a span. */
async function callWatched(state: AttemptState, key: string, call: StepCall, info: CallInfo): Promise<CallResult> {
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
    const hooks = state.settings.hooks;
    hooks?.onCall?.(key, "function");
    const fn = (hooks?.override?.(key, call.name) as StepFunction<unknown> | undefined) ?? call.fn;
    // A value that arrives after the timeout fired is still the call's result: the effect happened.
    // Traced: the function runs with its step's span active, so the app's own spans in it hang from the step.
    const value = await (call.span ? call.span.within(() => fn(info)) : fn(info));
    return { ok: true, value };
  } catch (error) {
    return { ok: false, error: timedOut && !(error instanceof StopRequest) ? timedOut : error };
  } finally {
    if (timer) clearTimeout(timer);
    info.release();
  }
}

/** Read afresh: the attempt may have ended while this step waited. */
/** Asked before a function is called: a failed group-committed outcome ends the attempt here. */
function endReasonOf(state: AttemptState) {
  return state.endIfWriteFailed();
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
