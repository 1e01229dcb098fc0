/**
 * The WorkflowContext an attempt hands the workflow's code: each member is the attempt's state
 * and one protocol (ctx.step → step-runner.ts, waits → waits.ts, ctx.stop → the state's stop).
 */

import type { StepFunction, StepOptions, WorkflowContext } from "../workflow/context.js";
import { IN_SIBLING_WINDOW } from "./launched-beside.js";
import { runStep } from "./step-runner.js";
import { failedStepOf, NO_OPTIONS, StopRequest, type AttemptState, type StepCall } from "./state.js";
import { sleep, waitForEvent } from "./waits.js";
import { child, startChild } from "./children.js";
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
  readonly [IN_SIBLING_WINDOW]: () => number | undefined;
  readonly #state: AttemptState;

  constructor(state: AttemptState) {
    this.runId = state.runId;
    this.attempt = state.number;
    this.#state = state;
    this.step = (name, optionsOrFn, maybeFn) => {
      // Every field set here, in one order: each step's call has the same shape (its position and span are filled in later).
      const call: StepCall =
        typeof optionsOrFn === "function"
          ? { name, options: NO_OPTIONS, fn: optionsOrFn, position: undefined, span: undefined }
          : { name, options: optionsOrFn ?? NO_OPTIONS, fn: maybeFn!, position: undefined, span: undefined };
      // Watched: a failure nothing observes (a forgotten `await`) must not let the attempt end completed.
      return state.watched.watch(runStep(state, call), name, failedStepOf);
    };
    this.waitForEvent = (name, options) => waitForEvent(state, name, options);
    this.child = (name, workflow, args, options) => child(state, name, workflow, args, options);
    this.startChild = (name, workflow, args, options) => startChild(state, name, workflow, args, options);
    this.sleep = (name, msOrDate) => sleep(state, name, msOrDate);
    this.stop = (reason) => {
      state.endWith("stopped", state.stopError(String(reason)));
      throw new StopRequest(String(reason));
    };
    this[IN_SIBLING_WINDOW] = () => (state.siblingsOf !== undefined ? state.newestReused : undefined);
  }

  /** Made when first read: most workflows never look at it. */
  get signal(): AbortSignal {
    return this.#state.signal;
  }
}
