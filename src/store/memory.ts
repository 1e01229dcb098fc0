/**
 * The memory store: the reference implementation of the Store contract, for tests.
 * Records live in this process only; a continue from another process finds nothing
 * (RUN_NOT_FOUND), never an empty run.
 */

import { randomUUID } from "node:crypto";
import { LeaseLostError } from "../errors.js";
import type {
  AttemptEnd,
  AttemptRow,
  ClaimDecision,
  ClaimResult,
  Fence,
  Lease,
  RunFilter,
  RunListing,
  RunRow,
  RunUpdate,
  StepOutcome,
  StepRow,
  Store,
  StoredRun,
} from "./types.js";
import { checkKnownKeys, type KnownKeys } from "../options.js";

export interface MemoryStoreOptions {
  /** Shown in messages. Default "memory store #N". */
  name?: string;
}

let created = 0;

export function memoryStore(options: MemoryStoreOptions = {}): Store {
  checkKnownKeys("memoryStore", options, { name: true } satisfies KnownKeys<MemoryStoreOptions>);
  created++;
  return new MemoryStore(options.name ?? `memory store #${created}`);
}

class MemoryStore implements Store {
  readonly kind = "memory";
  readonly durable = false;
  readonly #runs = new Map<string, StoredRun>();

  /** Each memory store is its own storage, whatever its name (random: the ESM and CJS builds count apart). */
  readonly #id = `memory:${randomUUID()}`;

  constructor(readonly location: string) {}

  async storageId(): Promise<string> {
    return this.#id;
  }

  async createRun(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Promise<Lease | { exists: RunRow }> {
    const existing = this.#runs.get(run.id);
    if (existing) return { exists: structuredClone(existing.run) };
    this.#runs.set(run.id, {
      run: { ...run },
      attempts: [{ ...attempt }],
      steps: [],
      events: [],
      lease: { runId: run.id, epoch: 1, attempt: attempt.number, expiresAt: lease.expiresAt, heartbeatAt: lease.now },
    });
    return { runId: run.id, epoch: 1, attempt: attempt.number, expiresAt: lease.expiresAt };
  }

  async claimRun(runId: string, decide: (current: StoredRun) => ClaimDecision): Promise<ClaimResult> {
    const current = this.#runs.get(runId);
    if (!current) return { kind: "missing" };
    const decision = decide(structuredClone(current));
    if (decision.kind === "refuse") {
      if (decision.run) Object.assign(current.run, decision.run);
      throw decision.error;
    }
    Object.assign(current.run, decision.run);
    current.attempts.push({ ...decision.attempt });
    const epoch = (current.lease?.epoch ?? 0) + 1;
    current.lease = { runId, epoch, attempt: decision.attempt.number, expiresAt: decision.expiresAt, heartbeatAt: decision.now };
    return {
      kind: "taken",
      state: structuredClone(current),
      lease: { runId, epoch, attempt: decision.attempt.number, expiresAt: decision.expiresAt },
    };
  }

  async updateRun<T>(runId: string, decide: (current: StoredRun) => RunUpdate<T>): Promise<T | undefined> {
    const current = this.#runs.get(runId);
    if (!current) return undefined;
    const update = decide(structuredClone(current));
    if (update.error) throw update.error;
    if (update.run) Object.assign(current.run, update.run);
    for (const { seq, patch } of update.updateSteps ?? []) {
      const row = current.steps.find((s) => s.seq === seq);
      if (row) Object.assign(row, patch);
    }
    for (const step of update.appendSteps ?? []) current.steps.push({ ...step });
    for (const event of update.appendEvents ?? []) current.events.push({ ...event });
    if (update.fenceOut && current.lease) {
      current.lease = { ...current.lease, epoch: current.lease.epoch + 1, attempt: null, expiresAt: 0, heartbeatAt: update.fenceOut.now };
    }
    return update.result;
  }

  async loadRunRow(runId: string): Promise<RunRow | undefined> {
    const current = this.#runs.get(runId);
    return current ? { ...current.run } : undefined;
  }

  async loadRun(runId: string): Promise<StoredRun | undefined> {
    const current = this.#runs.get(runId);
    return current ? structuredClone(current) : undefined;
  }

  async listRuns(filter: RunFilter): Promise<RunListing[]> {
    const out: RunListing[] = [];
    for (const { run, attempts, lease } of this.#runs.values()) {
      if (filter.status && !filter.status.includes(run.status)) continue;
      if (filter.workflow !== undefined && run.workflow !== filter.workflow) continue;
      if (filter.dueBy !== undefined && (run.wakeAt === null || run.wakeAt > filter.dueBy)) continue;
      out.push(structuredClone({ run, lastAttempt: attempts.at(-1) ?? null, lease }));
    }
    // Newest first; a listing of due runs goes oldest due first, so none is starved.
    if (filter.dueBy !== undefined) out.sort((a, b) => (a.run.wakeAt ?? 0) - (b.run.wakeAt ?? 0) || (a.run.id < b.run.id ? -1 : 1));
    else out.sort((a, b) => b.run.createdAt - a.run.createdAt || (a.run.id < b.run.id ? -1 : 1));
    return filter.limit === undefined ? out : out.slice(0, filter.limit);
  }

  #fenced(fence: Fence, what: string): StoredRun {
    const current = this.#runs.get(fence.runId);
    if (!current || current.lease?.epoch !== fence.epoch || current.lease.attempt === null) {
      throw new LeaseLostError(fence.runId, undefined, `${what} refused: the lease epoch is no longer ${fence.epoch}`);
    }
    return current;
  }

  async writeIntent(fence: Fence, step: StepRow): Promise<void> {
    this.#fenced(fence, "intent").steps.push({ ...step });
  }

  async writeOutcome(fence: Fence, outcome: StepOutcome): Promise<void> {
    const current = this.#fenced(fence, "outcome");
    const row = findFromEnd(current.steps, outcome.seq);
    if (!row || row.status !== "intended") throw new Error(`steplog internal: outcome for seq ${outcome.seq} has no open intent`);
    const { consumes, ...fields } = outcome;
    if (consumes) {
      const event = current.events.find((e) => e.seq === consumes.eventSeq);
      if (!event || event.consumedBy !== null) throw new Error(`steplog internal: event ${consumes.eventSeq} of run ${fence.runId} was consumed already`);
      event.consumedBy = consumes.by;
    }
    Object.assign(row, fields);
  }

  async renewLease(fence: Fence, expiresAt: number, now: number): Promise<void> {
    const lease = this.#fenced(fence, "lease renewal").lease!;
    lease.expiresAt = expiresAt;
    lease.heartbeatAt = now;
  }

  async endAttempt(fence: Fence, end: AttemptEnd): Promise<void> {
    const current = this.#fenced(fence, "attempt ending");
    const attempt = current.attempts.find((a) => a.number === end.attempt);
    if (attempt) Object.assign(attempt, { ending: end.ending, endedAt: end.endedAt, error: end.error }, end.reused ? { reused: [...end.reused] } : {});
    Object.assign(current.run, end.run);
    if (end.wakeOnEvent !== undefined && current.events.some((e) => e.name === end.wakeOnEvent && e.consumedBy === null)) current.run.wakeAt = end.endedAt;
    current.lease = { ...current.lease!, attempt: null, expiresAt: 0, heartbeatAt: end.endedAt };
  }

  async close(): Promise<void> {}
}

/** The step row with this seq: outcomes follow their intents closely, so look from the end. */
function findFromEnd(steps: StepRow[], seq: number): StepRow | undefined {
  for (let i = steps.length - 1; i >= 0; i--) if (steps[i]!.seq === seq) return steps[i];
  return undefined;
}
