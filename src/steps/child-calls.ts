/**
 * Child runs: ctx.child(name, workflow, args) and ctx.startChild(...). A child is a run of its
 * own (its own steps, lease and attempts) whose id is recorded in the parent's step log before
 * the child is started, so a continue of the parent finds the same child, never a second one.
 *
 * The parent's row for a child is a wait (waits.ts) that records the child's id: it is written
 * intended, then the engine (engine/child-runs.ts, through settings.children) starts the child or
 * attaches to it and runs its attempt here. When the child has ended the row is settled with
 * its value, or failed with CHILD_FAILED (thrown into the workflow's code); while the child
 * waits or runs elsewhere the parent parks like a waitForEvent, and is woken when it ends.
 *
 * ctx.startChild writes the same kind of row, settled as soon as the child exists (its value is
 * the child's id); the handle's result() is then a child wait of its own (`<name>.result`).
 */

import { ChildFailedError, InvalidOptionError, type ErrorInfo } from "../base/errors.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";
import { rebuildError } from "../base/errors.js";
import { fault } from "../base/faults.js";
import { isWorkflow, type Workflow } from "../workflow/define-workflow.js";
import { checkName, MAX_NAME_LENGTH } from "../workflow/names.js";
import type { RunStatus } from "../store/types.js";
import type { ChildHandle, ChildOptions } from "../workflow/context.js";
import type { ChildState } from "./attempt-settings.js";
import type { AttemptState } from "./state.js";
import { newWaitCall } from "./step-call.js";
import { formatBudget } from "../workflow/budgets.js";
import { enterWait, failWait, park, settleWait, waitOf } from "./waits.js";

const CHILD_KEYS: KnownKeys<ChildOptions> = { id: true, budget: true };

/** A child that ended otherwise is continued when the parent's step is redone after failing. */
const CONTINUABLE: readonly RunStatus[] = ["failed", "stopped", "timed-out", "cancelled"];

/** The id of a child run by default: its parent's id and the parent's step key. */
export function defaultChildId(runId: string, key: string): string {
  return `${runId}/${key}`;
}

function checkChildCall(state: AttemptState, what: string, name: string, workflow: unknown, options: unknown): ChildOptions {
  const where = `Run ${JSON.stringify(state.runId)}, ${what} ${JSON.stringify(name)}`;
  if (!isWorkflow(workflow)) {
    throw new InvalidOptionError(`${where}: the second argument must be a workflow made with defineWorkflow(...).`, { runId: state.runId });
  }
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new InvalidOptionError(`${where}: options must be an object such as { id: "child-1" }.`, { runId: state.runId });
  }
  checkKnownKeys(where, options ?? {}, CHILD_KEYS, { runId: state.runId });
  const id = (options as ChildOptions | undefined)?.id;
  if (id !== undefined) checkName("run id", id);
  if (!state.settings.children) {
    throw new InvalidOptionError(`${where}: this engine cannot start child runs.`, { runId: state.runId });
  }
  const budget = (options as ChildOptions | undefined)?.budget;
  if (budget !== undefined) {
    if (budget !== "parent")
      throw new InvalidOptionError(`${where}: budget must be "parent" (the child draws on this run's budget) or left out.`, { runId: state.runId });
    if (state.budget === undefined) {
      throw new InvalidOptionError(
        `${where}: budget "parent" asks the child to draw on this run's budget, but run ${JSON.stringify(state.runId)} has none. Give the run a budget (defineWorkflow or start's budget), or leave the option out.`,
        { runId: state.runId },
      );
    }
    // Its children's spend reaches the budget's row as they go: this run reads it before each step.
    state.budget.shared = true;
  }
  return { ...(id === undefined ? {} : { id }), ...(budget === undefined ? {} : { budget }) };
}

/** The budget a child started with `budget: "parent"` is stored with: the run whose budget this one's is. */
function childBudget(state: AttemptState, given: ChildOptions): string | undefined {
  return given.budget === "parent" ? formatBudget({ parent: state.budget!.owner }) : undefined;
}

/** The id the row records: the one given, else the default, which must fit the name rule. */
function childIdFor(state: AttemptState, key: string, given: string | undefined): string {
  if (given !== undefined) return given;
  const id = defaultChildId(state.runId, key);
  if (id.length > MAX_NAME_LENGTH) {
    throw new InvalidOptionError(
      `Run ${JSON.stringify(state.runId)}, step ${JSON.stringify(key)}: the child run's default id "${id.slice(0, 40)}…" is longer than ${MAX_NAME_LENGTH} characters; give one: ctx.child(name, workflow, args, { id }).`,
      { runId: state.runId, step: key },
    );
  }
  return id;
}

/** ctx.child: start (or find) the child, wait for it, and return its value. */
export async function child(state: AttemptState, name: string, workflow: Workflow, args: unknown, options?: ChildOptions): Promise<unknown> {
  const given = checkChildCall(state, "child", name, workflow, options);
  return waitForChild(state, { name, workflow, args, idFor: (key) => childIdFor(state, key, given.id), budget: childBudget(state, given) });
}

/** ctx.startChild: start (or find) the child and return a handle at once. */
export async function startChild(state: AttemptState, name: string, workflow: Workflow, args: unknown, options?: ChildOptions): Promise<ChildHandle> {
  const given = checkChildCall(state, "startChild", name, workflow, options);
  const entered = await enterWait(
    state,
    newWaitCall("child", name),
    () => undefined,
    (key) => ({ child: childIdFor(state, key, given.id) }),
  );
  const handle = (runId: string): ChildHandle => ({
    runId,
    result: () => waitForChild(state, { name: `${name}.result`, workflow, args, idFor: () => runId, budget: childBudget(state, given) }),
  });
  if ("reused" in entered) return handle((entered.reused as { runId: string }).runId);
  const { key, row } = entered;
  const id = waitOf(row)!.child!;
  fault("after-intent", key);
  state.inFlight.add(key);
  try {
    await state.settings.children!.run({
      parent: state.runId,
      step: key,
      id,
      workflow,
      args,
      source: state.stored.run.source,
      budget: childBudget(state, given),
      wait: false,
      continueIf: redoing(state, entered),
      signal: state.ending.signal,
    });
    const value = { runId: id };
    const text = await state.payloads.encode(value, `The value of step ${JSON.stringify(key)}`, { runId: state.runId, step: key });
    await settleWait(state, row, { status: "succeeded", value: text.stored, calls: 1 });
    state.ran++;
    state.emit({ type: "step-succeeded", runId: state.runId, step: key, durationMs: state.clock.now() - row.intendedAt });
    return handle(id);
  } catch (error) {
    if (!state.ending.reason) await failWait(state, row, error as Error);
    throw error;
  } finally {
    state.inFlight.delete(key);
    state.ending.checkEarlyEnd();
  }
}

/**
 * Which ended children a (re)entered child step continues rather than takes as its answer: when
 * the step is being redone after it failed, a child that ended otherwise than completed; when the
 * parent was cancelled (say with its children), a cancelled child. Otherwise an ended child is
 * the answer: its failure reaches the parent's code.
 */
function redoing(state: AttemptState, entered: { created: boolean; previous: { status: string } | undefined }): (status: RunStatus) => boolean {
  const redo = entered.created && (entered.previous?.status === "failed" || entered.previous?.status === "stopped");
  const parentCancelled = state.plan.statusBefore === "cancelled";
  return (status) => (redo && CONTINUABLE.includes(status)) || (parentCancelled && status === "cancelled");
}

/**
 * testWorkflow's mock of a child step (by its key or name): called instead of starting the child,
 * its value is the child's value. A throw fails the step as the child's failure would.
 */
async function mockedChild(state: AttemptState, child: { key: string; id: string; workflow: Workflow }, mock: (info: unknown) => unknown): Promise<ChildState> {
  const { key, id, workflow } = child;
  state.hooks?.onCall?.(key, "function");
  const value = await mock({
    runId: state.runId,
    step: key,
    idempotencyKey: `${state.runId}:${key}`,
    attempt: state.number,
    retry: 0,
    signal: state.ending.signal,
    usage: () => {},
    child: id,
  });
  return { ended: true, status: "completed", workflow: workflow.name, value };
}

/** A child wait as the parent's code asks for it: the call's name, the child's workflow and args, and the id its row records (from its key). */
interface ChildWait {
  name: string;
  workflow: Workflow;
  args: unknown;
  idFor: (key: string) => string;
  /** The child's budget as stored, when it draws on the parent's. */
  budget: string | undefined;
}

async function waitForChild(state: AttemptState, childWait: ChildWait): Promise<unknown> {
  const { name, workflow, args, idFor, budget } = childWait;
  const entered = await enterWait(
    state,
    newWaitCall("child", name),
    () => undefined,
    (key) => ({ child: idFor(key) }),
  );
  if ("reused" in entered) return entered.reused;
  const { key, row } = entered;
  const wait = waitOf(row)!;
  const id = wait.child!;
  // The child's id is durable in the parent's log: a crash from here on finds the same child.
  fault("after-intent", key);
  let at: ChildState;
  state.inFlight.add(key);
  try {
    const mock = state.hooks?.override?.(key, name);
    at = mock
      ? await mockedChild(state, { key, id, workflow }, mock)
      : await state.settings.children!.run({
          parent: state.runId,
          step: key,
          id,
          workflow,
          args,
          source: state.stored.run.source,
          budget,
          wait: true,
          continueIf: redoing(state, entered),
          signal: state.ending.signal,
        });
  } catch (error) {
    // Refused (another run has that id, a store error): the step fails with it.
    if (!state.ending.reason) await failWait(state, row, error as Error);
    throw error;
  } finally {
    state.inFlight.delete(key);
    state.ending.checkEarlyEnd();
  }
  // The parent's attempt ended while the child ran (a cancel, its deadline): the row stays open
  // and a continue of the parent takes the child up where it stands.
  state.ending.assertRunning();
  if (!at.ended) return park(state, wait);
  if (at.status === "completed") {
    const value = (at as { value: unknown }).value;
    const text = await state.payloads.encode(value, () => `The value of child run ${JSON.stringify(id)} (step ${JSON.stringify(key)})`, {
      runId: state.runId,
      step: key,
    });
    await settleWait(state, row, { status: "succeeded", value: text.stored, calls: 1 });
    state.ran++;
    state.emit({ type: "step-succeeded", runId: state.runId, step: key, durationMs: state.clock.now() - row.intendedAt });
    return state.payloads.decode(text.stored);
  }
  const childError = (at as { error: ErrorInfo | undefined }).error;
  const failed = new ChildFailedError(
    state.runId,
    key,
    { id, workflow: at.workflow, status: at.status, message: childError?.message },
    childError ? rebuildError(childError, [], { runId: id }) : undefined,
  );
  await failWait(state, row, failed);
  throw failed;
}
