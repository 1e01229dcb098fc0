/**
 * The human queue. A step whose effect may have happened and must not be repeated blindly is
 * escalated; a person finds out what happened and resolves it: with the value it produced
 * (it happened) or with redo (it did not). The run then reads `ready` and a continue goes on.
 */

import { NotEscalatedError, RunNotFoundError, StepNotFoundError } from "../base/errors.js";
import type { Effect, Store, StoredRun } from "../store/types.js";
import { latestRows } from "../store/latest-rows.js";
import type { Payloads } from "../payloads/payloads.js";
import { formatResolution, parseResolution } from "../workflow/step-resolution.js";
import { redact, type RedactRule } from "../payloads/redact.js";

export interface Escalation {
  runId: string;
  workflow: string;
  /** The step's key. */
  step: string;
  name: string;
  effect: Effect;
  idempotencyKey: string;
  /** The attempt that was cut off inside the step. */
  attempt: number;
  /** When that attempt recorded its intent (ISO-8601). */
  cutOffAt: string;
  /** When a later attempt found it cut off and escalated it. */
  escalatedAt: string | null;
  /** What it was doing: the workflow, the step and its effect, in a sentence. */
  summary: string;
  /** What the step acted on (its `input`, as recorded with its intent), decoded; absent for a step given none, or sealed with a key this engine lacks. */
  input?: unknown;
}

export type Resolution = { value: unknown; by?: string } | { redo: true; by?: string };

export function escalationsOf(stored: StoredRun): Escalation[] {
  return latestRows(stored.steps, (row) => row.status === "escalated").map((row) => ({
    runId: stored.run.id,
    workflow: stored.run.workflow,
    step: row.key,
    name: row.name,
    effect: row.effect,
    idempotencyKey: row.idempotencyKey,
    attempt: row.attempt,
    cutOffAt: new Date(row.intendedAt).toISOString(),
    escalatedAt: row.endedAt === null ? null : new Date(row.endedAt).toISOString(),
    summary:
      `Workflow ${JSON.stringify(stored.run.workflow)}, run ${JSON.stringify(stored.run.id)}: attempt ${row.attempt} was cut off inside ` +
      `${row.effect} step ${JSON.stringify(row.key)} (idempotency key ${row.idempotencyKey}); nobody knows whether its effect happened.`,
  }));
}

/** The escalations of the store's runs, each with its step's recorded input (decoded; passed through `rule` when given). */
export async function listEscalations(store: Store, payloads: Payloads, rule: RedactRule | undefined): Promise<Escalation[]> {
  const out: Escalation[] = [];
  // A cancelled run keeps an unresolved escalation in force (a continue escalates it again), so it is listed too.
  for (const { run } of await store.listRuns({ status: ["escalated", "cancelled"] })) {
    const stored = await store.loadRun(run.id);
    if (!stored) continue;
    for (const escalation of escalationsOf(stored)) {
      const row = stored.steps.findLast((s) => s.key === escalation.step && s.status === "escalated");
      const input = row === undefined ? undefined : parseResolution(row.resolution).input;
      if (input !== undefined && payloads.missingKey(input) === undefined) escalation.input = redact(await payloads.decode(input), rule);
      out.push(escalation);
    }
  }
  return out;
}

/**
 * Record a person's answer on the escalated row: the value it produced (the row becomes
 * succeeded; the step's result schema checks it when the next continue reuses it), or redo
 * (the row becomes failed, so the next continue re-runs the step with the same key).
 */
export async function resolveEscalation(
  store: Store,
  runId: string,
  step: string,
  answer: Resolution,
  now: number,
  payloads: Payloads,
  /** A refusal when an attempt holds the run right now (it would not see the answer). */
  busy: (current: StoredRun) => Error | undefined,
): Promise<void> {
  const isValue = "value" in answer;
  const valueText = isValue ? (await payloads.encode(answer.value, `The value given for step ${JSON.stringify(step)}`, { runId, step })).stored : null;
  const redoError = await payloads.encodeError({
    name: "ResolvedByPerson",
    message: `A person said the effect of step ${JSON.stringify(step)} did not happen; redo it.`,
    step,
  });
  const done = await store.updateRun(runId, (current) => {
    const sealed = payloads.sealedBeyond(current);
    if (sealed) return { error: sealed, result: false };
    const held = busy(current);
    if (held) return { error: held, result: false };
    const rows = current.steps.filter((row) => row.key === step);
    const row = rows.at(-1);
    if (!row) return { error: new StepNotFoundError(runId, step, [...new Set(current.steps.map((s) => s.key))], "resolve"), result: false };
    if (row.status !== "escalated") return { error: new NotEscalatedError(runId, step, row.status), result: false };
    // The input the step was recorded with stays (a continue compares its digest; show shows it).
    const { input, inputDigest } = parseResolution(row.resolution);
    const resolution = formatResolution({
      ...(input === undefined ? {} : { input }),
      ...(inputDigest === undefined ? {} : { inputDigest }),
      policy: "escalate",
      found: isValue ? "done (resolved by a person)" : "not done (resolved by a person)",
      ...(answer.by === undefined ? {} : { by: answer.by }),
      resolvedAt: new Date(now).toISOString(),
    });
    const patch = isValue
      ? { status: "succeeded" as const, value: valueText, error: null, resolution, endedAt: now }
      : {
          status: "failed" as const,
          error: redoError,
          resolution,
          endedAt: now,
        };
    const stillEscalated = escalationsOf(current).filter((e) => e.step !== step).length > 0;
    return {
      updateSteps: [{ seq: row.seq, patch }],
      run: { status: stillEscalated ? "escalated" : "ready", updatedAt: now },
      result: true,
    };
  });
  if (done === undefined) throw new RunNotFoundError(runId, store.location);
}
