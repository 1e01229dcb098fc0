/**
 * The ctx.step protocol:
 *   before the start point, reuse a succeeded record (checked against the code as it is now);
 *   at the start point or after it, resolve an unknown outcome by the step's policy, then
 *   write the intent (durable before the function runs), call the function with retries and
 *   a timeout, encode its value, and write the outcome.
 */

import type { Attempt } from "./attempt.js";
import { StopRequest } from "./attempt.js";
import type { StepFunction, StepInfo, StepOptions, Usage } from "../workflow/context.js";
import {
  EffectUnrecordedError,
  InvalidOptionError,
  PivotOrderError,
  RedoIrreversibleError,
  ResultRejectedError,
  RunEscalatedError,
  SteplogError,
  StepTimedOutError,
  ValueMissingError,
  VersionChangedError,
  rebuildError,
  toErrorInfo,
  type ErrorInfo,
} from "../base/errors.js";
import { fault, faultArmed } from "../base/faults.js";
import { checkName } from "../workflow/names.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";
import { backoffDelay, retryPolicy } from "../workflow/retry-policy.js";
import { validate } from "../workflow/schema.js";
import type { Effect, StepRow } from "../store/types.js";
import { replayForSaga } from "./saga.js";
import { checkApproval } from "./waits.js";
import { LAUNCHED_BESIDE_START } from "./launched-beside.js";
import { defaultPolicy, owedRedrive, resolveUnknownOutcome } from "./unknown-outcome.js";
import type { Thrown } from "./handled-failures.js";
import { decodeValue } from "../payloads/values.js";
import { isBreakingChange } from "../workflow/versions.js";

export interface StepCall {
  name: string;
  options: StepOptions;
  fn: StepFunction<unknown>;
  /** Where it was entered in this attempt's call order (steps and waits, reused ones included). */
  position?: number;
}

export interface Identity {
  idempotencyKey: string;
  previous?: StepInfo["previous"];
}

const EFFECTS: readonly Effect[] = ["read", "idempotent", "compensatable", "irreversible"];
const POLICIES = ["redrive", "query", "compensate", "escalate"];

/**
 * ctx.step. Not an async function itself: it hands back the promise of the path it takes (an
 * async wrapper would add a promise and its ticks to every step), and turns a synchronous throw
 * into a rejection so callers see one behaviour.
 */
export function runStep(attempt: Attempt, call: StepCall): Promise<unknown> {
  try {
    return route(attempt, call);
  } catch (error) {
    return Promise.reject(error);
  }
}

function route(attempt: Attempt, call: StepCall): Promise<unknown> {
  attempt.assertRunning();
  if (!attempt.checkedNames.has(call.name)) {
    checkName("step name", call.name);
    attempt.checkedNames.add(call.name);
  }
  checkOptions(attempt, call);
  const key = attempt.nextKey(call.name);
  call.position = attempt.entered++;
  attempt.lastEntered = key;
  attempt.settings.hooks?.onEnter?.(key, call.name);
  if (attempt.plan.mode === "compensate") return replayForSaga(attempt, key, call);
  const record = attempt.latest.get(key);

  let startsHere = false;
  if (!attempt.started) {
    const fromStep = attempt.plan.fromStep;
    // A step the continue said to redo is a start point too: it runs again even where everything before it is reused.
    attempt.started = fromStep !== undefined ? key === fromStep : !isSettled(attempt, key, record) || attempt.plan.redo.has(key) || key === attempt.carriedStart;
    startsHere = attempt.started && fromStep === undefined;
  } else if (attempt.siblingsOf !== undefined || typeof (call.options as Record<symbol, unknown>)[LAUNCHED_BESIDE_START] === "number") {
    // Entered (or launched, see launched-beside.ts) beside the start point, before it settled and
    // before anything ran anew; and its record is no older than any record handed back before it
    // was launched (else its inputs may have changed since it was made).
    const launched = (call.options as Record<symbol, unknown>)[LAUNCHED_BESIDE_START];
    const bound = typeof launched === "number" ? launched : attempt.newestReused;
    if (record && isSettled(attempt, key, record) && record.attempt >= bound) return handBack(attempt, key, record, call.options);
    // Not reused (run, re-driven, settled by a query): what follows may depend on its new value.
    attempt.siblingsOf = undefined;
  }
  if (startsHere) {
    const settled = startAt(attempt, key, record, call);
    attempt.siblingsOf = key;
    const done = () => {
      if (attempt.siblingsOf === key) attempt.siblingsOf = undefined;
    };
    settled.then(done, done);
    return settled;
  }
  return startAt(attempt, key, record, call);
}

/** The rest of route: reuse or supply before the start point; a step at or after it runs. */
function startAt(attempt: Attempt, key: string, record: StepRow | undefined, call: StepCall): Promise<unknown> {
  if (!attempt.started) {
    if (record && isSettled(attempt, key, record)) return handBack(attempt, key, record, call.options);
    const values = attempt.plan.values;
    if (values && Object.hasOwn(values, key)) return supply(attempt, key, call, values[key]);
    stopWith(attempt, new ValueMissingError(attempt.runId, key, attempt.plan.fromStep!, attempt.notReached()));
  }
  // A succeeded irreversible step (a charge, an email) is never run again without consent; the step fromStep names has it.
  if (record?.status === "succeeded" && (record.effect === "irreversible" || call.options.effect === "irreversible") && key !== attempt.plan.fromStep) {
    if (attempt.plan.reuse.has(key)) return reuse(attempt, key, record, call.options);
    if (!attempt.plan.redo.has(key)) stopWith(attempt, new RedoIrreversibleError(attempt.runId, key, record.attempt, record.endedAt));
  }
  // An escalation nobody resolved (the run was cancelled or forced meanwhile) stays in force.
  if (record?.status === "escalated") stopWith(attempt, new RunEscalatedError(attempt.runId, key), "escalated");
  if (record && record.status === "intended" && record.attempt !== attempt.number) {
    return resolveUnknownOutcome(attempt, key, record, call);
  }
  return execute(attempt, key, call, owedRedrive(attempt, key, record) ?? { idempotencyKey: idempotencyKeyFor(attempt, key) });
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

function checkOptions(attempt: Attempt, call: StepCall): void {
  const { options, name } = call;
  const bad = (what: string) => new InvalidOptionError(`Run ${JSON.stringify(attempt.runId)}, step ${JSON.stringify(name)}: ${what}.`, { runId: attempt.runId, step: name });
  if (typeof call.fn !== "function") throw bad("the last argument of ctx.step must be the step's function");
  checkKnownKeys(() => `Run ${JSON.stringify(attempt.runId)}, step ${JSON.stringify(name)}`, options, STEP_KEYS, { runId: attempt.runId, step: name });
  if (options.errors !== undefined && !(Array.isArray(options.errors) && options.errors.every((c) => typeof c === "function"))) {
    throw bad("errors must be an array of error classes, e.g. [CardDeclined]");
  }
  if (options.effect !== undefined && !EFFECTS.includes(options.effect)) throw bad(`effect must be one of ${EFFECTS.join(", ")}`);
  if (options.onUnknown !== undefined && !POLICIES.includes(options.onUnknown)) throw bad(`onUnknown must be one of ${POLICIES.join(", ")}`);
  if (options.onUnknown === "query" && !options.query) throw bad(`onUnknown "query" needs a query function`);
  if (options.onUnknown === "compensate" && !options.compensate) throw bad(`onUnknown "compensate" needs a compensate function`);
  if (options.timeoutMs !== undefined && !(options.timeoutMs > 0)) throw bad("timeoutMs must be a number of milliseconds > 0");
}

/** `${runId}:${key}`, and `…:2`, `…:3` once the step has been compensated. */
export function idempotencyKeyFor(attempt: Attempt, key: string): string {
  const base = `${attempt.runId}:${key}`;
  const compensations = attempt.compensations(key);
  return compensations === 0 ? base : `${base}:${compensations + 1}`;
}

export function stopWith(attempt: Attempt, error: SteplogError, ending: "stopped" | "escalated" = "stopped"): never {
  attempt.endWith(ending, error);
  throw error;
}

/** A record a continue hands back rather than run: a success, or a failure the workflow handled (see handled-failures.ts). */
export function isSettled(attempt: Attempt, key: string, record: StepRow | undefined): boolean {
  return record?.status === "succeeded" || (record?.status === "failed" && attempt.handled.has(key));
}

/** Hand a settled record back: a success's value, or a handled failure's error thrown again. */
function handBack(attempt: Attempt, key: string, record: StepRow, options: StepOptions): Promise<unknown> {
  return record.status === "succeeded" ? reuse(attempt, key, record, options) : replayFailure(attempt, key, record, options.errors);
}

/**
 * A failure the workflow handled, thrown again without calling the function: the recorded error
 * rebuilt (as one of the step's declared `errors` classes where its class is among them), so the
 * workflow's handler takes the same path it took the first time.
 */
export async function replayFailure(attempt: Attempt, key: string, record: StepRow, classes: StepOptions["errors"]): Promise<never> {
  // Checked as the step is entered (before anything is awaited), so steps entered together keep their order.
  attempt.checkOrder(key, record);
  const info = await attempt.settings.payloads.decodeError(record.error!);
  noteReused(attempt, key, record);
  throw markFailedStep(rebuildError(info, classes ?? [], { runId: attempt.runId }), key);
}

/**
 * A succeeded record before the start point: its value, checked against the code as it is now.
 * Synchronous unless an upcast, a result schema or a codec needs awaiting: a continue of a long
 * run passes through thousands of these.
 */
function reuse(attempt: Attempt, key: string, record: StepRow, options: StepOptions): Promise<unknown> {
  // Checked as the step is entered (before anything is awaited), so steps entered together keep their order.
  attempt.checkOrder(key, record);
  if (!options.upcast && !attempt.plan.ignoreVersion && isBreakingChange(record.version, attempt.workflow.version)) {
    stopWith(attempt, new VersionChangedError(attempt.runId, key, record.version!, attempt.workflow.version!));
  }
  const decoded = record.value === null ? undefined : attempt.settings.payloads.decode(record.value);
  if (options.upcast || options.result || decoded instanceof Promise) return checkReused(attempt, key, record, options, decoded);
  noteReused(attempt, key, record);
  return Promise.resolve(decoded);
}

async function checkReused(attempt: Attempt, key: string, record: StepRow, options: StepOptions, decoded: unknown): Promise<unknown> {
  let value = await decoded;
  if (options.upcast) {
    try {
      value = options.upcast(value, { version: record.version });
    } catch (error) {
      stopWith(attempt, new ResultRejectedError(attempt.runId, key, [`upcast threw: ${(error as Error).message}`], true));
    }
  }
  if (options.result) {
    const checked = await validate(options.result, value);
    if (!checked.ok) stopWith(attempt, new ResultRejectedError(attempt.runId, key, checked.issues, true));
    value = checked.value;
  }
  noteReused(attempt, key, record);
  return value;
}

/** A record handed back instead of a call: counted, and told to listeners (steps and waits). */
export function noteReused(attempt: Attempt, key: string, record: StepRow): void {
  attempt.newestReused = Math.max(attempt.newestReused, record.attempt);
  attempt.reused.push(key);
  if (attempt.listening) {
    attempt.emit({ type: "step-reused", runId: attempt.runId, step: key, recordedBy: record.attempt, recordedAt: record.endedAt ?? record.intendedAt });
  }
}

/** A value given with `continue(id, { values })` for a step before the start point with no record. */
export async function supply(attempt: Attempt, key: string, call: StepCall, given: unknown): Promise<unknown> {
  const text = await attempt.settings.payloads.encode(given, `The value given for step ${JSON.stringify(key)}`, { runId: attempt.runId, step: key });
  let value = decodeValue(text.plain);
  if (call.options.result) {
    const checked = await validate(call.options.result, value);
    if (!checked.ok) stopWith(attempt, new ResultRejectedError(attempt.runId, key, checked.issues, false));
    value = checked.value;
  }
  const now = attempt.settings.clock.now();
  const row = newRow(attempt, key, call, idempotencyKeyFor(attempt, key), now);
  Object.assign(row, { status: "succeeded", value: text.stored, endedAt: now, resolution: JSON.stringify({ policy: "supplied" }) });
  await attempt.write(attempt.settings.store.writeIntent(attempt.fence, row));
  attempt.latest.set(key, row);
  attempt.resolved.push(key);
  attempt.emit({ type: "step-resolved", runId: attempt.runId, step: key, policy: "supplied", found: "value given on continue" });
  return value;
}

export function newRow(attempt: Attempt, key: string, call: StepCall, idempotencyKey: string, now: number): StepRow {
  return {
    runId: attempt.runId,
    seq: attempt.nextSeq++,
    attempt: attempt.number,
    key,
    name: call.name,
    status: "intended",
    effect: call.options.effect ?? "idempotent",
    idempotencyKey,
    value: null,
    error: null,
    version: attempt.version,
    intendedAt: now,
    endedAt: null,
    calls: 0,
    resolution: null,
    usage: null,
    position: call.position ?? null,
  };
}

/** Write the intent, call the function (with retries and timeouts), record the outcome. */
export async function execute(attempt: Attempt, key: string, call: StepCall, identity: Identity): Promise<unknown> {
  // A step other than the start point runs anew: later records may have used what it returned before.
  if (attempt.siblingsOf !== key) attempt.siblingsOf = undefined;
  const { options } = call;
  const effect = options.effect ?? "idempotent";
  if (effect === "irreversible") checkPivotOrder(attempt, key);
  if (options.approval) {
    await checkApproval(attempt, key);
    // Another step may have started while the approval was looked up.
    if (effect === "irreversible") checkPivotOrder(attempt, key);
  }
  const policy = retryPolicy(options.retry, key);
  const store = attempt.settings.store;
  const clock = attempt.settings.clock;
  attempt.inFlight.add(key);
  try {
    const row = newRow(attempt, key, call, identity.idempotencyKey, clock.now());
    fault("before-intent", key);
    try {
      await store.writeIntent(attempt.fence, row);
    } catch (error) {
      throw attempt.writeFailed(error);
    }
    attempt.latest.set(key, row);
    fault("after-intent", key);

    let value: unknown;
    for (let retry = 0; ; retry++) {
      // The attempt may have ended while the intent was being written: then the function is not called.
      const endedBefore = endReasonOf(attempt);
      if (endedBefore) {
        if (endedBefore.ending !== "lease-lost") await settle(attempt, key, row, "failed", toErrorInfo(endedBefore.error, key));
        throw endedBefore.error;
      }
      if (attempt.listening) attempt.emit({ type: "step-started", runId: attempt.runId, step: key, retry });
      row.calls++;
      const result = await callOnce(attempt, key, call, identity, retry, row);
      if (result.ok) {
        value = result.value;
        break;
      }
      const error = result.error;
      if (error instanceof StopRequest) {
        await settle(attempt, key, row, "stopped", toErrorInfo(attempt.endReason?.error ?? error, key));
        throw error;
      }
      if (attempt.endReason) {
        if (attempt.endReason.ending !== "lease-lost") await settle(attempt, key, row, "failed", toErrorInfo(attempt.endReason.error, key));
        throw attempt.endReason.error;
      }
      const verdict = retry + 1 < policy.maxAttempts ? await askRetryIf(policy, error, retry) : { again: false as const };
      if (verdict.again) {
        await sleep(backoffDelay(policy, retry + 1), attempt.controller.signal);
        const ended = endReasonOf(attempt);
        if (!ended) continue;
        if (ended.ending !== "lease-lost") await settle(attempt, key, row, "failed", toErrorInfo(ended.error, key));
        throw ended.error;
      }
      // The predicate may have taken a while (it is awaited): an attempt that ended meanwhile says so.
      const endedWhileAsking = endReasonOf(attempt);
      if (endedWhileAsking) {
        if (endedWhileAsking.ending !== "lease-lost") await settle(attempt, key, row, "failed", toErrorInfo(endedWhileAsking.error, key));
        throw endedWhileAsking.error;
      }
      const info = toErrorInfo(error, key);
      if ("threw" in verdict && !(error instanceof Error && Object.hasOwn(error, "cause"))) {
        // A predicate that throws decides nothing: the step failed with its own error, the
        // predicate's kept as its cause (unless it has one: what is recorded is what is thrown).
        info.cause = toErrorInfo(verdict.threw);
        if (error instanceof Error) Object.defineProperty(error, "cause", { value: verdict.threw, configurable: true, writable: true });
      }
      await settle(attempt, key, row, "failed", info, thrownNow(attempt));
      throw markFailedStep(error, key);
    }
    fault("after-fn", key);
    // The function returned: its effect happened and its value is known, so it is recorded even
    // if the attempt ended meanwhile (a deadline, a cancel, another step's stop or escalation) —
    // throwing it away would make a continue do the effect again. Only a lost lease forbids it.
    const endedWhileRunning = endReasonOf(attempt);
    if (endedWhileRunning?.ending === "lease-lost") throw endedWhileRunning.error;

    let text: { plain: string; stored: string };
    let decoded: unknown;
    try {
      const encoded = attempt.settings.payloads.encode(value, () => `The value of step ${JSON.stringify(key)} in run ${JSON.stringify(attempt.runId)}`, {
        runId: attempt.runId,
        step: key,
      });
      text = "then" in encoded ? await encoded : encoded;
      decoded = decodeValue(text.plain);
      if (options.result) {
        const checked = await validate(options.result, decoded);
        if (!checked.ok) throw new ResultRejectedError(attempt.runId, key, checked.issues, false);
        decoded = checked.value;
      }
    } catch (error) {
      if (effect === "compensatable" || effect === "irreversible") {
        // The effect happened and its value is lost: a failure would be redone, a second charge.
        // Left intended, it is an unknown outcome the next continue settles by the step's policy.
        const policy = options.onUnknown ?? defaultPolicy(effect, options.query !== undefined, options.compensate !== undefined);
        const unrecorded = new EffectUnrecordedError(attempt.runId, key, effect, error, policy);
        attempt.endWith("failed", unrecorded);
        throw markFailedStep(unrecorded, key);
      }
      await settle(attempt, key, row, "failed", toErrorInfo(error, key), thrownNow(attempt));
      throw markFailedStep(error, key);
    }

    row.status = "succeeded";
    row.value = text.stored;
    row.endedAt = clock.now();
    const write = store.writeOutcome(attempt.fence, outcomeOf(row));
    // Group commit: a read or idempotent step's outcome may commit with the next write (a
    // crash before it re-drives the step with the same key); any other effect's outcome is
    // durable before ctx.step returns.
    if ((effect === "read" || effect === "idempotent") && !faultArmed("after-outcome", key)) attempt.track(write);
    else await attempt.write(write);
    fault("after-outcome", key);
    attempt.ran.push(key);
    if (attempt.listening) attempt.emit({ type: "step-succeeded", runId: attempt.runId, step: key, durationMs: row.endedAt! - row.intendedAt });
    // Recorded; but the attempt is over, so the workflow's code does not go on past this step.
    if (endedWhileRunning && endedWhileRunning.ending !== "waiting") throw endedWhileRunning.error;
    return decoded;
  } finally {
    attempt.inFlight.delete(key);
    attempt.checkEarlyEnd();
  }
}

/** `retry.retryIf`, awaited (it may be async), and a throw kept rather than taken for an answer. */
async function askRetryIf(policy: ReturnType<typeof retryPolicy>, error: unknown, retry: number): Promise<{ again: boolean } | { again: false; threw: unknown }> {
  try {
    return { again: Boolean(await policy.retryIf(error, retry)) };
  } catch (threw) {
    return { again: false, threw };
  }
}

/** An irreversible step starts only when no other step of the run is in flight. */
function checkPivotOrder(attempt: Attempt, key: string): void {
  const others = [...attempt.inFlight].filter((k) => k !== key);
  if (others.length > 0) throw new PivotOrderError(attempt.runId, key, others);
}

/**
 * The step each error thrown out of ctx.step failed in: with steps running at once, the last step
 * entered is not always the one that failed, and the attempt's error must name the right one.
 */
const failedSteps = new WeakMap<object, string>();

function markFailedStep(error: unknown, key: string): unknown {
  if (typeof error === "object" && error !== null && !failedSteps.has(error)) failedSteps.set(error, key);
  return error;
}

/** The step an error thrown out of ctx.step failed in, if it was one. */
export function failedStepOf(error: unknown): string | undefined {
  return typeof error === "object" && error !== null ? failedSteps.get(error) : undefined;
}

/** Record a step that did not return a value: failed, or stopped by its attempt's end. */
/** The mark of a failure thrown into the workflow's code now (handled-failures.ts). */
export function thrownNow(attempt: Attempt): Thrown {
  return { attempt: attempt.number, entered: attempt.entered };
}

/**
 * Record a step that did not return a value: failed, or stopped by its attempt's end. `thrown`
 * when its own error is thrown into the workflow's code (the code may handle it and go on).
 */
async function settle(attempt: Attempt, key: string, row: StepRow, status: "failed" | "stopped", error: ErrorInfo, thrown?: Thrown): Promise<void> {
  if (thrown) row.resolution = JSON.stringify({ thrown });
  row.error = await attempt.settings.payloads.encodeError(error);
  row.status = status;
  row.endedAt = attempt.settings.clock.now();
  attempt.emit({ type: "step-failed", runId: attempt.runId, step: key, error });
  await attempt.write(attempt.settings.store.writeOutcome(attempt.fence, outcomeOf(row)));
}

export function outcomeOf(row: StepRow) {
  return {
    seq: row.seq,
    status: row.status as Exclude<StepRow["status"], "intended">,
    value: row.value,
    error: row.error,
    endedAt: row.endedAt ?? 0,
    calls: row.calls,
    resolution: row.resolution,
    usage: row.usage,
  };
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

async function callOnce(attempt: Attempt, key: string, call: StepCall, identity: Identity, retry: number, row: StepRow): Promise<CallResult> {
  const parent = attempt.controller.signal;
  const timeoutMs = call.options.timeoutMs;
  // Each call has its own signal, a child of the attempt's (so listeners a step adds go away
  // with the call). It is made when first asked for: most steps never look at it.
  let controller: AbortController | undefined;
  let onParentAbort: (() => void) | undefined;
  const signal = (): AbortSignal => {
    if (!controller) {
      const child = new AbortController();
      controller = child;
      onParentAbort = () => child.abort(parent.reason);
      if (parent.aborted) onParentAbort();
      else parent.addEventListener("abort", onParentAbort, { once: true });
    }
    return controller.signal;
  };
  let timedOut: StepTimedOutError | undefined;
  let timer: NodeJS.Timeout | undefined;
  if (timeoutMs !== undefined) {
    signal();
    timer = setTimeout(() => {
      timedOut = new StepTimedOutError(attempt.runId, key, timeoutMs);
      controller!.abort(timedOut);
    }, timeoutMs);
  }
  const info = {
    runId: attempt.runId,
    step: key,
    idempotencyKey: identity.idempotencyKey,
    attempt: attempt.number,
    retry,
    get signal() {
      return signal();
    },
    usage: (used: Usage) => addUsage(row, used),
  } as StepInfo;
  if (identity.previous) info.previous = identity.previous;
  try {
    attempt.settings.hooks?.onCall?.(key, "function");
    const fn = (attempt.settings.hooks?.override?.(key, call.name) as StepFunction<unknown> | undefined) ?? call.fn;
    // A value that arrives after the timeout fired is still the call's result: the effect happened.
    const value = await fn(info);
    return { ok: true, value };
  } catch (error) {
    return { ok: false, error: timedOut && !(error instanceof StopRequest) ? timedOut : error };
  } finally {
    if (timer) clearTimeout(timer);
    if (onParentAbort) parent.removeEventListener("abort", onParentAbort);
  }
}

/** Read afresh: the attempt may have ended while this step waited. */
function endReasonOf(attempt: Attempt) {
  return attempt.endReason;
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
