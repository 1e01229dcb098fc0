/**
 * Runs that wait: ctx.waitForEvent, ctx.sleep and approval gates. A wait is a row in the step
 * log (intended while it waits, with what it waits for and until when; succeeded with the
 * event's payload; failed on a timeout). A run that must wait parks: its attempt ends
 * `waiting`, its lease is released and the process may exit; a worker (or a continue) picks it
 * up when its event arrives, its timer is due, or it is approved.
 */

import { EventRejectedError, InvalidOptionError, ResultRejectedError, WaitTimedOutError, type ErrorInfo, toErrorInfo } from "../base/errors.js";
import { checkName, RESERVED_EVENT_PREFIX } from "../workflow/names.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";
import { ReplayDone } from "./saga.js";
import { validate, type StandardSchemaV1 } from "../workflow/value-schemas.js";
import { handBack, supply } from "./hand-back.js";
import { enter } from "./door.js";
import { newRow, thrownNow, writeIntent, writeOutcome } from "./step-log.js";
import type { AttemptState, WaitingFor } from "./state.js";
import { newWaitCall, type StepCall } from "./step-call.js";

export type { WaitingFor };
import type { EventRow, StepRow } from "../store/types.js";
import { formatResolution, parseResolution, withResolution, type StoredWait } from "../workflow/step-resolution.js";
import { describeSpend } from "../workflow/budgets.js";

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
  if (w.kind === "child") return `child run ${JSON.stringify(w.child)} (step ${JSON.stringify(w.step)})${until}`;
  if (w.kind === "turn") return "its turn (a concurrency or rate limit)";
  if (w.kind === "budget") return describeBudgetWait(w);
  return `approval of step ${JSON.stringify(w.step)}`;
}

/** "a raise of its budget ($1.2 of $1 spent) before step "turn#3"": what a run parked on a budget waits for. */
function describeBudgetWait(w: WaitingFor): string {
  const spent = w.spent && w.budget ? ` (spent ${describeSpend(w.spent, w.budget)})` : "";
  const whose = w.budgetRun === undefined ? "its budget" : `the budget of run ${JSON.stringify(w.budgetRun)}`;
  return `a raise of ${whose}${spent} before step ${JSON.stringify(w.step)}`;
}

export function waitOf(row: StepRow | undefined): WaitingFor | undefined {
  return row ? parseResolution(row.resolution).wait : undefined;
}

export function park(state: AttemptState, waitingFor: StoredWait): never {
  const parked = new Parked(waitingFor);
  state.ending.park(waitingFor, Object.assign(parked, { code: "WAITING" }) as never);
  throw parked;
}

/** A wait as entered: handed back (`reused`), or its row open: reopened (`created` false) or new (`created` true, `previous` the key's row before it). */
export type EnteredWait = { key: string; row: StepRow; created: boolean; previous: StepRow | undefined } | { key: string; reused: unknown };

/**
 * Enter a wait by the door (door.ts) and carry out its plan. `until` says when it gives up, and
 * `more` adds to what a new row records it waits for (a child run's id); both are asked only
 * when a new row is written.
 */
export async function enterWait(
  state: AttemptState,
  call: StepCall,
  until: () => number | undefined,
  more?: (key: string) => Partial<WaitingFor>,
): Promise<EnteredWait> {
  const decision = enter(state, call).decision;
  const { key, record } = call;
  switch (decision.kind) {
    case "replay":
      if (record?.status !== "succeeded") throw new ReplayDone(`replay reached wait ${key}`);
      return { key, reused: record.value === null ? undefined : await state.payloads.decode(record.value) };
    case "hand-back":
      // A timeout or a rejected payload the workflow caught is thrown again, not waited for again.
      return { key, reused: await handBack(state, call) };
    case "supply":
      // Before fromStep with nothing to hand back: like a step, it takes a value given on the continue.
      return { key, reused: await supply(state, call, state.order.values![key]) };
    case "stop":
      return state.ending.stopWith(decision.error, decision.ending);
    case "reopen":
      return { key, row: record!, created: false, previous: undefined };
    default: {
      const row = newRow(state, call, `${state.runId}:${key}`);
      const wait: WaitingFor = { kind: call.kind as WaitingFor["kind"], step: key, ...(call.kind === "event" ? { event: call.name } : {}), ...more?.(key) };
      const at = until();
      if (at !== undefined) wait.until = at;
      row.resolution = formatResolution({ wait });
      await writeIntent(state, row);
      return { key, row, created: true, previous: record };
    }
  }
}

export async function settleWait(state: AttemptState, row: StepRow, patch: Partial<StepRow>, consumes?: EventRow): Promise<void> {
  const done: StepRow = { ...row, ...patch, endedAt: state.clock.now() };
  try {
    await writeOutcome(state, done, consumes ? { eventSeq: consumes.seq, by: row.key } : undefined);
  } catch (error) {
    if (consumes) consumes.consumedBy = null; // not consumed after all
    throw error;
  }
}

export async function failWait(state: AttemptState, row: StepRow, error: Error, consumes?: EventRow): Promise<void> {
  const info = toErrorInfo(error, row.key);
  // Thrown into the workflow's code: it may handle it and go on (handled-failures.ts).
  const resolution = withResolution(row.resolution, { thrown: thrownNow(state) });
  await settleWait(state, row, { status: "failed", error: await state.payloads.encodeError(info), resolution }, consumes);
  state.emit({ type: "step-failed", runId: state.runId, step: row.key, error: info });
}

const WAIT_KEYS: KnownKeys<WaitForEventOptions<undefined>> = { schema: true, timeoutMs: true };

export async function waitForEvent(state: AttemptState, name: string, options: WaitForEventOptions<StandardSchemaV1 | undefined> = {}): Promise<unknown> {
  checkKnownKeys(`Run ${JSON.stringify(state.runId)}, wait ${JSON.stringify(name)}`, options, WAIT_KEYS, { runId: state.runId });
  if (options.timeoutMs !== undefined && !(typeof options.timeoutMs === "number" && options.timeoutMs > 0 && Number.isFinite(options.timeoutMs))) {
    throw new InvalidOptionError(`Run ${JSON.stringify(state.runId)}, wait ${JSON.stringify(name)}: timeoutMs must be a finite number of milliseconds > 0.`, {
      runId: state.runId,
    });
  }
  // The wait's name is also the event's: one steplog keeps for itself could never be sent.
  if (typeof name === "string" && name.startsWith(RESERVED_EVENT_PREFIX)) checkName("event name", name);
  const now = state.clock.now();
  const entered = await enterWait(state, newWaitCall("event", name), () => (options.timeoutMs === undefined ? undefined : Math.ceil(now + options.timeoutMs)));
  if ("reused" in entered) {
    // A reused payload goes through the schema as it is now, like a reused step's value.
    if (!options.schema) return entered.reused;
    const checked = await validate(options.schema, entered.reused);
    if (!checked.ok) state.ending.stopWith(new ResultRejectedError(state.runId, entered.key, checked.issues, true, "wait"));
    return checked.value;
  }
  const { key, row } = entered;
  const wait = waitOf(row)!;
  // Events are consumed once each, in order of arrival. The event is reserved at once (before
  // anything is awaited) so a second wait of the same name, in parallel, takes the next one.
  const event = state.stored.events.find((e) => e.name === name && e.consumedBy === null);
  if (event) event.consumedBy = key;
  if (event) {
    let payload = await state.payloads.decode(event.payload);
    if (options.schema) {
      const checked = await validate(options.schema, payload);
      if (!checked.ok) {
        const rejected = new EventRejectedError(state.runId, key, name, checked.issues);
        await failWait(state, row, rejected, event);
        throw rejected;
      }
      payload = checked.value;
    }
    await settleWait(state, row, { status: "succeeded", value: event.payload, calls: 1 }, event);
    state.ran++;
    state.emit({ type: "step-succeeded", runId: state.runId, step: key, durationMs: state.clock.now() - row.intendedAt });
    return payload;
  }
  if (wait.until !== undefined && state.clock.now() >= wait.until) {
    const timedOut = new WaitTimedOutError(state.runId, key, `event ${JSON.stringify(name)}`, wait.until);
    await failWait(state, row, timedOut);
    throw timedOut;
  }
  return park(state, wait);
}

export async function sleep(state: AttemptState, name: string, msOrDate: number | Date): Promise<void> {
  const valid = msOrDate instanceof Date ? !Number.isNaN(msOrDate.getTime()) : typeof msOrDate === "number" && Number.isFinite(msOrDate) && msOrDate >= 0;
  if (!valid)
    throw new InvalidOptionError(`Run ${JSON.stringify(state.runId)}, sleep ${JSON.stringify(name)}: give a number of milliseconds ≥ 0 or a valid Date.`, {
      runId: state.runId,
    });
  const now = state.clock.now();
  const entered = await enterWait(state, newWaitCall("sleep", name), () => (msOrDate instanceof Date ? msOrDate.getTime() : Math.ceil(now + msOrDate)));
  if ("reused" in entered) return;
  const { key, row } = entered;
  const wait = waitOf(row)!;
  if (state.clock.now() >= (wait.until ?? 0)) {
    await settleWait(state, row, { status: "succeeded", value: '{"$type":"undefined"}', calls: 1 });
    state.ran++;
    state.emit({ type: "step-succeeded", runId: state.runId, step: key, durationMs: state.clock.now() - row.intendedAt });
    return;
  }
  park(state, wait);
}

export type { ErrorInfo };
