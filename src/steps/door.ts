/**
 * The one door every call the workflow makes comes in by (a step, a wait, a sleep, a child; a
 * saga's replay of any of them): it gives the call its key and its position in the attempt's
 * call order, reads the key's record, and asks the planner (plan.ts) what to do with it. The
 * caller carries the decision out: steps in step-runner.ts, waits in waits.ts.
 */

import { LAUNCHED_BESIDE_START } from "./launched-beside.js";
import { planStep, type Plan } from "./plan.js";
import type { AttemptState } from "./state.js";
import type { StepCall } from "./step-call.js";
import { checkOptions } from "./step-options.js";
import { takeInput } from "./step-input.js";

/**
 * Enter `call`: its key, position and record set on it, the plan's decision returned. The start
 * point and the closing of the sibling window take effect here; opening the window is the
 * caller's (it lasts until the start point's step settles).
 */
export function enter(state: AttemptState, call: StepCall): Plan {
  state.ending.assertRunning();
  const { kind, name, options } = call;
  // A step's options are checked before it counts (a wait checks its own before it comes to the door).
  if (kind === "step") checkOptions(state, call);
  const order = state.order;
  // A call's name becomes its step key (name#2 for repeats), so it follows the step-name rule (nextKey checks it).
  const key = order.nextKey(name);
  call.key = key;
  call.position = order.enter(key);
  state.hooks?.onEnter?.(key, name);
  const record = order.latestRow(key);
  call.record = record;
  const launched = (options as Record<symbol, unknown>)[LAUNCHED_BESIDE_START];
  // A step's input, encoded and compared with its record's (none for a step without one).
  const inputChange = options.input === undefined ? undefined : takeInput(state, call);
  const plan = planStep(order, { kind, key, record, effect: options.effect, launchedBeside: typeof launched === "number" ? launched : undefined, inputChange });
  order.follow(plan);
  return plan;
}
