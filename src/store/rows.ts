/**
 * The rows a store keeps, as the storage contract (types.ts) names them: runs, their events,
 * attempts and who ran them, leases, and steps, with the statuses and effects they hold.
 * Values (`args`, `value`, `error`) are encoded text; times are milliseconds the engine passed in.
 */

export type RunStatus =
  | "running"
  | "completed"
  | "failed"
  | "stopped"
  | "timed-out"
  | "cancelled"
  | "waiting"
  | "escalated"
  | "interrupted"
  | "ready"
  | "dead-lettered"
  | "compensated";

/** The statuses of a run that has ended (no attempt runs, none is owed): a dedupe key is free again, a parent takes a child's as its answer. */
export const ENDED_STATUSES: readonly RunStatus[] = ["completed", "failed", "stopped", "timed-out", "cancelled", "dead-lettered", "compensated"];

export type AttemptEnding = "completed" | "failed" | "stopped" | "timed-out" | "cancelled" | "waiting" | "escalated" | "compensated";

export type StepStatus = "intended" | "succeeded" | "failed" | "stopped" | "escalated" | "compensated";

export type Effect = "read" | "idempotent" | "compensatable" | "irreversible";

/** Every effect a step may declare. */
export const EFFECTS: readonly Effect[] = ["read", "idempotent", "compensatable", "irreversible"];

/** One run. `args`, `value` and `error` are encoded text. */
export interface RunRow {
  id: string;
  workflow: string;
  version: string | null;
  args: string;
  status: RunStatus;
  /** Attempts ever started. */
  attempts: number;
  /** Attempts counted toward maxAttempts since the run began or was last forced. */
  budgetUsed: number;
  source: string | null;
  deadline: number | null;
  value: string | null;
  error: string | null;
  /** What a parked run waits for, as JSON ({ kind, step, event?, until? }); null when not waiting. */
  waitingFor: string | null;
  /** When a parked run is ready to be picked up again (a timer, or now once its event arrived). */
  wakeAt: number | null;
  /** The run that started this one as a child run (ctx.child, ctx.startChild); null for a run started otherwise. Read as null from records written before child runs existed. */
  parent: string | null;
  /**
   * Flow control (absent or null: none). `concurrencyKey`: at most a limit of runs with this key
   * hold a lease at once; `rateKey`: at most a limit of attempts start per period among runs with
   * this key; `priority`: due runs are listed highest first (default 0); `dedupeKey`: a new run
   * with this key is not created while a run that has it has not ended (ENDED_STATUSES).
   */
  concurrencyKey?: string | null;
  rateKey?: string | null;
  priority?: number;
  dedupeKey?: string | null;
  /**
   * The W3C traceparent (`00-<trace id>-<span id>-<flags>`) of the span the run's attempts hang
   * from when OpenTelemetry tracing is on: its first traced attempt's span (or, for a run queued
   * for its turn, the span that started it). Written with the run, or by the claim of its first
   * traced attempt; absent or null: none (tracing off, or a run written before tracing existed).
   */
  traceContext?: string | null;
  /**
   * The run's spending budget as JSON (engine.start's `budget`): `{"usd":…,"tokens":…}` (either
   * may be absent), or `{"parent":"<run id>"}` for a child run that draws on the budget of that
   * run (the top of its shared chain). Absent or null: none.
   */
  costBudget?: string | null;
  /**
   * What the run has spent, as recorded by its step outcomes and by those of the child runs that
   * draw on its budget (StepOutcome.spend), added in the transaction of each outcome. Kept only
   * for runs with a budget (or drawing on one); absent: 0.
   */
  spentUsd?: number;
  spentTokens?: number;
  createdAt: number;
  updatedAt: number;
}

/** An event sent to a run: consumed at most once, in order of arrival. */
export interface EventRow {
  runId: string;
  /** Order of arrival within the run, from 1. */
  seq: number;
  name: string;
  payload: string;
  sentAt: number;
  /** The step key of the wait that consumed it; null until then. */
  consumedBy: string | null;
  /** The key it was sent with (send's `key`), unique within the run; null without one. Read as null from records written before keys existed. */
  key: string | null;
}

/** Who ran an attempt: enough to tell later whether that process is gone. */
export interface OwnerRow {
  host: string;
  bootId: string | null;
  pid: number;
  /** The process's start time as the OS counts it; null where it cannot be read. */
  processStart: number | null;
}

export interface AttemptRow extends OwnerRow {
  runId: string;
  number: number;
  startedAt: number;
  endedAt: number | null;
  ending: AttemptEnding | null;
  /** The step this attempt was told to redo from, if any. */
  fromStep: string | null;
  /** True when `force` gave the run a fresh attempt budget. */
  forced: boolean;
  error: string | null;
  /** Step keys this attempt handed back from records, as recorded with its ending (absent until then). */
  reused?: string[];
  /**
   * What the continue consented to for succeeded irreversible steps after its start point:
   * run them again (`redo`) or hand their records back (`reuse`). Absent when it gave none.
   */
  consent?: Consent;
}

export interface Consent {
  redo: string[];
  reuse: string[];
}

export interface LeaseRow {
  runId: string;
  /** Increases with every new holder; every attempt write is conditional on it. */
  epoch: number;
  /** The attempt holding it, or null once released. */
  attempt: number | null;
  /** On the holder's clock; `expiresAt − heartbeatAt` is the lease's period. */
  expiresAt: number;
  heartbeatAt: number;
  /**
   * Optional, for a store with a clock every claimer shares (Postgres: the server's): how many
   * ms ago the lease row was last written, by that clock, as read. With it, a lease counts as
   * expired once this reaches its period; without it, a claimer must watch it go unrenewed for
   * a period itself. Never the holder's clock against the claimer's.
   */
  ageMs?: number;
}

/** One execution of one step. Inserted as `intended`, updated once to its outcome. */
export interface StepRow {
  runId: string;
  /** Position in the run's step log, from 1. */
  seq: number;
  attempt: number;
  key: string;
  name: string;
  status: StepStatus;
  effect: Effect;
  idempotencyKey: string;
  value: string | null;
  error: string | null;
  /** The workflow version that wrote the row. */
  version: string | null;
  intendedAt: number;
  endedAt: number | null;
  /** How many times the function was called for this row (retries included). */
  calls: number;
  /** How the row was settled when not by calling the function, as JSON. */
  resolution: string | null;
  usage: string | null;
  /**
   * Where the step was entered in its attempt's call order (0 for the first step or wait the
   * attempt entered, reused ones included); null for rows written by an older steplog. A
   * continue that hands records back in another order than these says so.
   */
  position: number | null;
}

/**
 * One record of a run's stream (ctx.stream), in the order written: `seq` counts a (run, stream)'s
 * records from 0. A `chunk` is at `offset` (offsets count the stream's chunks from 0); a `reset`
 * drops the stream back to `offset` (the chunks from there on were superseded: a redone step had
 * written them); a `close` ends the stream at `offset` chunks. `step`: the step keys in flight
 * when it was written (several joined by "\n"), or null outside any step.
 */
export interface StreamRecord {
  runId: string;
  stream: string;
  seq: number;
  kind: "chunk" | "reset" | "close";
  offset: number;
  /** The chunk as stored (encoded, sealed by the codec); null for a reset or close. */
  chunk: string | null;
  step: string | null;
  attempt: number;
  at: number;
}
