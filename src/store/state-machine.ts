/**
 * The store contract as an in-memory state machine: runs by id, and every change the contract
 * allows, each checked (the fence rule, an outcome needs its open intent, an event is consumed
 * once) and applied whole or not at all. The memory store is this machine over a Map; the JSONL
 * store replays its journal through it and runs every write through it before appending it, so
 * both agree with each other by construction. A change that is refused returns its error and
 * leaves the state as it was.
 */

import { LeaseLostError } from "../base/errors.js";
import { ENDED_STATUSES } from "./types.js";
import { chooseGroups } from "./prune-groups.js";
import type {
  AttemptEnd,
  AttemptRow,
  ClaimDecision,
  ClaimJudge,
  EventRow,
  FlowFacts,
  FlowQuery,
  ImportedRun,
  PruneJudge,
  PrunedRows,
  RunCursor,
  RunFilter,
  RunListing,
  RunPatch,
  RunRow,
  StepOutcome,
  StepRow,
  StoredRun,
  WorkflowCount,
} from "./types.js";

export type StepPatch = Partial<Omit<StepRow, "runId" | "seq">>;

export interface RunChanges {
  patch?: RunPatch;
  updateSteps?: Array<{ seq: number; patch: StepPatch }>;
  appendSteps?: StepRow[];
  appendEvents?: EventRow[];
  /** Release the lease and raise its epoch. */
  fenceOut?: { now: number };
}

/**
 * A listing's limit as every store reads it: whole (rounded down), none below 0, and a limit
 * too large to mean anything (Infinity, 1e300) is no limit. Undefined: every run.
 */
export function listLimit(limit: number | undefined): number | undefined {
  if (limit === undefined) return undefined;
  if (Number.isNaN(limit) || limit <= 0) return 0;
  return limit >= Number.MAX_SAFE_INTEGER ? undefined : Math.floor(limit);
}

/** Whether a run is in a listing with this filter (limit aside). */
export function listed(run: RunRow, filter: RunFilter): boolean {
  if (filter.status && !filter.status.includes(run.status)) return false;
  if (filter.workflow !== undefined && run.workflow !== filter.workflow) return false;
  if (filter.dueBy !== undefined && (run.wakeAt === null || run.wakeAt > filter.dueBy)) return false;
  if (filter.parent !== undefined && run.parent !== filter.parent) return false;
  if (filter.waitingKind !== undefined && waitingKindOf(run.waitingFor) !== filter.waitingKind) return false;
  if (filter.idContains !== undefined && !run.id.includes(filter.idContains)) return false;
  if (filter.after !== undefined && !listedAfter(run, filter.after)) return false;
  return true;
}

/** Whether a run comes after the cursor in the newest-first order (older, or as old with a greater id). */
export function listedAfter(run: RunRow, cursor: RunCursor): boolean {
  return run.createdAt < cursor.createdAt || (run.createdAt === cursor.createdAt && run.id > cursor.id);
}

/** countRuns from listings: how many per workflow. */
export function countByWorkflow(runs: Iterable<RunRow>): WorkflowCount[] {
  const counts = new Map<string, number>();
  for (const run of runs) counts.set(run.workflow, (counts.get(run.workflow) ?? 0) + 1);
  return [...counts].map(([workflow, runs]) => ({ workflow, runs }));
}

/** The `kind` of a run's waitingFor text, or undefined (none, or not JSON). */
function waitingKindOf(text: string | null): string | undefined {
  if (text === null) return undefined;
  try {
    const kind = (JSON.parse(text) as { kind?: unknown }).kind;
    return typeof kind === "string" ? kind : undefined;
  } catch {
    return undefined;
  }
}

/** Newest first; a listing of due runs goes highest priority first, then oldest wake time first (so none is starved); ties by id. */
export function byListingOrder(filter: RunFilter): (a: RunListing, b: RunListing) => number {
  const byId = (a: RunListing, b: RunListing) => (a.run.id < b.run.id ? -1 : a.run.id > b.run.id ? 1 : 0);
  return filter.dueBy !== undefined
    ? (a, b) => (b.run.priority ?? 0) - (a.run.priority ?? 0) || (a.run.wakeAt ?? 0) - (b.run.wakeAt ?? 0) || byId(a, b)
    : (a, b) => b.run.createdAt - a.run.createdAt || byId(a, b);
}

/** The fence rule of every attempt write: the run's lease still at this epoch, and held. */
export function fenceRefusal(current: StoredRun | undefined, runId: string, epoch: number, what: string): LeaseLostError | undefined {
  if (!current || current.lease?.epoch !== epoch || current.lease.attempt === null) {
    return new LeaseLostError(runId, undefined, `${what} refused: the lease epoch is no longer ${epoch}`);
  }
  return undefined;
}

/** Invariant errors: a change the engine never asks for (a bug, or a journal line written after a lost lock). */
const invariant = (message: string) => new Error(`steplog internal: ${message}`);

/** The verdict on a claim read under the run's lock: take or refuse (`wait` is an answer only to a snapshot read while another writes). */
export function claimVerdict(decide: ClaimJudge, current: StoredRun): Exclude<ClaimDecision, { kind: "wait" }> {
  const decision = decide(current);
  if (decision.kind === "wait")
    throw new Error(`claimRun(${JSON.stringify(current.run.id)}): decide answered "wait" to a run read under its lock (a steplog bug)`);
  return decision;
}

export class RunStates {
  /** `runs`: the state to work on (the JSONL store keeps its replayed map and applies records to it). */
  constructor(readonly runs: Map<string, StoredRun> = new Map()) {}

  get(runId: string): StoredRun | undefined {
    return this.runs.get(runId);
  }

  /** The run that takes a new run's place: the one with its id, or an active one with its dedupe key. */
  taken(run: RunRow): RunRow | undefined {
    const same = this.runs.get(run.id)?.run;
    if (same) return same;
    if (run.dedupeKey == null) return undefined;
    for (const other of this.runs.values()) {
      if (other.run.dedupeKey === run.dedupeKey && !ENDED_STATUSES.includes(other.run.status)) return other.run;
    }
    return undefined;
  }

  /** What a claim's FlowQuery asks of the other runs. */
  flowFacts(runId: string, query: FlowQuery): FlowFacts {
    const facts: FlowFacts = { holders: [], started: 0 };
    for (const other of this.runs.values()) {
      const { run, lease } = other;
      if (query.concurrencyKey !== undefined && run.id !== runId && run.concurrencyKey === query.concurrencyKey && lease && lease.attempt !== null) {
        const attempt = other.attempts.find((a) => a.number === lease.attempt);
        if (attempt) facts.holders.push(structuredClone({ lease, attempt }));
      }
      if (query.rate && run.rateKey === query.rate.key) facts.started += other.attempts.filter((a) => a.startedAt >= query.rate!.since).length;
    }
    return facts;
  }

  /** A run queued for its turn: no attempt yet, a free lease row at epoch 0. */
  enqueue(run: RunRow, now: number): Error | undefined {
    if (this.runs.has(run.id)) return invariant(`run ${run.id} exists already`);
    this.runs.set(run.id, {
      run: { ...run, parent: run.parent ?? null },
      attempts: [],
      steps: [],
      events: [],
      lease: { runId: run.id, epoch: 0, attempt: null, expiresAt: 0, heartbeatAt: now },
    });
    return undefined;
  }

  create(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Error | undefined {
    if (this.runs.has(run.id)) return invariant(`run ${run.id} exists already`);
    this.runs.set(run.id, {
      run: { ...run, parent: run.parent ?? null },
      attempts: [{ ...attempt }],
      steps: [],
      events: [],
      lease: { runId: run.id, epoch: 1, attempt: attempt.number, expiresAt: lease.expiresAt, heartbeatAt: lease.now },
    });
    return undefined;
  }

  /** The run that takes the place of one of these imported runs (taken's rule, each against the others too), or undefined. */
  importTaken(runs: ImportedRun[]): RunRow | undefined {
    const states = new RunStates(new Map(this.runs));
    for (const { run } of runs) {
      const existing = states.taken(run);
      if (existing) return existing;
      states.runs.set(run.id, { run, attempts: [], steps: [], events: [], lease: null });
    }
    return undefined;
  }

  /** Imported runs, each with every row given (engine.import); the caller has checked importTaken. */
  importRuns(runs: ImportedRun[]): Error | undefined {
    if (this.importTaken(runs)) return invariant(`an imported run's place is taken`);
    for (const { run, attempts, steps, events, lease } of runs) {
      this.runs.set(run.id, structuredClone({ run: { ...run, parent: run.parent ?? null }, attempts, steps, events, lease }));
    }
    return undefined;
  }

  /** A new holder: its attempt row, the run patched, the lease at `epoch` (one past the current one). */
  claim(runId: string, epoch: number, attempt: AttemptRow, patch: RunPatch, expiresAt: number, now: number): Error | undefined {
    const current = this.runs.get(runId);
    if (!current) return invariant(`claim of missing run ${runId}`);
    const expected = (current.lease?.epoch ?? 0) + 1;
    if (epoch !== expected) return new LeaseLostError(runId, attempt.number, `the claim for epoch ${epoch} came after epoch ${expected - 1}'s`);
    Object.assign(current.run, patch);
    current.attempts.push({ ...attempt });
    current.lease = { runId, epoch, attempt: attempt.number, expiresAt, heartbeatAt: now };
    return undefined;
  }

  /** A change outside any attempt (recover, resolve, send, …). */
  update(runId: string, changes: RunChanges): Error | undefined {
    const current = this.runs.get(runId);
    if (!current) return invariant(`update of missing run ${runId}`);
    for (const step of changes.appendSteps ?? []) {
      if (current.steps.some((s) => s.seq === step.seq)) return invariant(`run ${runId} has a step ${step.seq} already`);
    }
    for (const event of changes.appendEvents ?? []) {
      if (event.key != null && current.events.some((e) => e.key === event.key))
        return invariant(`event key ${JSON.stringify(event.key)} of run ${runId} was used already`);
    }
    if (changes.patch) Object.assign(current.run, changes.patch);
    for (const { seq, patch } of changes.updateSteps ?? []) {
      const row = current.steps.find((s) => s.seq === seq);
      if (row) Object.assign(row, patch);
    }
    for (const step of changes.appendSteps ?? []) current.steps.push({ ...step });
    for (const event of changes.appendEvents ?? []) current.events.push({ ...event, key: event.key ?? null });
    if (changes.fenceOut && current.lease) {
      current.lease = { ...current.lease, epoch: current.lease.epoch + 1, attempt: null, expiresAt: 0, heartbeatAt: changes.fenceOut.now };
    }
    return undefined;
  }

  intent(runId: string, epoch: number, row: StepRow): Error | undefined {
    const current = this.runs.get(runId);
    const refused = fenceRefusal(current, runId, epoch, "intent");
    if (refused) return refused;
    // Outcomes follow their intents closely: look from the end.
    if (findFromEnd(current!.steps, row.seq)) return invariant(`run ${runId} has a step ${row.seq} already`);
    current!.steps.push({ ...row });
    return undefined;
  }

  outcome(runId: string, epoch: number, outcome: StepOutcome): Error | undefined {
    const current = this.runs.get(runId);
    const refused = fenceRefusal(current, runId, epoch, "outcome");
    if (refused) return refused;
    const row = findFromEnd(current!.steps, outcome.seq);
    if (!row || row.status !== "intended") return invariant(`outcome for seq ${outcome.seq} of run ${runId} has no open intent`);
    const { consumes, spend, seq: _seq, ...fields } = outcome;
    if (consumes) {
      const event = current!.events.find((e) => e.seq === consumes.eventSeq);
      if (!event || event.consumedBy !== null) return invariant(`event ${consumes.eventSeq} of run ${runId} was consumed already`);
      event.consumedBy = consumes.by;
    }
    Object.assign(row, fields);
    if (spend) {
      for (const id of spend.runs) {
        const run = this.runs.get(id)?.run;
        if (!run) continue;
        run.spentUsd = (run.spentUsd ?? 0) + spend.usd;
        run.spentTokens = (run.spentTokens ?? 0) + spend.tokens;
      }
    }
    return undefined;
  }

  renew(runId: string, epoch: number, expiresAt: number, now: number): Error | undefined {
    const current = this.runs.get(runId);
    const refused = fenceRefusal(current, runId, epoch, "lease renewal");
    if (refused) return refused;
    current!.lease!.expiresAt = expiresAt;
    current!.lease!.heartbeatAt = now;
    return undefined;
  }

  /** The attempt's ending, the run patched and the lease released (its epoch kept). */
  end(runId: string, epoch: number, end: AttemptEnd): Error | undefined {
    const current = this.runs.get(runId);
    const refused = fenceRefusal(current, runId, epoch, "attempt ending");
    if (refused) return refused;
    const run = current!;
    const attempt = run.attempts.find((a) => a.number === end.attempt);
    if (attempt) Object.assign(attempt, { ending: end.ending, endedAt: end.endedAt, error: end.error }, end.reused ? { reused: [...end.reused] } : {});
    Object.assign(run.run, end.run);
    if (end.wakeOnEvent !== undefined && run.events.some((e) => e.name === end.wakeOnEvent && e.consumedBy === null)) run.run.wakeAt = end.endedAt;
    run.lease = { ...run.lease!, attempt: null, expiresAt: 0, heartbeatAt: end.endedAt };
    return undefined;
  }

  /** Runs pruned (pruneRuns, after its judge): every row of each goes. */
  prune(runIds: string[]): Error | undefined {
    for (const id of runIds) this.runs.delete(id);
    return undefined;
  }

  /** The groups pruneRuns would delete now, judged on copies (the judge may keep what it reads). */
  choosePrune(firsts: string[], approve: PruneJudge): PrunedRows {
    const children = new Map<string, string[]>();
    for (const { run } of this.runs.values()) if (run.parent != null) children.set(run.parent, [...(children.get(run.parent) ?? []), run.id]);
    const load = (id: string) => {
      const found = this.runs.get(id);
      return found ? structuredClone(found) : undefined;
    };
    return chooseGroups(firsts, { load, children: (id) => children.get(id) ?? [] }, approve);
  }

  /** The runs a filter lists, in listing order, limited; copies the caller may keep. */
  list(filter: RunFilter): RunListing[] {
    const out: RunListing[] = [];
    for (const { run, attempts, lease } of this.runs.values()) {
      if (listed(run, filter)) out.push(structuredClone({ run, lastAttempt: attempts.at(-1) ?? null, lease }));
    }
    out.sort(byListingOrder(filter));
    const limit = listLimit(filter.limit);
    return limit === undefined ? out : out.slice(0, limit);
  }

  /** How many runs a filter lists (its limit aside), per workflow. */
  count(filter: RunFilter): WorkflowCount[] {
    const runs: RunRow[] = [];
    for (const { run } of this.runs.values()) if (listed(run, filter)) runs.push(run);
    return countByWorkflow(runs);
  }
}

/** The step row with this seq: outcomes follow their intents closely, so look from the end. */
function findFromEnd(steps: StepRow[], seq: number): StepRow | undefined {
  for (let i = steps.length - 1; i >= 0; i--) if (steps[i]!.seq === seq) return steps[i];
  return undefined;
}
