/**
 * The WorkflowContext an attempt hands the workflow's code (its type is workflow/context.ts):
 * each member is the attempt's state and one protocol (ctx.step → step-runner.ts, waits →
 * waits.ts, children → child-calls.ts, ctx.stop → the attempt's ending).
 */

import type { StepFunction, StepOptions, StreamWriter, WorkflowContext } from "../workflow/context.js";
import { AttemptStreams } from "./streams.js";
import { IN_SIBLING_WINDOW } from "./launched-beside.js";
import { RECORDED_STEPS, recordedSteps, type RecordedStep } from "./recorded-steps.js";
import { runStep } from "./step-runner.js";
import { failedStepOf, StopRequest, type AttemptState } from "./state.js";
import { newCall, NO_OPTIONS } from "./step-call.js";
import { sleep, waitForEvent } from "./waits.js";
import { child, startChild } from "./child-calls.js";
import type { Workflow } from "../workflow/define-workflow.js";

export function contextFor(state: AttemptState): WorkflowContext {
  return new AttemptContext(state) as unknown as WorkflowContext;
}

/**
 * A class, not an object literal: `signal` is a getter (the attempt's controller is made when
 * first asked for, state.ts), and V8 keeps a literal with an accessor as a dictionary. The
 * methods are own closures over the attempt, so `const { step } = ctx` keeps working.
 */
class AttemptContext {
  readonly runId: string;
  readonly attempt: number;
  readonly step: (name: string, optionsOrFn: StepOptions | StepFunction<unknown>, maybeFn?: StepFunction<unknown>) => Promise<unknown>;
  readonly waitForEvent: (name: string, options?: { schema?: never; timeoutMs?: number }) => Promise<unknown>;
  readonly child: (name: string, workflow: Workflow, args: unknown, options?: { id?: string }) => Promise<unknown>;
  readonly startChild: (name: string, workflow: Workflow, args: unknown, options?: { id?: string }) => ReturnType<typeof startChild>;
  readonly sleep: (name: string, msOrDate: number | Date) => Promise<void>;
  readonly stop: (reason: string) => never;
  readonly stream: (name: string) => StreamWriter;
  readonly [IN_SIBLING_WINDOW]: () => number | undefined;
  readonly [RECORDED_STEPS]: (prefix: string) => RecordedStep[];
  readonly #state: AttemptState;

  constructor(state: AttemptState) {
    this.runId = state.runId;
    this.attempt = state.number;
    this.#state = state;
    this.step = (name, optionsOrFn, maybeFn) => {
      const call =
        typeof optionsOrFn === "function" ? newCall("step", name, NO_OPTIONS, optionsOrFn) : newCall("step", name, optionsOrFn ?? NO_OPTIONS, maybeFn!);
      // Watched: a failure nothing observes (a forgotten `await`) must not let the attempt end completed.
      return state.watched.watch(runStep(state, call), name, failedStepOf);
    };
    this.waitForEvent = (name, options) => waitForEvent(state, name, options);
    this.child = (name, workflow, args, options) => child(state, name, workflow, args, options);
    this.startChild = (name, workflow, args, options) => startChild(state, name, workflow, args, options);
    this.sleep = (name, msOrDate) => sleep(state, name, msOrDate);
    this.stop = (reason) => {
      state.ending.endWith("stopped", state.stopError(String(reason)));
      throw new StopRequest(String(reason));
    };
    let streams: AttemptStreams | undefined;
    this.stream = (name) => (streams ??= state.streams = new AttemptStreams(state)).open(name);
    this[IN_SIBLING_WINDOW] = () => (state.order.siblingsOf !== undefined ? state.order.newestReused : undefined);
    this[RECORDED_STEPS] = (prefix) => recordedSteps(state, prefix);
  }

  /** Made when first read: most workflows never look at it. */
  get signal(): AbortSignal {
    return this.#state.ending.signal;
  }
}
