/**
 * Whether a continue may take a run, decided inside the store's transaction from what the
 * store holds right then. Refusals come in a fixed order: RUN_BUSY, then RUN_COMPLETED /
 * DEAD_LETTERED / RUN_ESCALATED, then STEP_NOT_FOUND, then ARGS_REJECTED. (RUN_NOT_FOUND is
 * the store finding nothing.) A refusal counts no attempt.
 */

import type { Workflow } from "../workflow/define-workflow.js";
import { ArgsRejectedError, DeadLetteredError, PastPivotError, RunBusyError, RunCompletedError, RunEscalatedError, StepNotFoundError } from "../base/errors.js";
import { currentOwner, judgeOwner, type OwnerJudge } from "./owner.js";
import type { Validation } from "../workflow/schema.js";
import type { ClaimDecision, Consent, RunPatch, StoredRun } from "../store/types.js";

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
  const escalated = latestRows(current).find((row) => row.status === "escalated");
  if (run.status === "escalated" || (escalated && !saga)) {
    return refuse(new RunEscalatedError(run.id, escalated?.key ?? lastStep ?? "?"));
  }
  if (saga) {
    // Past the pivot once an irreversible step ever succeeded (a failed redo does not undo it),
    // or while one may have happened (cut off, or escalated and unresolved).
    const done = steps.find((row) => row.effect === "irreversible" && row.status === "succeeded");
    if (done) return refuse(new PastPivotError(run.id, done.key));
    const unknown = latestRows(current).find((row) => row.effect === "irreversible" && (row.status === "intended" || row.status === "escalated"));
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

function firstStep(current: StoredRun): string | undefined {
  return current.steps[0]?.key;
}

/** The current row of each key, in order of first appearance. */
export function latestRows(current: StoredRun) {
  const latest = new Map<string, StoredRun["steps"][number]>();
  for (const row of current.steps) latest.set(row.key, row);
  return [...latest.values()];
}
