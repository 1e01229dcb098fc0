/**
 * The JSONL journal's line format and its replay. Line 1 is a header with the format version;
 * every later line is one mutation, a whole transaction of its own, so any prefix of complete
 * lines is a state the store really passed through. `apply` is the one place a record changes
 * the state: writers run it before appending (a refused write appends nothing) and readers
 * run it while replaying, so the two always agree. The semantics mirror the memory store.
 *
 * Every record begins `{"op":…,"run":"<id>"`, and steps carry `"step":"<key>"`, so
 * `grep '"run":"r1"' steplog.jsonl` shows one run's history.
 */

import { LeaseLostError } from "../../errors.js";
import type { AttemptEnding, AttemptRow, EventRow, RunPatch, RunRow, StepOutcome, StepRow, StoredRun } from "../types.js";

/** The format this code writes and the newest it reads. */
export const FORMAT_VERSION = 1;
export const HEADER_LINE = JSON.stringify({ steplog: "jsonl", version: FORMAT_VERSION });

export type StepPatch = Partial<Omit<StepRow, "runId" | "seq">>;

export type JournalRecord =
  | { op: "create"; run: string; row: RunRow; attempt: AttemptRow; expiresAt: number; now: number }
  | { op: "claim"; run: string; epoch: number; attempt: AttemptRow; patch: RunPatch; expiresAt: number; now: number }
  | {
      op: "update";
      run: string;
      patch?: RunPatch;
      updateSteps?: Array<{ seq: number; patch: StepPatch }>;
      appendSteps?: StepRow[];
      appendEvents?: EventRow[];
      fenceOut?: { now: number };
    }
  | { op: "intent"; run: string; step: string; epoch: number; row: StepRow }
  | ({ op: "outcome"; run: string; step: string | null; epoch: number } & StepOutcome)
  | { op: "renew"; run: string; epoch: number; expiresAt: number; now: number }
  | {
      op: "end";
      run: string;
      epoch: number;
      attempt: number;
      ending: AttemptEnding;
      endedAt: number;
      error: string | null;
      patch: RunPatch;
      wakeOnEvent?: string;
      reused?: string[];
    };

export type JournalState = Map<string, StoredRun>;

const OPS = new Set(["create", "claim", "update", "intent", "outcome", "renew", "end"]);

export type Header = { version: number };

/** The header's version, or undefined when `value` is not a steplog JSONL header. */
export function parseHeader(value: unknown): Header | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { steplog, version } = value as { steplog?: unknown; version?: unknown };
  if (steplog !== "jsonl" || typeof version !== "number" || !Number.isInteger(version) || version < 1) return undefined;
  return { version };
}

/** The record, or a reason it is not one (for the STORE_UNREADABLE message). */
export function checkRecord(value: unknown): JournalRecord | string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "is not a JSON object";
  const { op, run } = value as { op?: unknown; run?: unknown };
  if (typeof op !== "string" || !OPS.has(op)) return `has an unknown op ${JSON.stringify(op) ?? "(none)"}`;
  if (typeof run !== "string") return `has op ${op} but no run id`;
  return value as JournalRecord;
}

/**
 * Apply one record to the state, or return why it is refused (the state untouched). Refusals
 * are what a live write is rejected with; in a replay they can only come from a process that
 * wrote after losing the file lock, and such a record is skipped.
 */
export function apply(state: JournalState, record: JournalRecord): Error | undefined {
  const current = state.get(record.run);
  switch (record.op) {
    case "create": {
      if (current) return new Error(`steplog internal: run ${record.run} exists already`);
      state.set(record.run, {
        run: { ...record.row },
        attempts: [{ ...record.attempt }],
        steps: [],
        events: [],
        lease: { runId: record.run, epoch: 1, attempt: record.attempt.number, expiresAt: record.expiresAt, heartbeatAt: record.now },
      });
      return undefined;
    }
    case "claim": {
      if (!current) return new Error(`steplog internal: claim of missing run ${record.run}`);
      const expected = (current.lease?.epoch ?? 0) + 1;
      if (record.epoch !== expected) return new LeaseLostError(record.run, record.attempt.number, `the claim for epoch ${record.epoch} came after epoch ${expected - 1}'s`);
      Object.assign(current.run, record.patch);
      current.attempts.push({ ...record.attempt });
      current.lease = { runId: record.run, epoch: record.epoch, attempt: record.attempt.number, expiresAt: record.expiresAt, heartbeatAt: record.now };
      return undefined;
    }
    case "update": {
      if (!current) return new Error(`steplog internal: update of missing run ${record.run}`);
      for (const step of record.appendSteps ?? []) {
        if (current.steps.some((s) => s.seq === step.seq)) return new Error(`steplog internal: run ${record.run} has a step ${step.seq} already`);
      }
      if (record.patch) Object.assign(current.run, record.patch);
      for (const { seq, patch } of record.updateSteps ?? []) {
        const row = current.steps.find((s) => s.seq === seq);
        if (row) Object.assign(row, patch);
      }
      for (const step of record.appendSteps ?? []) current.steps.push({ ...step });
      for (const event of record.appendEvents ?? []) current.events.push({ ...event });
      if (record.fenceOut && current.lease) {
        current.lease = { ...current.lease, epoch: current.lease.epoch + 1, attempt: null, expiresAt: 0, heartbeatAt: record.fenceOut.now };
      }
      return undefined;
    }
    case "intent": {
      const refused = fenceRefusal(current, record, "intent");
      if (refused) return refused;
      if (current!.steps.some((s) => s.seq === record.row.seq)) return new Error(`steplog internal: run ${record.run} has a step ${record.row.seq} already`);
      current!.steps.push({ ...record.row });
      return undefined;
    }
    case "outcome": {
      const refused = fenceRefusal(current, record, "outcome");
      if (refused) return refused;
      const row = current!.steps.find((s) => s.seq === record.seq);
      if (!row || row.status !== "intended") return new Error(`steplog internal: outcome for seq ${record.seq} of run ${record.run} has no open intent`);
      const { consumes } = record;
      let event: EventRow | undefined;
      if (consumes) {
        event = current!.events.find((e) => e.seq === consumes.eventSeq);
        if (!event || event.consumedBy !== null) return new Error(`steplog internal: event ${consumes.eventSeq} of run ${record.run} was consumed already`);
      }
      if (event && consumes) event.consumedBy = consumes.by;
      Object.assign(row, {
        status: record.status,
        value: record.value,
        error: record.error,
        endedAt: record.endedAt,
        calls: record.calls,
        resolution: record.resolution,
        usage: record.usage,
      });
      return undefined;
    }
    case "renew": {
      const refused = fenceRefusal(current, record, "lease renewal");
      if (refused) return refused;
      current!.lease!.expiresAt = record.expiresAt;
      current!.lease!.heartbeatAt = record.now;
      return undefined;
    }
    case "end": {
      const refused = fenceRefusal(current, record, "attempt ending");
      if (refused) return refused;
      const run = current!;
      const attempt = run.attempts.find((a) => a.number === record.attempt);
      if (attempt) Object.assign(attempt, { ending: record.ending, endedAt: record.endedAt, error: record.error }, record.reused ? { reused: [...record.reused] } : {});
      Object.assign(run.run, record.patch);
      if (record.wakeOnEvent !== undefined && run.events.some((e) => e.name === record.wakeOnEvent && e.consumedBy === null)) run.run.wakeAt = record.endedAt;
      run.lease = { ...run.lease!, attempt: null, expiresAt: 0, heartbeatAt: record.endedAt };
      return undefined;
    }
  }
}

/** The fence rule of every attempt write: the lease still at this epoch and held. */
function fenceRefusal(current: StoredRun | undefined, record: { run: string; epoch: number }, what: string): Error | undefined {
  if (!current || current.lease?.epoch !== record.epoch || current.lease.attempt === null) {
    return new LeaseLostError(record.run, undefined, `${what} refused: the lease epoch is no longer ${record.epoch}`);
  }
  return undefined;
}
