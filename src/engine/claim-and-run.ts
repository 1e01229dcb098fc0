/**
 * The claim behind continue, compensate and a worker's pick: read the run, check it, claim its
 * lease (refusing in DESIGN's order) and run one attempt. Kept apart from the engine because of
 * the wait it may do: a holder judged by its lease alone is watched until the lease goes
 * unrenewed (RUN_BUSY, looked at again), up to MAX_CLAIM_WAIT_MS.
 */

import { RunBusyError, RunNotFoundError } from "../base/errors.js";
import { decideClaim, decideWhileWriting, type ClaimRequest } from "../ownership/claim.js";
import { judgeOwner } from "../ownership/owner.js";
import { watchLease } from "../ownership/lease-watch.js";
import { isLiveHere, markDone, markLive, type LiveToken } from "../ownership/live-attempts.js";
import { Attempt, type AttemptPlan, type RunResult } from "../steps/attempt.js";
import { NO_KEYS } from "../steps/state.js";
import type { EngineSettings } from "../steps/attempt-settings.js";
import type { RuntimeStore } from "../store/runtime.js";
import type { FlowQuery, RunRow, RunStatus, Store, StoredRun } from "../store/types.js";
import type { Workflow } from "../workflow/define-workflow.js";
import { consentOf } from "./continue-options.js";
import type { ContinueOptions } from "./api.js";
import { checkArgs, unopenable } from "./run-checks.js";
import { attemptLabels } from "./load-tracing.js";
import type { AttemptTrace } from "../steps/step-spans.js";

/** The longest a continue waits to see a lease go unrenewed (a longer lease is refused at once: RUN_BUSY says why). */
const MAX_CLAIM_WAIT_MS = 120_000;

/** What a claim needs of its engine. */
export interface ClaimContext {
  store: RuntimeStore;
  settings: EngineSettings;
  /** The registered workflow of that name (WORKFLOW_NOT_REGISTERED if none). */
  workflow: (name: string, runId: string) => Workflow;
  /** The store's storage as this process's live attempts are keyed. */
  where: () => Promise<string>;
  /** Run the claimed attempt as one of the engine's running attempts. */
  runAttempt: (attempt: Attempt, args: unknown) => Promise<RunResult>;
}

/** Wait `ms`, or less if `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Claim the run's lease (refusing in DESIGN's order) and run one attempt in `mode`. */
export async function claimAndRun(
  ctx: ClaimContext,
  id: string,
  mode: "run" | "compensate",
  options: ContinueOptions,
  deadline: number | undefined,
  requireReady = false,
): Promise<RunResult> {
  // Only the run row is needed here: the claim reads the whole run in its own transaction.
  const before = await ctx.store.loadRunRow(id);
  if (!before) throw new RunNotFoundError(id, ctx.store.location);
  const workflow = ctx.workflow(before.workflow, id);
  // Args never change after the start, so they are checked before the claim; the verdict is
  // applied inside it, after the refusals that come first.
  const args = await checkArgs(workflow, await ctx.settings.payloads.decode(before.args));
  const now = ctx.settings.clock.now();
  let statusBefore: RunStatus | undefined;
  /** The attempt's deadline: the one given, else the run's own (kept across attempts and parks), except after a time-out. */
  let attemptDeadline = deadline;
  let live: LiveToken | undefined;
  const where = await ctx.where();
  const flowLimits = flowLimitsOf(before, workflow, where);
  // Traced: the caller's context, read here (a store may ask `decide` from another one).
  const tracing = ctx.settings.tracing;
  const caller = tracing?.active();
  let trace: AttemptTrace | undefined;
  const decide = (current: StoredRun, seen?: { whileWriting: true }) => {
    if (seen?.whileWriting) return decideWhileWriting(current);
    statusBefore = current.run.status;
    // A record this engine cannot open would fail the attempt part-way, counting it (a worker
    // missing a key after a rotation would dead-letter the run): refused here, nothing counted.
    const sealed = unopenable(current, ctx.settings.payloads, ctx.store.location);
    if (sealed) return { kind: "refuse" as const, error: sealed };
    // A store may decide again after a lost connection: this claim's own mark from the try
    // before must not count as another attempt in this process holding the run.
    if (live) markDone(live);
    live = undefined;
    attemptDeadline = deadline ?? (current.run.status === "timed-out" ? undefined : (current.run.deadline ?? undefined));
    const decision = decideClaim(current, {
      mode,
      workflow,
      fromStep: options.fromStep,
      consent: consentOf(id, options),
      force: options.force === true,
      deadline: attemptDeadline,
      args,
      now,
      leaseMs: ctx.settings.leaseMs,
      owners: { isHeldHere: () => isLiveHere(where, id), watch: (lease) => watchLease(where, lease) },
      requireReady,
      ...(flowLimits ? { flow: flowLimits } : {}),
    });
    // Marked live inside the claim's transaction: between its commit and the attempt's start,
    // another claim in this process must already see the run held.
    if (decision.kind !== "take") return decision;
    live = markLive(where, id);
    if (!tracing) return decision;
    // The span begins as the lease is taken, in the run's trace if it has one (asked again, the
    // span begun before is dropped unended). A run without one records this attempt's, in the
    // claim's own write: no write of its own.
    const stored = current.run.traceContext;
    trace = tracing.beginAttempt(attemptLabels(workflow, id, decision.attempt.number, mode, options.fromStep), stored, caller!);
    if (stored == null && trace.traceparent !== null) return { ...decision, run: { ...decision.run, traceContext: trace.traceparent } };
    return decision;
  };
  let claimed: Awaited<ReturnType<Store["claimRun"]>>;
  const flowQuery = flowQueryOf(before, workflow, now);
  // A holder judged by its lease alone counts as gone only once this process has watched the
  // lease go unrenewed for a full period: a continue waits until then, looking again every
  // second, and is refused as soon as the lease is renewed (its holder is alive). A worker does
  // not wait: it looks again at its next poll.
  let decidedBy: number | undefined;
  for (;;) {
    try {
      claimed = await ctx.store.claimRun(id, decide, flowQuery);
      break;
    } catch (error) {
      if (live) markDone(live);
      live = undefined;
      const wait = error instanceof RunBusyError ? error.decidedInMs : undefined;
      if (requireReady || wait === undefined || wait > MAX_CLAIM_WAIT_MS || options.signal?.aborted) throw error;
      const at = performance.now();
      // Renewed while watched: the deadline moved on.
      if (decidedBy !== undefined && at + wait > decidedBy + 250) throw error;
      if (decidedBy === undefined) {
        decidedBy = at + wait;
        ctx.settings.onProgress?.({ type: "claim-waiting", runId: id, holder: (error as RunBusyError).holder, waitMs: wait });
      }
      await pause(Math.min(wait + 25, 1000), options.signal);
    }
  }
  if (claimed.kind === "missing") throw new RunNotFoundError(id, ctx.store.location);
  const plan: AttemptPlan = {
    mode,
    fromStep: options.fromStep,
    values: options.values,
    redo: options.redo?.length ? new Set(options.redo) : NO_KEYS,
    reuse: options.reuse?.length ? new Set(options.reuse) : NO_KEYS,
    // A run that has ever parked reuses its succeeded steps whatever the version: a deploy
    // while a run waits is normal.
    ignoreVersion: claimed.state.attempts.some((a) => a.ending === "waiting"),
    deadline: attemptDeadline,
    signal: options.signal,
    ...(statusBefore === undefined ? {} : { statusBefore }),
  };
  return ctx.runAttempt(new Attempt(ctx.settings, workflow, claimed.state, claimed.lease, plan, live!, trace), (args as { value: unknown }).value);
}

/** What the claim asks the store about the runs sharing this run's flow-control keys (none without limits). */
function flowQueryOf(run: RunRow, workflow: Workflow, now: number): FlowQuery | undefined {
  const { concurrency, rateLimit } = workflow.flow;
  const query: FlowQuery = {};
  if (concurrency && run.concurrencyKey != null) query.concurrencyKey = run.concurrencyKey;
  if (rateLimit && run.rateKey != null) query.rate = { key: run.rateKey, since: now - rateLimit.periodMs };
  return query.concurrencyKey !== undefined || query.rate !== undefined ? query : undefined;
}

/** The limits the claim holds the run to, and how it judges another run's lease holder (as a claim of that run would). */
function flowLimitsOf(run: RunRow, workflow: Workflow, where: string): ClaimRequest["flow"] {
  const { concurrency, rateLimit } = workflow.flow;
  if (!(concurrency && run.concurrencyKey != null) && !(rateLimit && run.rateKey != null)) return undefined;
  return {
    ...(concurrency && run.concurrencyKey != null ? { concurrency: concurrency.limit } : {}),
    ...(rateLimit && run.rateKey != null ? { rate: { limit: rateLimit.limit, periodMs: rateLimit.periodMs } } : {}),
    holderGone: ({ lease, attempt }) =>
      judgeOwner(attempt, lease, { isHeldHere: () => isLiveHere(where, lease.runId), watch: (l) => watchLease(where, l) }).gone,
  };
}
