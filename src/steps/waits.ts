/**
 * Runs that wait: ctx.waitForEvent, ctx.sleep and approval gates. A wait is a row in the step
 * log (intended while it waits, with what it waits for and until when; succeeded with the
 * event's payload; failed on a timeout). A run that must wait parks: its attempt ends
 * `waiting`, its lease is released and the process may exit; a worker (or a continue) picks it
 * up when its event arrives, its timer is due, or it is approved.
 */

import type { Attempt } from "./attempt.js";
import { EventRejectedError, InvalidOptionError, ResultRejectedError, ValueMissingError, WaitTimedOutError, type ErrorInfo, toErrorInfo } from "../base/errors.js";
import { checkName, RESERVED_EVENT_PREFIX } from "../workflow/names.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";
import { ReplayDone } from "./saga.js";
import { validate, type StandardSchemaV1 } from "../workflow/schema.js";
import { isSettled, newRow, noteReused, outcomeOf, replayFailure, stopWith, supply, thrownNow, type StepCall } from "./step-runner.js";
import type { EventRow, StepRow } from "../store/types.js";

export interface WaitingFor {
  kind: "event" | "sleep" | "approval";
  /** The step key of the wait (or of the step that needs approval). */
  step: string;
  event?: string;
  /** Wall-clock ms: the timer, or the wait's timeout. */
  until?: number;
}

export interface WaitForEventOptions<S extends StandardSchemaV1 | undefined> {
  /** Checked when the run consumes the event. */
  schema?: S;
  /** Give up after this long (wall clock, counted from when the wait began): WAIT_TIMED_OUT. */
  timeoutMs?: number;
}

/** The event name an approval of a step is recorded under. */
export const approvalEvent = (stepKey: string) => `${RESERVED_EVENT_PREFIX}approval:${stepKey}`;

/** Thrown through the workflow's code when the run parks; the attempt ends `waiting`. */
export class Parked extends Error {
  override name = "Parked";
  constructor(readonly waitingFor: WaitingFor) {
    super(`parked: waiting for ${describeWait(waitingFor)}`);
  }
}

export function describeWait(w: WaitingFor): string {
  const until = w.until === undefined ? "" : ` until ${new Date(w.until).toISOString()}`;
  if (w.kind === "event") return `event ${JSON.stringify(w.event)} (wait ${JSON.stringify(w.step)})${until}`;
  if (w.kind === "sleep") return `its timer (sleep ${JSON.stringify(w.step)})${until}`;
  return `approval of step ${JSON.stringify(w.step)}`;
}

function waitOf(row: StepRow | undefined): WaitingFor | undefined {
  if (!row?.resolution) return undefined;
  return (JSON.parse(row.resolution) as { wait?: WaitingFor }).wait;
}

function park(attempt: Attempt, waitingFor: WaitingFor): never {
  const parked = new Parked(waitingFor);
  attempt.parkedOn = waitingFor;
  attempt.endWith("waiting", Object.assign(parked, { code: "WAITING" }) as never);
  throw parked;
}

/** Enter a wait: before the start point a finished wait is reused; otherwise (re)use its open row. */
async function enterWait(attempt: Attempt, name: string, kind: "event" | "sleep", until: () => number | undefined): Promise<{ key: string; row: StepRow } | { key: string; reused: unknown }> {
  attempt.assertRunning();
  // A wait's name becomes its step key (name#2 for repeats), so it follows the step-name rule.
  checkName("step name", name);
  const key = attempt.nextKey(name);
  const position = attempt.entered++;
  attempt.lastEntered = key;
  attempt.settings.hooks?.onEnter?.(key, name);
  const record = attempt.latest.get(key);
  if (attempt.plan.mode === "compensate") {
    if (record?.status !== "succeeded") throw new ReplayDone(`replay reached wait ${key}`);
    return { key, reused: record.value === null ? undefined : await attempt.settings.payloads.decode(record.value) };
  }
  if (!attempt.started) attempt.started = attempt.plan.fromStep !== undefined ? key === attempt.plan.fromStep : !isSettled(attempt, key, record) || key === attempt.carriedStart;
  // A wait at or after the start point takes what arrives now: steps after it are not siblings.
  if (attempt.started) attempt.siblingsOf = undefined;
  // A timeout or a rejected payload the workflow caught is thrown again, not waited for again.
  if (!attempt.started && record?.status === "failed" && attempt.handled.has(key)) return replayFailure(attempt, key, record, undefined);
  if (!attempt.started && record?.status === "succeeded") {
    attempt.checkOrder(key, record);
    noteReused(attempt, key, record);
    return { key, reused: record.value === null ? undefined : await attempt.settings.payloads.decode(record.value) };
  }
  if (!attempt.started) {
    // Before fromStep with nothing to hand back: like a step, it stops for its value (or takes one given).
    const values = attempt.plan.values;
    if (!values || !Object.hasOwn(values, key)) stopWith(attempt, new ValueMissingError(attempt.runId, key, attempt.plan.fromStep!, attempt.notReached()));
    return { key, reused: await supply(attempt, key, { name, options: { effect: "read" }, fn: () => undefined, position }, values[key]) };
  }
  if (record?.status === "intended" && waitOf(record)) return { key, row: record };
  const call: StepCall = { name, options: { effect: "read" }, fn: () => undefined, position };
  const row = newRow(attempt, key, call, `${attempt.runId}:${key}`, attempt.settings.clock.now());
  const wait: WaitingFor = { kind, step: key, ...(kind === "event" ? { event: name } : {}) };
  const at = until();
  if (at !== undefined) wait.until = at;
  row.resolution = JSON.stringify({ wait });
  await attempt.write(attempt.settings.store.writeIntent(attempt.fence, row));
  attempt.latest.set(key, row);
  return { key, row };
}

async function settleWait(attempt: Attempt, row: StepRow, patch: Partial<StepRow>, consumes?: EventRow): Promise<void> {
  const done: StepRow = { ...row, ...patch, endedAt: attempt.settings.clock.now() };
  const outcome = outcomeOf(done);
  try {
    await attempt.write(
      attempt.settings.store.writeOutcome(attempt.fence, consumes ? { ...outcome, consumes: { eventSeq: consumes.seq, by: row.key } } : outcome),
    );
  } catch (error) {
    if (consumes) consumes.consumedBy = null; // not consumed after all
    throw error;
  }
  attempt.latest.set(row.key, done);
}

async function failWait(attempt: Attempt, row: StepRow, error: Error, consumes?: EventRow): Promise<void> {
  const info = toErrorInfo(error, row.key);
  // Thrown into the workflow's code: it may handle it and go on (handled-failures.ts).
  const resolution = JSON.stringify({ ...(JSON.parse(row.resolution ?? "{}") as object), thrown: thrownNow(attempt) });
  await settleWait(attempt, row, { status: "failed", error: await attempt.settings.payloads.encodeError(info), resolution }, consumes);
  attempt.emit({ type: "step-failed", runId: attempt.runId, step: row.key, error: info });
}

const WAIT_KEYS: KnownKeys<WaitForEventOptions<undefined>> = { schema: true, timeoutMs: true };

export async function waitForEvent(attempt: Attempt, name: string, options: WaitForEventOptions<StandardSchemaV1 | undefined> = {}): Promise<unknown> {
  checkKnownKeys(`Run ${JSON.stringify(attempt.runId)}, wait ${JSON.stringify(name)}`, options, WAIT_KEYS, { runId: attempt.runId });
  if (options.timeoutMs !== undefined && !(typeof options.timeoutMs === "number" && options.timeoutMs > 0 && Number.isFinite(options.timeoutMs))) {
    throw new InvalidOptionError(`Run ${JSON.stringify(attempt.runId)}, wait ${JSON.stringify(name)}: timeoutMs must be a finite number of milliseconds > 0.`, { runId: attempt.runId });
  }
  // The wait's name is also the event's: one steplog keeps for itself could never be sent.
  if (typeof name === "string" && name.startsWith(RESERVED_EVENT_PREFIX)) checkName("event name", name);
  const now = attempt.settings.clock.now();
  const entered = await enterWait(attempt, name, "event", () => (options.timeoutMs === undefined ? undefined : Math.ceil(now + options.timeoutMs)));
  if ("reused" in entered) {
    // A reused payload goes through the schema as it is now, like a reused step's value.
    if (!options.schema) return entered.reused;
    const checked = await validate(options.schema, entered.reused);
    if (!checked.ok) stopWith(attempt, new ResultRejectedError(attempt.runId, entered.key, checked.issues, true, "wait"));
    return checked.value;
  }
  const { key, row } = entered;
  const wait = waitOf(row)!;
  // Events are consumed once each, in order of arrival. The event is reserved at once (before
  // anything is awaited) so a second wait of the same name, in parallel, takes the next one.
  const event = attempt.stored.events.find((e) => e.name === name && e.consumedBy === null);
  if (event) event.consumedBy = key;
  if (event) {
    let payload = await attempt.settings.payloads.decode(event.payload);
    if (options.schema) {
      const checked = await validate(options.schema, payload);
      if (!checked.ok) {
        const rejected = new EventRejectedError(attempt.runId, key, name, checked.issues);
        await failWait(attempt, row, rejected, event);
        throw rejected;
      }
      payload = checked.value;
    }
    await settleWait(attempt, row, { status: "succeeded", value: event.payload, calls: 1 }, event);
    attempt.ran.push(key);
    attempt.emit({ type: "step-succeeded", runId: attempt.runId, step: key, durationMs: attempt.settings.clock.now() - row.intendedAt });
    return payload;
  }
  if (wait.until !== undefined && attempt.settings.clock.now() >= wait.until) {
    const timedOut = new WaitTimedOutError(attempt.runId, key, `event ${JSON.stringify(name)}`, wait.until);
    await failWait(attempt, row, timedOut);
    throw timedOut;
  }
  return park(attempt, wait);
}

export async function sleep(attempt: Attempt, name: string, msOrDate: number | Date): Promise<void> {
  const valid = msOrDate instanceof Date ? !Number.isNaN(msOrDate.getTime()) : typeof msOrDate === "number" && Number.isFinite(msOrDate) && msOrDate >= 0;
  if (!valid) throw new InvalidOptionError(`Run ${JSON.stringify(attempt.runId)}, sleep ${JSON.stringify(name)}: give a number of milliseconds ≥ 0 or a valid Date.`, { runId: attempt.runId });
  const now = attempt.settings.clock.now();
  const entered = await enterWait(attempt, name, "sleep", () => (msOrDate instanceof Date ? msOrDate.getTime() : Math.ceil(now + msOrDate)));
  if ("reused" in entered) return;
  const { key, row } = entered;
  const wait = waitOf(row)!;
  if (attempt.settings.clock.now() >= (wait.until ?? 0)) {
    await settleWait(attempt, row, { status: "succeeded", value: '{"$type":"undefined"}', calls: 1 });
    attempt.ran.push(key);
    attempt.emit({ type: "step-succeeded", runId: attempt.runId, step: key, durationMs: attempt.settings.clock.now() - row.intendedAt });
    return;
  }
  park(attempt, wait);
}

/** Before an `approval: true` step runs: go on if it was approved, else park until it is. */
export async function checkApproval(attempt: Attempt, key: string): Promise<void> {
  const answers = attempt.stored.events.filter((e) => e.name === approvalEvent(key));
  const last = answers.at(-1);
  if (last && ((await attempt.settings.payloads.decode(last.payload)) as { approved?: boolean }).approved === true) return;
  park(attempt, { kind: "approval", step: key });
}

export type { ErrorInfo };
