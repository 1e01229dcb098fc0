/**
 * Whether a continue may take a run, decided inside the store's transaction from what the
 * store holds right then. Refusals come in a fixed order: RUN_BUSY, then RUN_COMPLETED /
 * DEAD_LETTERED / RUN_ESCALATED, then STEP_NOT_FOUND, then ARGS_REJECTED. (RUN_NOT_FOUND is
 * the store finding nothing.) A refusal counts no attempt.
 */

import type { Workflow } from "../workflow/define-workflow.js";
import {
  ArgsRejectedError,
  DeadLetteredError,
  FlowLimitedError,
  InvalidOptionError,
  PastPivotError,
  RunBusyError,
  RunCompletedError,
  RunEscalatedError,
  StepNotFoundError,
} from "../base/errors.js";
import { currentOwner, judgeOwner, type OwnerJudge } from "./owner.js";
import type { Validation } from "../workflow/value-schemas.js";
import type { AttemptRow, ClaimDecision, Consent, LeaseRow, RunPatch, StoredRun } from "../store/types.js";
import { latestRows } from "../store/latest-rows.js";

export interface ClaimRequest {
  /** "compensate": the saga takes the lease like a continue but counts no attempt. */
  mode: "run" | "compensate";
  workflow: Workflow;
  fromStep: string | undefined;
  /** continue's redo and reuse (each must name a recorded step); recorded on the attempt. */
  consent?: Consent | undefined;
  force: boolean;
  deadline: number | undefined;
  args: Validation<unknown>;
  now: number;
  leaseMs: number;
  /** Judges the holder of a live lease (owner.ts) from this process. */
  owners: OwnerJudge;
  /** A worker's claim: take the run only if it is ready (due, or interrupted with autoResume). */
  requireReady?: boolean;
  /**
   * The run's flow-control limits, judged on what the store read in the claim's transaction
   * (`current.flow`, asked for with a FlowQuery): at most `concurrency` other holders of its
   * concurrency key whose owner is not gone, at most `rate` attempts started in the window.
   */
  flow?: {
    concurrency?: number;
    rate?: { limit: number; periodMs: number };
    /** Whether another run's lease holder is gone (owner.ts), judged from this process. */
    holderGone: (holder: { lease: LeaseRow; attempt: AttemptRow }) => boolean;
  };
}

/** A worker's claim found the run not ready (another worker took it, or it is not due). */
export class NotReady extends Error {
  override name = "NotReady";
}

/**
 * A claim's answer to a snapshot read while another transaction writes the run (ClaimJudge's
 * `whileWriting`): a lease holder writing right now is alive, so the claim is refused; with no
 * holder (a command updating the run) the store waits for the lock and asks again.
 */
export function decideWhileWriting(current: StoredRun): ClaimDecision {
  const { lease } = current;
  const holder = lease && lease.attempt !== null ? current.attempts.find((a) => a.number === lease.attempt) : undefined;
  if (!lease || !holder) return { kind: "wait" };
  return {
    kind: "refuse",
    error: new RunBusyError(current.run.id, { attempt: holder.number, host: holder.host, pid: holder.pid, expiresAt: lease.expiresAt }),
  };
}

export function decideClaim(current: StoredRun, request: ClaimRequest): ClaimDecision {
  const { run, lease, steps } = current;
  const refuse = (error: Error, patch?: RunPatch): ClaimDecision => (patch ? { kind: "refuse", error, run: patch } : { kind: "refuse", error });

  if (lease && lease.attempt !== null) {
    const holder = current.attempts.find((a) => a.number === lease.attempt);
    if (holder) {
      const verdict = judgeOwner(holder, lease, request.owners);
      if (!verdict.gone) {
        return refuse(new RunBusyError(run.id, { attempt: holder.number, host: holder.host, pid: holder.pid, expiresAt: lease.expiresAt }, verdict));
      }
    }
  }

  if (request.requireReady) {
    const due = run.status === "waiting" && run.wakeAt !== null && run.wakeAt <= request.now;
    const resumable = (run.status === "interrupted" || run.status === "running") && request.workflow.autoResume;
    if (!due && !resumable) return refuse(new NotReady(`run ${run.id} is ${run.status}, not ready`));
  }

  const lastStep = steps.at(-1)?.key;
  const saga = request.mode === "compensate";
  // A step named in redo is a start point of its own, as fromStep is.
  const redoes = request.fromStep !== undefined || (request.consent?.redo.length ?? 0) > 0;
  if (run.status === "completed" && !redoes && !saga) return refuse(new RunCompletedError(run.id, firstStep(current)));
  // An escalation not yet resolved refuses a continue, whatever the run's status says (say, after
  // a cancel): only engine.resolve settles it.
  const [escalated] = latestRows(steps, (row) => row.status === "escalated");
  if (run.status === "escalated" || (escalated && !saga)) {
    return refuse(new RunEscalatedError(run.id, escalated?.key ?? lastStep ?? "?"));
  }
  if (saga) {
    // Past the pivot once an irreversible step ever succeeded (a failed redo does not undo it),
    // or while one may have happened (cut off, or escalated and unresolved).
    const done = steps.find((row) => row.effect === "irreversible" && row.status === "succeeded");
    if (done) return refuse(new PastPivotError(run.id, done.key));
    const [unknown] = latestRows(steps, (row) => row.effect === "irreversible" && (row.status === "intended" || row.status === "escalated"));
    if (unknown) return refuse(new PastPivotError(run.id, unknown.key, true));
  }
  const max = request.workflow.maxAttempts;
  if (!saga && !request.force && (run.status === "dead-lettered" || (run.status !== "completed" && run.budgetUsed >= max))) {
    const error = new DeadLetteredError(run.id, run.budgetUsed, max, lastStep);
    return run.status === "dead-lettered" ? refuse(error) : refuse(error, { status: "dead-lettered", updatedAt: request.now });
  }

  if (request.fromStep !== undefined && !steps.some((s) => s.key === request.fromStep)) {
    return refuse(new StepNotFoundError(run.id, request.fromStep, [...new Set(steps.map((s) => s.key))], "fromStep"));
  }
  for (const [what, keys] of Object.entries(request.consent ?? {}) as Array<[keyof Consent, string[]]>) {
    const unknown = keys.find((key) => !steps.some((s) => s.key === key));
    if (unknown !== undefined) return refuse(new StepNotFoundError(run.id, unknown, [...new Set(steps.map((s) => s.key))], what));
  }
  if (!request.args.ok) return refuse(new ArgsRejectedError(run.id, run.workflow, request.args.issues, true));
  const limited = flowRefusal(current, request);
  if (limited) return refuse(limited);

  const number = run.attempts + 1;
  const owner = currentOwner();
  return {
    kind: "take",
    now: request.now,
    expiresAt: request.now + request.leaseMs,
    attempt: {
      runId: run.id,
      number,
      ...owner,
      startedAt: request.now,
      endedAt: null,
      ending: null,
      fromStep: request.fromStep ?? null,
      forced: request.force,
      error: null,
      ...(request.consent ? { consent: request.consent } : {}),
    },
    run: {
      status: "running",
      attempts: number,
      // Counted when the lease is taken, before any user code runs; refunded by a normal ending.
      budgetUsed: saga ? run.budgetUsed : request.force ? 1 : run.budgetUsed + 1,
      deadline: request.deadline ?? null,
      value: null,
      error: null,
      waitingFor: null,
      wakeAt: null,
      updatedAt: request.now,
    },
  };
}

/** The refusal when the run's flow-control limits leave it no turn now (its keys were read under the store's lock). */
function flowRefusal(current: StoredRun, request: ClaimRequest): Error | undefined {
  const { flow } = request;
  const { run } = current;
  if (!flow || (flow.concurrency === undefined && flow.rate === undefined)) return undefined;
  const facts = current.flow;
  if (!facts)
    return new InvalidOptionError(
      `Run ${JSON.stringify(run.id)}: the store did not answer the claim's flow query, so its limits cannot be held; nothing was started.`,
      { runId: run.id },
    );
  if (flow.concurrency !== undefined && run.concurrencyKey != null) {
    const live = facts.holders.filter((holder) => !flow.holderGone(holder));
    if (live.length >= flow.concurrency) {
      return new FlowLimitedError(run.id, { kind: "concurrency", key: run.concurrencyKey, running: live.map((h) => h.lease.runId), max: flow.concurrency });
    }
  }
  if (flow.rate !== undefined && run.rateKey != null && facts.started >= flow.rate.limit) {
    return new FlowLimitedError(run.id, { kind: "rate", key: run.rateKey, started: facts.started, max: flow.rate.limit, periodMs: flow.rate.periodMs });
  }
  return undefined;
}

function firstStep(current: StoredRun): string | undefined {
  return current.steps[0]?.key;
}
