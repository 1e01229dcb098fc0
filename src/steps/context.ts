/**
 * The WorkflowContext an attempt hands the workflow's code: each member is the attempt's state
 * and one protocol (ctx.step → step-runner.ts, waits → waits.ts, ctx.stop → the state's stop).
 */

import type { StepFunction, StepOptions, WorkflowContext } from "../workflow/context.js";
import { IN_SIBLING_WINDOW } from "./launched-beside.js";
import { runStep } from "./step-runner.js";
import { NO_OPTIONS, StopRequest, type AttemptState, type StepCall } from "./state.js";
import { sleep, waitForEvent } from "./waits.js";
import { child, startChild } from "./children.js";
import type { Workflow } from "../workflow/define-workflow.js";

export function contextFor(state: AttemptState): WorkflowContext {
  return {
    runId: state.runId,
    attempt: state.number,
    signal: state.controller.signal,
    step(name: string, optionsOrFn: StepOptions | StepFunction<unknown>, maybeFn?: StepFunction<unknown>) {
      // Every field set here, in one order: each step's call has the same shape (its position and span are filled in later).
      const call: StepCall =
        typeof optionsOrFn === "function"
          ? { name, options: NO_OPTIONS, fn: optionsOrFn, position: undefined, span: undefined }
          : { name, options: optionsOrFn ?? NO_OPTIONS, fn: maybeFn!, position: undefined, span: undefined };
      return runStep(state, call);
    },
    waitForEvent(name: string, options?: { schema?: never; timeoutMs?: number }) {
      return waitForEvent(state, name, options);
    },
    child(name: string, workflow: Workflow, args: unknown, options?: { id?: string }) {
      return child(state, name, workflow, args, options);
    },
    startChild(name: string, workflow: Workflow, args: unknown, options?: { id?: string }) {
      return startChild(state, name, workflow, args, options);
    },
    sleep(name: string, msOrDate: number | Date) {
      return sleep(state, name, msOrDate);
    },
    stop(reason: string): never {
      state.endWith("stopped", state.stopError(String(reason)));
      throw new StopRequest(String(reason));
    },
    [IN_SIBLING_WINDOW]: () => (state.siblingsOf !== undefined ? state.newestReused : undefined),
  } as WorkflowContext;
}
