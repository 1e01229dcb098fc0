/**
 * A run's timeline, attempt by attempt, computed from engine.get(id): what each attempt reused
 * (with the original row's time and cost: what reuse saved) and what it ran, the totals, and
 * the next commands to type. `steplog show` prints it, --json emits it, --html draws it.
 */

import type { Escalation } from "../operations/escalations.js";
import type { ErrorInfo } from "../base/errors.js";
import type { AttemptView, RunView, StepView } from "../operations/views.js";
import type { WaitingFor } from "../steps/waits.js";
import { addUsage, command } from "./format.js";

/**
 * "reused": a record handed back (the function not called); "resolved": handed back too, but a
 * record a person settled (an escalation resolved with a value), which no reuse saved anything on.
 */
export type EntryKind = "ran" | "reused" | "resolved" | "compensation";

export interface TimelineEntry {
  kind: EntryKind;
  key: string;
  name: string;
  /** The row's status (for reused: the status of the reused row, succeeded). */
  status: string;
  effect: string;
  idempotencyKey: string;
  /** The attempt that wrote the row (for reused: the attempt that recorded the value). */
  recordedBy: number;
  seq: number;
  /** ms since the epoch; for reused entries, those of the original row. */
  startedAt: number;
  /** When its function returned; null while it runs, and for a row cut off by a crash. */
  endedAt: number | null;
  /** null when unknown: the row was cut off (the process died inside it). */
  durationMs: number | null;
  /** Cut off by the end of its attempt (a crash): settled later, at `settledAt`, by a policy or a person. */
  cutOff?: boolean;
  settledAt?: number;
  calls: number;
  usage?: Record<string, number>;
  error?: ErrorInfo;
  resolution?: StepView["resolution"] & { by?: string };
  /** A wait row: what it waits (or waited) for. */
  wait?: WaitingFor;
  /** What the step returned (as recorded, redacted like the rest of the view); absent when it recorded none. */
  value?: unknown;
  /** What the step acted on (its `input`, as recorded); absent for a step given none. */
  input?: unknown;
  inputDigest?: string;
  /** The error of each call that failed (a retried step's earlier calls too). */
  callErrors?: Array<{ call: number; error: ErrorInfo }>;
  /** A failure the workflow caught and went on from: a continue throws it again (as a reused entry: thrown again). */
  handled?: true;
}

export interface TimelineAttempt {
  number: number;
  ending: string | null;
  host: string;
  pid: number;
  startedAt: number;
  endedAt: number | null;
  durationMs: number | null;
  fromStep: string | null;
  forced: boolean;
  error?: ErrorInfo;
  entries: TimelineEntry[];
}

export interface Timeline {
  id: string;
  workflow: string;
  version: string | null;
  status: string;
  source: string | null;
  /** The run that started this one as a child, if one did. */
  parent: string | null;
  /** The child runs this run started, oldest first. */
  children: Array<{ id: string; workflow: string; status: string }>;
  /** The args as recorded at the start. */
  args: unknown;
  createdAt: string;
  updatedAt: string;
  attemptCount: number;
  waitingFor?: WaitingFor;
  wakeAt?: string;
  /** A run with a budget (docs/budgets.md): its limits (or the run whose budget it draws on) and its spend. */
  budget?: { usd?: number; tokens?: number };
  budgetRun?: string;
  spent?: { usd: number; tokens: number };
  value?: unknown;
  error?: ErrorInfo;
  attempts: TimelineAttempt[];
  totals: {
    /** Wall time of all attempts, added up. */
    attemptsMs: number;
    /** Time inside step functions (every row that ended), added up. */
    stepsMs: number;
    /** Usage reported by the steps (info.usage), summed over every row. */
    usage: Record<string, number>;
    rows: number;
  };
  /** What reuse saved: the time and usage of the original rows of every reused step. */
  saved: { steps: number; ms: number; usage: Record<string, number> };
  escalations: Escalation[];
  /** Commands to type next, most likely first. */
  next: string[];
}

const isoOf = (n: number | null | undefined) => (n === null || n === undefined ? n : new Date(n).toISOString());

/** `--usd N --tokens N` for a run parked on its budget: twice what it has spent, for each limit it has (a suggestion). */
function budgetArgs(w: WaitingFor): string[] {
  const args: string[] = [];
  if (w.budget?.usd !== undefined) args.push("--usd", String(Math.max(1, Math.ceil((w.spent?.usd ?? 0) * 2))));
  if (w.budget?.tokens !== undefined) args.push("--tokens", String(Math.max(1, Math.ceil((w.spent?.tokens ?? 0) * 2))));
  return args.length > 0 ? args : ["--usd", "<N>"];
}

/** The timeline for --json: times as ISO-8601 strings, like engine.get. */
export function timelineJson(t: Timeline): unknown {
  return {
    ...t,
    attempts: t.attempts.map((a) => ({
      ...a,
      startedAt: isoOf(a.startedAt),
      endedAt: isoOf(a.endedAt),
      entries: a.entries.map((e) => ({
        ...e,
        startedAt: isoOf(e.startedAt),
        endedAt: isoOf(e.endedAt),
        ...(e.settledAt !== undefined ? { settledAt: isoOf(e.settledAt) } : {}),
      })),
    })),
  };
}

const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso));

export function buildTimeline(run: RunView, escalations: Escalation[], now: number): Timeline {
  const rows = run.steps;
  const attempts: TimelineAttempt[] = run.attempts.map((a) => attemptOf(a, rows, now));
  let stepsMs = 0;
  for (const row of rows) {
    const start = ms(row.startedAt)!;
    const end = ms(row.endedAt);
    if (end !== null && !isWait(row) && !isCutOff(row)) stepsMs += Math.max(0, end - start);
  }
  let attemptsMs = 0;
  for (const a of attempts) attemptsMs += a.durationMs ?? 0;
  const saved = { steps: 0, ms: 0, usage: {} as Record<string, number> };
  // Each record counted once, however many attempts handed it back: what reuse saved never
  // exceeds what the reused steps cost.
  const counted = new Set<number>();
  for (const a of attempts) {
    for (const e of a.entries) {
      if (e.kind !== "reused" || counted.has(e.seq)) continue;
      counted.add(e.seq);
      saved.steps++;
      // Time spent waiting for an event or a timer is not work that reuse saved.
      if (!e.wait) saved.ms += e.durationMs ?? 0;
      addUsage(saved.usage, e.usage);
    }
  }
  const timeline: Timeline = {
    id: run.id,
    workflow: run.workflow,
    version: run.version,
    status: run.status,
    source: run.source,
    parent: run.parent,
    children: run.children.map((c) => ({ id: c.id, workflow: c.workflow, status: c.status })),
    args: run.args,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    attemptCount: run.attemptCount,
    attempts,
    totals: { attemptsMs, stepsMs, usage: { ...run.usage }, rows: rows.length },
    saved,
    escalations,
    next: nextCommands(run, escalations),
  };
  if (run.waitingFor) timeline.waitingFor = run.waitingFor;
  if (run.wakeAt) timeline.wakeAt = run.wakeAt;
  if (run.budget) timeline.budget = run.budget;
  if (run.budgetRun) timeline.budgetRun = run.budgetRun;
  if (run.spent) timeline.spent = run.spent;
  if ("value" in run) timeline.value = run.value;
  if (run.error) timeline.error = run.error;
  return timeline;
}

function isWait(row: StepView): boolean {
  return row.resolution?.wait !== undefined;
}

function attemptOf(a: AttemptView, rows: StepView[], now: number): TimelineAttempt {
  const startedAt = ms(a.startedAt)!;
  const endedAt = ms(a.endedAt);
  const entries: TimelineEntry[] = [];
  // What it reused, in the order it reused them: each entry is the row it handed back, the
  // last succeeded row of that key written before this attempt began.
  const firstSeqOfThis = rows.find((r) => r.attempt === a.number)?.seq ?? Number.POSITIVE_INFINITY;
  for (const key of a.reused) {
    const original = [...rows]
      .reverse()
      .find((r) => r.key === key && (r.status === "succeeded" || r.handled) && (r.attempt < a.number || r.seq < firstSeqOfThis));
    if (!original) continue;
    const byPerson = original.resolution?.policy === "escalate";
    entries.push({ ...entryOf(original, now, a.ending === null), kind: byPerson ? "resolved" : "reused" });
  }
  for (const row of rows) if (row.attempt === a.number) entries.push(entryOf(row, now, a.ending === null));
  const attempt: TimelineAttempt = {
    number: a.number,
    ending: a.ending,
    host: a.host,
    pid: a.pid,
    startedAt,
    endedAt,
    durationMs: endedAt === null ? (a.ending === null ? Math.max(0, now - startedAt) : lastTime(entries, startedAt)) : Math.max(0, endedAt - startedAt),
    fromStep: a.fromStep,
    forced: a.forced,
    entries,
  };
  if (a.error) attempt.error = a.error;
  return attempt;
}

/** An interrupted attempt has no end: its length is up to the last thing it recorded. */
function lastTime(entries: TimelineEntry[], startedAt: number): number {
  let last = startedAt;
  for (const e of entries) if (e.kind !== "reused" && e.kind !== "resolved") last = Math.max(last, e.endedAt ?? e.startedAt);
  return last - startedAt;
}

const SETTLED_BY_POLICY = new Set(["redrive", "compensate", "escalate", "query"]);

/** A row its function never finished: the attempt ended inside it and a later attempt (or a person) settled it. */
function isCutOff(row: StepView): boolean {
  if (row.status === "escalated") return true;
  const r = row.resolution;
  return r !== undefined && !r.compensation && r.wait === undefined && r.policy !== undefined && SETTLED_BY_POLICY.has(r.policy) && row.status !== "intended";
}

function entryOf(row: StepView, now: number, live: boolean): TimelineEntry {
  const startedAt = ms(row.startedAt)!;
  const cutOff = isCutOff(row);
  const endedAt = cutOff ? null : ms(row.endedAt);
  const resolution = row.resolution;
  const entry: TimelineEntry = {
    kind: resolution?.compensation ? "compensation" : "ran",
    key: row.key,
    name: row.name,
    status: row.status,
    effect: row.effect,
    idempotencyKey: row.idempotencyKey,
    recordedBy: row.attempt,
    seq: row.seq,
    startedAt,
    endedAt,
    durationMs: endedAt !== null ? Math.max(0, endedAt - startedAt) : live && !cutOff ? Math.max(0, now - startedAt) : null,
    calls: row.calls,
  };
  if (cutOff) {
    entry.cutOff = true;
    const settled = ms(row.endedAt);
    if (settled !== null) entry.settledAt = settled;
  }
  if (row.usage) entry.usage = row.usage;
  if (row.error) entry.error = row.error;
  if ("value" in row) entry.value = row.value;
  if ("input" in row) entry.input = row.input;
  if (row.inputDigest !== undefined) entry.inputDigest = row.inputDigest;
  if (row.callErrors) entry.callErrors = row.callErrors;
  if (row.handled) entry.handled = true;
  if (resolution) {
    const { wait, ...rest } = resolution;
    if (wait) entry.wait = wait;
    if (Object.keys(rest).length) entry.resolution = rest as TimelineEntry["resolution"] & object;
  }
  return entry;
}

/** The commands that move the run on from where it is. */
export function nextCommands(run: RunView, escalations: Escalation[]): string[] {
  const id = run.id;
  // The workflow file, when the run recorded none, is a placeholder the user replaces.
  const goWith = (...more: string[]) =>
    run.source
      ? command("steplog", "run", "--continue", "--id", id, ...more)
      : `${command("steplog", "run")} <workflow-file> ${command("--continue", "--id", id, ...more)}`;
  const go = goWith();
  const lastStep = run.error?.step ?? run.steps.at(-1)?.key;
  switch (run.status) {
    case "completed":
      return [];
    case "escalated":
      return escalations
        .filter((e) => e.runId === id)
        .flatMap((e) => [command("steplog", "resolve", id, e.step, "--value", "<json>"), command("steplog", "resolve", id, e.step, "--redo")]);
    case "ready":
      return [go];
    case "waiting": {
      const w = run.waitingFor;
      if (w?.kind === "event") return [`${command("steplog", "send", id, w.event ?? "<event>")} '<json>'`, command("steplog", "work")];
      if (w?.kind === "approval")
        return [
          // A step given an input: look at it first (steplog approvals), then approve what was seen.
          ...(w.inputDigest === undefined ? [] : [command("steplog", "approvals")]),
          w.inputDigest === undefined ? command("steplog", "approve", id, w.step) : command("steplog", "approve", id, w.step, "--input-digest", w.inputDigest),
          command("steplog", "reject", id, w.step, "--reason", "<why>"),
          command("steplog", "work"),
        ];
      if (w?.kind === "child" && w.child !== undefined) return [command("steplog", "show", w.child), command("steplog", "work")];
      if (w?.kind === "budget") return [command("steplog", "budget", w.budgetRun ?? id, ...budgetArgs(w)), command("steplog", "work")];
      return [command("steplog", "work"), go];
    }
    case "dead-lettered":
      return [`${go} --force`];
    case "running":
      return [command("steplog", "show", id), command("steplog", "cancel", id)];
    case "compensated":
      return [];
    case "stopped":
      // Stopped before a succeeded irreversible step: run it again, or keep its record.
      if (run.error?.code === "REDO_IRREVERSIBLE" && lastStep !== undefined) return [goWith("--redo", lastStep), goWith("--reuse", lastStep)];
      return lastStep === undefined ? [go] : [go, goWith("--from-step", lastStep)];
    case "failed":
    case "timed-out":
    case "cancelled":
    case "interrupted":
    default:
      return lastStep === undefined || run.status === "interrupted" || run.status === "cancelled" ? [go] : [go, goWith("--from-step", lastStep)];
  }
}
