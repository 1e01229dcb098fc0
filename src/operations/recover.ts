/**
 * recover(): find attempts that have no ending and whose owner is gone, mark their runs
 * interrupted with an explanation, and fence the dead holder out (its lease epoch moves on,
 * so even a process that was only frozen can record nothing more). It re-runs nothing.
 */

import type { Payloads } from "../payloads/payloads.js";
import type { Store, StoredRun } from "../store/types.js";
import { holderGone, judgeHolder, type Judge } from "./views.js";

export interface RecoveredRun {
  id: string;
  workflow: string;
  status: "interrupted";
  /** The attempt that was cut off. */
  attempt: number;
  /** The step it was in, if any. */
  step: string | undefined;
  /** Why the owner counts as gone, and what to type next. */
  explanation: string;
}

export async function recoverInterrupted(store: Store, judge: Judge, payloads: Payloads): Promise<RecoveredRun[]> {
  const found: RecoveredRun[] = [];
  for (const { run, lease, lastAttempt } of await store.listRuns({ status: ["running"] })) {
    if (!holderGone(lease, lastAttempt, judge)) continue;
    // Judged again inside the store's transaction: the run may have moved on meanwhile.
    const marked = await store.updateRun(run.id, (current) => mark(current, judge));
    if (!marked) continue;
    // The explanation goes into the run's error through the codec, like every error detail.
    const error = await payloads.encodeError({ name: "Interrupted", message: marked.explanation, ...(marked.step === undefined ? {} : { step: marked.step }) });
    await store.updateRun(run.id, (current) => (current.run.status === "interrupted" ? { run: { error }, result: true } : { result: false }));
    found.push(marked);
  }
  return found;
}

function mark(current: StoredRun, judge: Judge) {
  const { run, lease } = current;
  const holder = lease?.attempt == null ? undefined : current.attempts.find((a) => a.number === lease.attempt);
  if (run.status !== "running" || !lease || !holder) return { result: undefined };
  const verdict = judgeHolder(holder, lease, judge);
  if (!verdict.gone) return { result: undefined };
  const step = current.steps.filter((s) => s.attempt === holder.number).at(-1)?.key;
  const explanation =
    `Attempt ${holder.number} (pid ${holder.pid} on ${holder.host}) ended without recording an ending: ${verdict.why}.` +
    (step === undefined ? "" : ` It was in step ${JSON.stringify(step)}; a continue resolves that step by its policy.`) +
    ` To go on, type engine.continue(${JSON.stringify(run.id)}).`;
  const result: RecoveredRun = { id: run.id, workflow: run.workflow, status: "interrupted", attempt: holder.number, step, explanation };
  return {
    run: { status: "interrupted" as const, updatedAt: judge.now },
    fenceOut: { now: judge.now },
    result,
  };
}
