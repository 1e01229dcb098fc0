/**
 * What the agent helpers keep per attempt (per `ctx`): call counters for tools called without
 * a call id, the tool calls in flight (so an irreversible tool waits its turn instead of
 * failing with PIVOT_ORDER), and the first error that ended the agent's part of the attempt.
 *
 * Agent frameworks catch what a tool throws and hand it to the model as a tool error. An error
 * from steplog itself (the attempt ended: escalated, cancelled, lease lost; a step refused)
 * must not be handed to the model and answered: it is kept here, and the next model turn or
 * tool call of the same attempt throws it instead of running.
 */

import { StopRequest } from "../steps/state.js";
import type { WorkflowContext } from "../workflow/context.js";
import { isOutcomeUnknown, isSteplogError } from "../base/errors.js";

interface Entry {
  seq: number;
  irreversible: boolean;
  finished: boolean;
  done: Promise<void>;
}

interface AgentState {
  fatal: { error: unknown } | undefined;
  counters: Map<string, number>;
  entries: Entry[];
  seq: number;
}

const states = new WeakMap<object, AgentState>();

export function stateOf(ctx: WorkflowContext): AgentState {
  let state = states.get(ctx);
  if (!state) {
    state = { fatal: undefined, counters: new Map(), entries: [], seq: 0 };
    states.set(ctx, state);
  }
  return state;
}

/** True when `error` comes from steplog's machinery rather than from the app's own code. */
export function isMachineryError(error: unknown, signal?: AbortSignal): boolean {
  // An unknown outcome too: not the tool's answer for the model, but the step left intended.
  return isSteplogError(error) || error instanceof StopRequest || isOutcomeUnknown(error) || signal?.aborted === true;
}

/** Keep the first error that ended the agent's part of this attempt. */
export function markFatal(ctx: WorkflowContext, error: unknown): void {
  const state = stateOf(ctx);
  if (!state.fatal) state.fatal = { error };
}

/** Throw the kept error, if any: nothing more of the agent runs in this attempt. */
export function throwIfFatal(ctx: WorkflowContext): void {
  const fatal = stateOf(ctx).fatal;
  if (fatal) throw fatal.error;
}

/** The next number for a tool called without a call id (1, 2, … per tool name, in call order). */
export function nextCallNumber(ctx: WorkflowContext, toolName: string): number {
  const counters = stateOf(ctx).counters;
  const n = (counters.get(toolName) ?? 0) + 1;
  counters.set(toolName, n);
  return n;
}

/**
 * Run `fn` (one tool call's step) in turn with the other tool calls of this attempt: an
 * irreversible call starts only when every call made before it has finished and none runs; a
 * call made after a pending irreversible one waits for it. Others run concurrently, as the
 * framework calls them. Registration happens synchronously, so the order is the call order.
 */
export function inTurn<T>(ctx: WorkflowContext, irreversible: boolean, fn: () => Promise<T>): Promise<T> {
  const state = stateOf(ctx);
  let finish!: () => void;
  const entry: Entry = { seq: ++state.seq, irreversible, finished: false, done: new Promise<void>((resolve) => (finish = resolve)) };
  state.entries.push(entry);
  const blockers = () => state.entries.filter((other) => other !== entry && !other.finished && other.seq < entry.seq && (irreversible || other.irreversible));
  const run = async () => {
    for (let waiting = blockers(); waiting.length > 0; waiting = blockers()) await Promise.all(waiting.map((other) => other.done));
    return fn();
  };
  return run().finally(() => {
    entry.finished = true;
    state.entries = state.entries.filter((other) => other !== entry);
    finish();
  });
}
