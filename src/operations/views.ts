/**
 * What `get` and `list` show: stored rows turned into plain views, with `interrupted`
 * derived for attempts that have no ending and whose owner is gone (before any recover()).
 */

import { parseBudget } from "../workflow/budgets.js";
import type { ErrorInfo } from "../base/errors.js";
import { judgeOwner, type OwnerVerdict } from "../ownership/owner.js";
import { watchLease } from "../ownership/lease-watch.js";
import type { AttemptRow, Consent, Effect, LeaseRow, RunListing, RunRow, RunStatus, StepStatus, StoredRun } from "../store/types.js";
import type { Payloads } from "../payloads/payloads.js";
import { findHandledFailures } from "../steps/handled-failures.js";
import { redact, type RedactRule } from "../payloads/redact.js";
import type { WaitingFor } from "../steps/waits.js";
import { parseResolution, shownResolution, shownWaitingFor, type StepResolution, type StoredWait } from "../workflow/step-resolution.js";

export interface AttemptView {
  number: number;
  /** How it ended; `interrupted` when it has no ending and its owner is gone; null while it runs. */
  ending: AttemptRow["ending"] | "interrupted" | null;
  host: string;
  pid: number;
  startedAt: string;
  endedAt: string | null;
  fromStep: string | null;
  forced: boolean;
  error?: ErrorInfo;
  /** Step keys this attempt handed back from records (recorded with its ending; empty if it never ended). */
  reused: string[];
  /** What its continue consented to for succeeded irreversible steps: `{ redo, reuse }`; absent when none. */
  consent?: Consent;
}

export interface StepView {
  seq: number;
  key: string;
  name: string;
  status: StepStatus;
  attempt: number;
  effect: Effect;
  idempotencyKey: string;
  value?: unknown;
  error?: ErrorInfo;
  startedAt: string;
  endedAt: string | null;
  /** Calls of the function for this row (retries included). */
  calls: number;
  /** The error of each call that failed, by call number (a retried step's earlier calls too); absent when none did. */
  callErrors?: Array<{ call: number; error: ErrorInfo }>;
  /** What the step reported with info.usage(), summed over its calls. */
  usage?: Record<string, number>;
  /**
   * On a failed row the workflow caught and went on from ("failed, handled"): a continue throws
   * its error again rather than calling the function.
   */
  handled?: true;
  /** How the row was settled other than by its function: query, redrive, compensate, escalate, supplied. */
  resolution?: Omit<StepResolution, "thrown" | "callErrors" | "input" | "inputDigest">;
  /** What the step acts on (its `input`), decoded; absent for a step given none. */
  input?: unknown;
  /** The input's digest (keyed by the codec when there is one); absent when none was recorded. */
  inputDigest?: string;
  version: string | null;
  /** Where the step was entered in its attempt's call order, from 0; null for rows of an older steplog. */
  position: number | null;
}

export interface RunSummary {
  id: string;
  workflow: string;
  version: string | null;
  status: RunStatus;
  /** Attempts started so far. */
  attemptCount: number;
  createdAt: string;
  updatedAt: string;
}

export interface RunView extends RunSummary {
  args: unknown;
  /** The run that started this one as its child (ctx.child, ctx.startChild); null otherwise. */
  parent: string | null;
  /** The child runs this run started, oldest first. */
  children: RunSummary[];
  /** Where the workflow's code came from, as recorded at the start (the steplog command records the file). */
  source: string | null;
  /** Usage reported by the run's steps (info.usage), summed over every row. */
  usage: Record<string, number>;
  /** What a parked run waits for, and until when. */
  waitingFor?: WaitingFor;
  /** When a worker may pick it up (ISO-8601). */
  wakeAt?: string;
  /**
   * A run with a budget (docs/budgets.md): its limits and what has been spent toward them (its
   * steps, and its child runs that draw on it). A child that draws on another run's budget has
   * `budgetRun` (that run) instead of limits, and `spent` its own spend.
   */
  budget?: { usd?: number; tokens?: number };
  budgetRun?: string;
  spent?: { usd: number; tokens: number };
  value?: unknown;
  error?: ErrorInfo;
  attempts: AttemptView[];
  steps: StepView[];
}

const iso = (ms: number) => new Date(ms).toISOString();

export interface Judge {
  now: number;
  isHeldHere: (runId: string) => boolean;
  /** The storage's id (Store.storageId), under which this process watches leases. */
  where: string;
}

/** judgeOwner for a run of the judged storage. */
export function judgeHolder(holder: AttemptRow, lease: LeaseRow, judge: Judge): OwnerVerdict {
  return judgeOwner(holder, lease, { isHeldHere: () => judge.isHeldHere(lease.runId), watch: (l) => watchLease(judge.where, l) });
}

/** True when the attempt holding this lease is gone (the run reads interrupted). */
export function holderGone(lease: LeaseRow | null, holder: AttemptRow | null | undefined, judge: Judge): boolean {
  if (!lease || lease.attempt === null || !holder || holder.number !== lease.attempt) return false;
  return judgeHolder(holder, lease, judge).gone;
}

export function derivedStatus(run: RunRow, lease: LeaseRow | null, holder: AttemptRow | null | undefined, judge: Judge): RunStatus {
  return run.status === "running" && holderGone(lease, holder, judge) ? "interrupted" : run.status;
}

export function summarize(listing: RunListing, judge: Judge): RunSummary {
  const { run, lease, lastAttempt } = listing;
  return {
    id: run.id,
    workflow: run.workflow,
    version: run.version,
    status: derivedStatus(run, lease, lastAttempt, judge),
    attemptCount: run.attempts,
    createdAt: iso(run.createdAt),
    updatedAt: iso(run.updatedAt),
  };
}

export async function viewRun(stored: StoredRun, judge: Judge, payloads: Payloads, children: RunSummary[] = []): Promise<RunView> {
  const { run, lease, attempts, steps } = stored;
  const holder = lease?.attempt == null ? undefined : attempts.find((a) => a.number === lease.attempt);
  const liveAttempt = holder && !holderGone(lease, holder, judge) ? holder.number : undefined;
  const handled = await findHandledFailures(stored, payloads);
  const current = new Map(steps.map((s) => [s.key, s.seq]));
  const view: RunView = {
    ...summarize({ run, lease, lastAttempt: holder ?? attempts.at(-1) ?? null }, judge),
    args: await payloads.decode(run.args),
    parent: run.parent ?? null,
    children,
    source: run.source,
    usage: sumUsage(steps.map((s) => s.usage)),
    attempts: await Promise.all(
      attempts.map(async (a) => {
        const attempt: AttemptView = {
          number: a.number,
          ending: a.ending ?? (a.number === liveAttempt ? null : "interrupted"),
          host: a.host,
          pid: a.pid,
          startedAt: iso(a.startedAt),
          endedAt: a.endedAt === null ? null : iso(a.endedAt),
          fromStep: a.fromStep,
          forced: a.forced,
          reused: a.reused ?? [],
        };
        if (a.consent) attempt.consent = a.consent;
        if (a.error !== null) attempt.error = await payloads.decodeError(a.error);
        return attempt;
      }),
    ),
    steps: await Promise.all(
      steps.map(async (s) => {
        const step: StepView = {
          seq: s.seq,
          key: s.key,
          name: s.name,
          status: s.status,
          attempt: s.attempt,
          effect: s.effect,
          idempotencyKey: s.idempotencyKey,
          startedAt: iso(s.intendedAt),
          endedAt: s.endedAt === null ? null : iso(s.endedAt),
          calls: s.calls,
          version: s.version,
          position: s.position ?? null,
        };
        if (s.value !== null) step.value = await payloads.decode(s.value);
        if (s.error !== null) step.error = await payloads.decodeError(s.error);
        if (s.usage !== null) step.usage = JSON.parse(s.usage) as Record<string, number>;
        // A failure's mark of having been thrown into the code is the engine's (see `handled`), not a resolution.
        const resolution = shownResolution(s.resolution);
        if (resolution) step.resolution = resolution;
        const recorded = parseResolution(s.resolution);
        if (recorded.input !== undefined) step.input = await payloads.decode(recorded.input);
        if (recorded.inputDigest !== undefined) step.inputDigest = recorded.inputDigest;
        const callErrors = recorded.callErrors;
        if (callErrors?.length)
          step.callErrors = await Promise.all(callErrors.map(async (c) => ({ call: c.call, error: await payloads.decodeError(c.error) })));
        if (handled.has(s.key) && current.get(s.key) === s.seq) step.handled = true;
        return step;
      }),
    ),
  };
  if (run.waitingFor !== null) view.waitingFor = shownWaitingFor(JSON.parse(run.waitingFor) as StoredWait);
  if (run.wakeAt !== null) view.wakeAt = iso(run.wakeAt);
  const budget = parseBudget(run.costBudget);
  if (budget !== undefined) {
    if ("own" in budget) view.budget = budget.own;
    else view.budgetRun = budget.parent;
    view.spent = { usd: run.spentUsd ?? 0, tokens: run.spentTokens ?? 0 };
  }
  if (run.value !== null) view.value = await payloads.decode(run.value);
  if (run.error !== null) view.error = await payloads.decodeError(run.error);
  return view;
}

function sumUsage(all: Array<string | null>): Record<string, number> {
  const total: Record<string, number> = {};
  for (const text of all) {
    if (text === null) continue;
    for (const [field, amount] of Object.entries(JSON.parse(text) as Record<string, number>)) total[field] = (total[field] ?? 0) + amount;
  }
  return total;
}

/**
 * The view with every recorded value (args, step inputs and values, result) and every error's own fields
 * (an HTTP client's error may carry its request's headers) passed through the redaction rules.
 */
export function redactView(view: RunView, rule: RedactRule | undefined): RunView {
  if (rule === undefined) return view;
  const steps = view.steps.map((s) => {
    const out: StepView = "value" in s ? { ...s, value: redact(s.value, rule) } : { ...s };
    if (s.error) out.error = redactError(s.error, rule);
    if ("input" in s) out.input = redact(s.input, rule);
    if (s.callErrors) out.callErrors = s.callErrors.map((c) => ({ call: c.call, error: redactError(c.error, rule) }));
    return out;
  });
  const attempts = view.attempts.map((a) => (a.error ? { ...a, error: redactError(a.error, rule) } : a));
  const out: RunView = { ...view, args: redact(view.args, rule), steps, attempts };
  if ("value" in view) out.value = redact(view.value, rule);
  if (view.error) out.error = redactError(view.error, rule);
  return out;
}

export function redactError(error: ErrorInfo, rule: RedactRule): ErrorInfo {
  const out: ErrorInfo = { ...error };
  if (error.fields) out.fields = redact(error.fields, rule) as Record<string, unknown>;
  if (error.cause) out.cause = redactError(error.cause, rule);
  return out;
}
