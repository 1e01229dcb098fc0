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

import type { AttemptEnding, AttemptRow, EventRow, ImportedRun, RunPatch, RunRow, StepOutcome, StepRow, StoredRun, StreamRecord } from "../types.js";
import { RunStates, type StepPatch } from "../state-machine.js";
import { StreamStates } from "../stream-states.js";

/** The format this code writes and the newest it reads. */
export const FORMAT_VERSION = 1;
export const HEADER_LINE = JSON.stringify({ steplog: "jsonl", version: FORMAT_VERSION });

export type { StepPatch };

export type JournalRecord =
  | { op: "create"; run: string; row: RunRow; attempt: AttemptRow; expiresAt: number; now: number }
  /** Runs imported whole (engine.import): `run` is the first one's id, `runs` every row of each. */
  | { op: "import"; run: string; runs: ImportedRun[] }
  /** Runs pruned (engine.prune): `run` is the first one's id, `runs` every id; each run's rows go. */
  | { op: "prune"; run: string; runs: string[] }
  /** A run queued for its turn (flow control): no attempt yet. */
  | { op: "enqueue"; run: string; row: RunRow; now: number }
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
  /** Records appended to a run's streams (ctx.stream). */
  | { op: "stream"; run: string; epoch: number; records: StreamRecord[] }
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

const OPS = new Set(["create", "import", "prune", "enqueue", "claim", "update", "intent", "outcome", "renew", "stream", "end"]);

/** The streams replayed beside a state's runs (a new state, as after the file was rewritten, starts with none). */
const streams = new WeakMap<JournalState, StreamStates>();

export function streamsOf(state: JournalState): StreamStates {
  let found = streams.get(state);
  if (!found) streams.set(state, (found = new StreamStates()));
  return found;
}

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
 * wrote after losing the file lock, and such a record is skipped. The rules are the shared
 * state machine's (../state-machine.ts), the memory store's too.
 */
export function apply(state: JournalState, record: JournalRecord): Error | undefined {
  const runs = new RunStates(state);
  switch (record.op) {
    case "create":
      return runs.create(record.row, record.attempt, { expiresAt: record.expiresAt, now: record.now });
    case "import": {
      // Journals written before streams were exported hold import records without them.
      const refused = runs.importRuns(record.runs);
      if (!refused) for (const run of record.runs) streamsOf(state).apply(run.streams ?? []);
      return refused;
    }
    case "prune": {
      const refused = runs.prune(record.runs);
      if (!refused) for (const id of record.runs) streamsOf(state).drop(id);
      return refused;
    }
    case "enqueue":
      return runs.enqueue(record.row, record.now);
    case "claim":
      return runs.claim(record.run, record.epoch, record.attempt, record.patch, record.expiresAt, record.now);
    case "update": {
      const { op: _op, run, ...changes } = record;
      return runs.update(run, changes);
    }
    case "intent":
      return runs.intent(record.run, record.epoch, record.row);
    case "outcome": {
      const { op: _op, run, step: _step, epoch, ...outcome } = record;
      return runs.outcome(run, epoch, outcome);
    }
    case "renew":
      return runs.renew(record.run, record.epoch, record.expiresAt, record.now);
    case "stream": {
      const refused = streamsOf(state).check(runs, record.run, record.epoch, record.records);
      if (!refused) streamsOf(state).apply(record.records);
      return refused;
    }
    case "end": {
      const { run, epoch, attempt, ending, endedAt, error, patch, wakeOnEvent, reused } = record;
      return runs.end(run, epoch, {
        attempt,
        ending,
        endedAt,
        error,
        run: patch,
        ...(wakeOnEvent === undefined ? {} : { wakeOnEvent }),
        ...(reused ? { reused } : {}),
      });
    }
  }
}
