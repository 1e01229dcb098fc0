/**
 * The engine's side of child runs (the step protocol's side is steps/children.ts): starting a
 * child or attaching to it, running its attempt here, and waking a parent when its child ends.
 *
 * A parent waiting for a child is parked like a run waiting for an event. It is woken, by setting
 * its wakeAt, by whoever sees the child end:
 * - the child's own attempt, right after its ending commits (ended());
 * - the parent's attempt, right after it parks, in case the child ended while it was parking
 *   (parked()): between the two, one of them sees the other's commit, so no wake is lost;
 * - a cancel of the child (engine.cancel calls ended() too);
 * - every worker, when it starts and then now and again (wakeParentsOfEnded()): a process
 *   killed between a child's ending and its wake-up leaves a parked parent whose child has ended,
 *   and this finds it.
 * A wake-up is only ever early, never wrong: a parent woken for nothing parks again.
 * A parent waits for its child's attempt here only while its own attempt goes on: a cancel or
 * deadline of the parent ends it at once, and a cancel with its children then ends the child.
 */

import { RunExistsError, isSteplogError } from "../base/errors.js";
import { derivedStatus, type Judge } from "../operations/views.js";
import type { Payloads } from "../payloads/payloads.js";
import type { RunResult } from "../steps/attempt.js";
import { ENDED_STATUSES } from "../store/types.js";
import type { ChildHost, ChildRequest, ChildState } from "../steps/attempt-settings.js";
import type { RuntimeStore } from "../store/runtime.js";
import type { RunRow } from "../store/types.js";
import type { Workflow } from "../workflow/define-workflow.js";
import { parseWaitingFor } from "../workflow/step-resolution.js";
import { checkSameRun } from "./attach.js";

/** What the child runs need of their engine. */
export interface ChildContext {
  store: RuntimeStore;
  payloads: Payloads;
  now(): number;
  judge(): Promise<Judge>;
  /** Make the workflow known to the engine (a continue of the child needs it). */
  register(workflow: Workflow): void;
  /** Create the run with its parent and start its attempt here; undefined when the id is taken. */
  create(
    workflow: Workflow,
    args: unknown,
    id: string,
    parent: string,
    source: string | null,
    budget: string | undefined,
  ): Promise<{ done: Promise<RunResult> } | undefined>;
  /** The attempt of this run that this engine is running, if it is running one. */
  runningHere(id: string): Promise<RunResult> | undefined;
  /** engine.continue(id). */
  continue(id: string): Promise<RunResult>;
  /** Wake this process's workers. */
  wake(): void;
}

/** Refusals of a continue of a child that mean "it is not ours to run now": look at it again. */
const LOOK_AGAIN = ["RUN_BUSY", "RUN_ESCALATED", "DEAD_LETTERED", "RUN_COMPLETED"] as const;

/** At most this many looks per request (each after a start or a continue here): never a spin. */
const MAX_LOOKS = 4;

/**
 * Whether the child's attempt running here settled (true; its rejection is thrown) before the
 * parent's attempt ended (false, as soon as its signal aborts): a cancel or a deadline of the
 * parent ends it at once, not when the child ends. The child goes on (a cascade cancels it).
 */
async function whileParentRuns(attempt: Promise<unknown>, parent: AbortSignal): Promise<boolean> {
  attempt.catch(() => {}); // no longer waited for once the parent has ended
  if (parent.aborted) return false;
  let onAbort!: () => void;
  const ended = new Promise<false>((resolve) => {
    onAbort = () => resolve(false);
    parent.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([attempt.then(() => true as const), ended]);
  } finally {
    parent.removeEventListener("abort", onAbort);
  }
}

export class ChildRuns implements ChildHost {
  constructor(private readonly ctx: ChildContext) {}

  async run(request: ChildRequest): Promise<ChildState> {
    const { ctx } = this;
    const { id, workflow } = request;
    const pending = (status: ChildState["status"]): ChildState => ({ ended: false, status, workflow: workflow.name });
    let argsPlain: string | undefined;
    let ranHere = false;
    for (let look = 0; look < MAX_LOOKS; look++) {
      // The parent's attempt has ended: it starts or continues no child it would not wait for (its continue will).
      if (request.wait && request.signal.aborted) return pending("running");
      const row = await ctx.store.loadRunRow(id);
      if (!row) {
        ctx.register(workflow);
        const made = await ctx.create(workflow, request.args, id, request.parent, request.source, request.budget);
        if (!made) continue; // created meanwhile by another attempt of the parent: look again
        if (!request.wait) {
          made.done.catch(() => {});
          return pending("running");
        }
        if (!(await whileParentRuns(made.done, request.signal))) return pending("running");
        ranHere = true;
        continue;
      }
      if (row.parent !== request.parent) throw new RunExistsError(id, row.status, { what: "parent", recorded: row.parent, given: request.parent });
      argsPlain ??= (await ctx.payloads.encode(request.args, `The args of child run ${JSON.stringify(id)}`, { runId: id })).plain;
      await checkSameRun(row, workflow.name, argsPlain, ctx.payloads);
      ctx.register(workflow);
      const local = ctx.runningHere(id);
      if (local) {
        if (!request.wait) return pending("running");
        if (!(await whileParentRuns(local, request.signal))) return pending("running");
        ranHere = true;
        continue;
      }
      const status = await this.#status(row);
      if (status === "completed")
        return { ended: true, status, workflow: workflow.name, value: row.value === null ? undefined : await ctx.payloads.decode(row.value) };
      const goesOn = status === "interrupted" || status === "ready" || (ENDED_STATUSES.includes(status) && request.continueIf(status));
      if (ENDED_STATUSES.includes(status) && !(goesOn && !ranHere)) {
        return { ended: true, status, workflow: workflow.name, error: await this.#errorOf(row) };
      }
      if (!goesOn || ranHere) return pending(status);
      ranHere = true;
      const continued = ctx.continue(id);
      if (!request.wait) {
        continued.catch(() => {});
        return pending(status);
      }
      try {
        if (!(await whileParentRuns(continued, request.signal))) return pending("running");
      } catch (error) {
        if (!LOOK_AGAIN.some((code) => isSteplogError(error, code))) throw error;
      }
    }
    return pending("running");
  }

  async ended(parent: string, child: string): Promise<void> {
    await this.#wake(parent, child);
  }

  async parked(runId: string, child: string): Promise<void> {
    const row = await this.ctx.store.loadRunRow(child);
    if (row && ENDED_STATUSES.includes(row.status)) await this.#wake(runId, child);
  }

  /**
   * Every parked parent (of these workflows) whose child has ended, woken: what a process killed
   * between a child's ending and its parent's wake-up left behind.
   */
  async wakeParentsOfEnded(workflows: string[]): Promise<void> {
    for (const workflow of workflows) {
      for (const listing of await this.ctx.store.listRuns({ status: ["waiting"], workflow, waitingKind: "child" })) {
        const waiting = parseWaitingFor(listing.run.waitingFor);
        if (waiting?.kind !== "child" || waiting.child === undefined) continue;
        if (listing.run.wakeAt !== null && listing.run.wakeAt <= this.ctx.now()) continue; // due already
        await this.parked(listing.run.id, waiting.child);
      }
    }
  }

  /** The run's status as engine.get derives it (`interrupted` when its owner is gone). */
  async #status(row: RunRow): Promise<RunRow["status"]> {
    if (row.status !== "running") return row.status;
    const stored = await this.ctx.store.loadRun(row.id);
    if (!stored) return row.status;
    const holder = stored.lease?.attempt == null ? undefined : stored.attempts.find((a) => a.number === stored.lease!.attempt);
    return derivedStatus(stored.run, stored.lease, holder ?? stored.attempts.at(-1), await this.ctx.judge());
  }

  async #errorOf(row: RunRow) {
    if (row.error !== null) return this.ctx.payloads.decodeError(row.error);
    return undefined;
  }

  /** Set the parent due now, if it is parked waiting for this child. */
  async #wake(parent: string, child: string): Promise<void> {
    const now = this.ctx.now();
    const woken = await this.ctx.store.updateRun(parent, (current) => {
      const waiting = parseWaitingFor(current.run.waitingFor);
      const parkedOnIt = current.run.status === "waiting" && waiting?.kind === "child" && waiting.child === child;
      if (!parkedOnIt || (current.run.wakeAt !== null && current.run.wakeAt <= now)) return { result: false };
      return { run: { wakeAt: now, updatedAt: now }, result: true };
    });
    if (woken) this.ctx.wake();
  }
}
