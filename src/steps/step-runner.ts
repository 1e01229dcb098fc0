/**
 * ctx.step, one call object (step-call.ts) along one path:
 *
 *   enter    the door (door.ts) gives the call its key, position and record, and plans it (plan.ts)
 *   plan     hand the record back (hand-back.ts), supply a given value, stop, replay for a saga
 *            (saga.ts), resolve a cut-off record first, or run
 *   resolve  settle an unknown outcome by the step's policy (unknown-outcome.ts)
 *   call     write the intent (step-log.ts: durable before the function runs), then call the
 *            function with retries and a timeout (step-function.ts)
 *   record   encode its value and write the outcome (step-outcome.ts)
 */

import { PivotOrderError } from "../base/errors.js";
import { fault } from "../base/faults.js";
import { retryPolicy } from "../workflow/retry-policy.js";
import { replayForSaga } from "./saga.js";
import { checkApproval } from "./approval-gate.js";
import { holdForBudget } from "./budget.js";
import { defaultPolicy, owedRedrive, resolveUnknownOutcome } from "./unknown-outcome.js";
import type { Plan, StepDecision } from "./plan.js";
import type { StepOutcomeName } from "./step-spans.js";
import { handBack, supply } from "./hand-back.js";
import { newRow, writeIntent } from "./step-log.js";
import type { AttemptState } from "./state.js";
import type { StepCall } from "./step-call.js";
import { enter } from "./door.js";
import { callAgain, callOnce, endedUnderway, startCall } from "./step-function.js";
import { recordValue } from "./step-outcome.js";
import { afterChangedResolution, recordInput, recordedAsGiven } from "./step-input.js";
import { INSIDE_STEP } from "./inside-step.js";

/**
 * ctx.step: enter the step, then carry out its plan (traced: inside its span). perf: not an async
 * function (an async wrapper would add a promise and its ticks to every step); a synchronous
 * throw is turned into a rejection so callers see one behaviour.
 */
export function runStep(state: AttemptState, call: StepCall): Promise<unknown> {
  let done: Promise<unknown>;
  try {
    const plan = enter(state, call);
    const decision = plan.decision;
    // A saga's replay calls no function: no span.
    if (decision.kind === "replay") return replayForSaga(state, call);
    const span = state.trace?.step(call.key, call.name, call.options.effect, OUTCOMES[decision.kind]);
    if (span === undefined) return carryOut(state, call, plan);
    call.span = span;
    try {
      done = carryOut(state, call, plan);
    } catch (error) {
      done = Promise.reject(error);
    }
    return span.follow(done, () => state.order.latestRow(call.key));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** The outcome a step span starts with, by the plan's decision (a resolution that re-drives the step makes it "ran"). */
const OUTCOMES: Record<StepDecision["kind"], StepOutcomeName> = {
  "hand-back": "reused",
  supply: "supplied",
  stop: "stopped",
  resolve: "resolved",
  run: "ran",
  // Never a step's (see plan.ts).
  reopen: "ran",
  replay: "reused",
};

/** Carry out the plan's decision for the step entered. */
function carryOut(state: AttemptState, call: StepCall, plan: Plan): Promise<unknown> {
  const decision = plan.decision;
  let done: Promise<unknown>;
  switch (decision.kind) {
    case "hand-back":
      return handBack(state, call);
    case "supply":
      return supply(state, call, state.order.values![call.key]);
    case "stop":
      state.ending.endWith(decision.ending, decision.error);
      return Promise.reject(decision.error);
    case "resolve":
      done = resolveThenRun(state, call);
      break;
    case "run":
      call.identity = owedRedrive(state, call) ?? { idempotencyKey: state.idempotencyKeyFor(call.key) };
      done = start(state, call);
      break;
    case "reopen":
    case "replay":
      throw new Error(`steplog: a step was planned as a wait (${decision.kind}); this is a bug in steplog.`);
  }
  if (plan.siblings === "open") {
    // Steps entered while it is unsettled were launched beside it (see CallOrder.siblingsOf).
    const { key } = call;
    state.order.openSiblings(key);
    const close = () => state.order.closeSiblingsOf(key);
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
async function resolveThenRun(state: AttemptState, call: StepCall): Promise<unknown> {
  const { key } = call;
  state.inFlight.add(key);
  try {
    // Named before settling: an escalation (or a failing query) throws out of it.
    if (call.span) {
      const { options } = call;
      call.span.policy = options.onUnknown ?? defaultPolicy(options.effect ?? "idempotent", options.query !== undefined, options.compensate !== undefined);
    }
    // A cut-off row is settled for the input it was recorded with, never the call's new one (step-input.ts).
    const changed = call.input?.change !== undefined ? call.input : undefined;
    if (changed) call.input = await recordedAsGiven(state, call.record!);
    const resolved = await resolveUnknownOutcome(state, call);
    if (changed) return await afterChangedResolution(state, call, resolved, changed, start);
    if (resolved.kind === "found") return resolved.value;
    if (call.span) call.span.outcome = "ran";
    call.identity = resolved.identity;
    return await start(state, call);
  } finally {
    state.inFlight.delete(key);
    state.ending.checkEarlyEnd();
  }
}

/**
 * Start the step's call: what comes before its intent is checked here (a rejection if it fails).
 * From the intent on (`run`) it is an async function with as few locals as can be (perf: every
 * await saves its whole frame, and a step in flight holds it).
 */
export function start(state: AttemptState, call: StepCall): Promise<unknown> {
  try {
    // A run with a budget past it parks here, before the intent (budget.ts); without one, one comparison.
    if (state.budget !== undefined) {
      const held = holdForBudget(state, call, start);
      if (held !== undefined) return held;
    }
    const { key, options } = call;
    // A step other than the start point runs anew: later records may have used what it returned before.
    state.order.ranAnew(key);
    if (options.effect === "irreversible") checkPivotOrder(state, key, options);
    if (options.approval) return approvedThenRun(state, call);
    call.policy = retryPolicy(options.retry, key);
    return run(state, call);
  } catch (error) {
    return Promise.reject(error);
  }
}

async function approvedThenRun(state: AttemptState, call: StepCall): Promise<unknown> {
  await checkApproval(state, call);
  // Another step may have started while the approval was looked up.
  if (call.options.effect === "irreversible") checkPivotOrder(state, call.key, call.options);
  call.policy = retryPolicy(call.options.retry, call.key);
  return await run(state, call);
}

/** From the intent to the outcome: the step is in flight throughout. */
async function run(state: AttemptState, call: StepCall): Promise<unknown> {
  const key = call.key;
  state.inFlight.add(key);
  try {
    const row = newRow(state, call, call.identity!.idempotencyKey);
    call.row = row;
    if (call.span) call.span.row = row;
    if (call.input !== undefined) {
      const sealing = recordInput(state, call);
      if (sealing) await sealing;
    }
    fault("before-intent", key);
    if (state.streams !== undefined) state.streams.redo(key);
    await writeIntent(state, row);
    fault("after-intent", key);
    // The attempt may have ended while the intent was being written: then the function is not called.
    const endedBefore = state.writes.endIfFailed();
    if (endedBefore) throw await endedUnderway(state, call, endedBefore);
    const info = startCall(state, call, 0);
    let value: unknown;
    let threw = false;
    try {
      value = await callOnce(state, call, info);
    } catch (error) {
      threw = true;
      value = error;
    }
    info.release();
    if (threw) value = await callAgain(state, call, value);
    fault("after-fn", key);
    const recorded = recordValue(state, call, value);
    // A promise only on the paths that wait (step-outcome.ts): a step's value is never one.
    return recorded instanceof Promise ? await recorded : recorded;
  } finally {
    state.inFlight.delete(key);
    state.ending.checkEarlyEnd();
  }
}

/** An irreversible step starts only when no other step of the run is in flight (but the one it runs inside). */
function checkPivotOrder(state: AttemptState, key: string, options: object): void {
  const inside = (options as Record<symbol, unknown>)[INSIDE_STEP];
  const others = state.inFlight.others(key).filter((other) => other !== inside);
  if (others.length > 0) throw new PivotOrderError(state.runId, key, others);
}
