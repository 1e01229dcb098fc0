/**
 * The memory store: the reference implementation of the Store contract, for tests.
 * Records live in this process only; a continue from another process finds nothing
 * (RUN_NOT_FOUND), never an empty run.
 */

import { randomUUID } from "node:crypto";
import type {
  AttemptEnd,
  AttemptRow,
  ClaimJudge,
  ClaimResult,
  Fence,
  FlowQuery,
  ImportedRun,
  Lease,
  PruneJudge,
  PrunedRows,
  RunFilter,
  RunListing,
  RunRow,
  RunUpdate,
  StepOutcome,
  StepRow,
  Store,
  StoredRun,
  StreamRecord,
  WorkflowCount,
} from "./types.js";
import { StreamStates } from "./stream-states.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";
import { claimVerdict, RunStates } from "./state-machine.js";
import { REJECTS_ONLY_ERRORS } from "./runtime.js";

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
  readonly [REJECTS_ONLY_ERRORS] = true;
  readonly durable = false;
  readonly multiProcess = false;
  readonly #states = new RunStates();
  readonly #streams = new StreamStates();
  readonly #turns = new Map<string, { holder: string; until: number }>();
  /** Writes asked for so far: the change marker (a refused one counts too, which the contract allows). */
  #writes = 0;

  /** Each memory store is its own storage, whatever its name (random: the ESM and CJS builds count apart). */
  readonly #id = `memory:${randomUUID()}`;

  constructor(readonly location: string) {}

  async storageId(): Promise<string> {
    return this.#id;
  }

  async createRun(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Promise<Lease | { exists: RunRow }> {
    this.#writes++;
    const existing = this.#states.taken(run);
    if (existing) return { exists: structuredClone(existing) };
    must(this.#states.create(run, attempt, lease));
    return { runId: run.id, epoch: 1, attempt: attempt.number, expiresAt: lease.expiresAt };
  }

  async enqueueRun(run: RunRow, now: number): Promise<{ queued: true } | { exists: RunRow }> {
    this.#writes++;
    const existing = this.#states.taken(run);
    if (existing) return { exists: structuredClone(existing) };
    must(this.#states.enqueue(run, now));
    return { queued: true };
  }

  async importRuns(runs: ImportedRun[]): Promise<{ imported: true } | { exists: RunRow }> {
    this.#writes++;
    const existing = this.#states.importTaken(runs);
    if (existing) return { exists: structuredClone(existing) };
    must(this.#states.importRuns(runs));
    for (const run of runs) this.#streams.apply(run.streams ?? []);
    return { imported: true };
  }

  async pruneRuns(runIds: string[], approve: PruneJudge): Promise<PrunedRows> {
    this.#writes++;
    const rows = this.#states.choosePrune(runIds, approve);
    must(this.#states.prune(rows.ids));
    for (const id of rows.ids) this.#streams.drop(id);
    return rows;
  }

  /** One process: a turn is this store's to give. */
  async takeTurn(name: string, holder: string, now: number, until: number): Promise<boolean> {
    const held = this.#turns.get(name);
    if (held && held.holder !== holder && held.until > now) return false;
    this.#turns.set(name, { holder, until });
    return true;
  }

  async claimRun(runId: string, decide: ClaimJudge, flow?: FlowQuery): Promise<ClaimResult> {
    this.#writes++;
    const current = this.#states.get(runId);
    if (!current) return { kind: "missing" };
    const decision = claimVerdict(decide, { ...structuredClone(current), ...(flow ? { flow: this.#states.flowFacts(runId, flow) } : {}) });
    if (decision.kind === "refuse") {
      if (decision.run) must(this.#states.update(runId, { patch: decision.run }));
      throw decision.error;
    }
    const epoch = (current.lease?.epoch ?? 0) + 1;
    must(this.#states.claim(runId, epoch, decision.attempt, decision.run, decision.expiresAt, decision.now));
    return { kind: "taken", state: structuredClone(current), lease: { runId, epoch, attempt: decision.attempt.number, expiresAt: decision.expiresAt } };
  }

  async updateRun<T>(runId: string, decide: (current: StoredRun) => RunUpdate<T>): Promise<T | undefined> {
    this.#writes++;
    const current = this.#states.get(runId);
    if (!current) return undefined;
    const update = decide(structuredClone(current));
    if (update.error) throw update.error;
    const { result, error: _error, run: patch, ...changes } = update;
    must(this.#states.update(runId, { ...changes, ...(patch ? { patch } : {}) }));
    return result;
  }

  async loadRunRow(runId: string): Promise<RunRow | undefined> {
    const current = this.#states.get(runId);
    return current ? { ...current.run } : undefined;
  }

  async loadRun(runId: string): Promise<StoredRun | undefined> {
    const current = this.#states.get(runId);
    return current ? structuredClone(current) : undefined;
  }

  async listRuns(filter: RunFilter): Promise<RunListing[]> {
    return this.#states.list(filter);
  }

  async countRuns(filter: RunFilter): Promise<WorkflowCount[]> {
    return this.#states.count(filter);
  }

  async changeMarker(): Promise<string> {
    return String(this.#writes);
  }

  async writeIntent(fence: Fence, step: StepRow): Promise<void> {
    this.#writes++;
    must(this.#states.intent(fence.runId, fence.epoch, step));
  }

  async writeOutcome(fence: Fence, outcome: StepOutcome): Promise<void> {
    this.#writes++;
    must(this.#states.outcome(fence.runId, fence.epoch, outcome));
  }

  async renewLease(fence: Fence, expiresAt: number, now: number): Promise<void> {
    this.#writes++;
    must(this.#states.renew(fence.runId, fence.epoch, expiresAt, now));
  }

  async appendStream(fence: Fence, records: StreamRecord[]): Promise<void> {
    this.#writes++;
    must(this.#streams.check(this.#states, fence.runId, fence.epoch, records));
    this.#streams.apply(records);
  }

  async readStream(runId: string, stream: string, afterSeq: number, limit: number): Promise<StreamRecord[]> {
    return this.#streams.read(runId, stream, afterSeq, limit);
  }

  async streamNames(runId: string): Promise<string[]> {
    return this.#streams.names(runId);
  }

  async endAttempt(fence: Fence, end: AttemptEnd): Promise<void> {
    this.#writes++;
    must(this.#states.end(fence.runId, fence.epoch, end));
  }

  async close(): Promise<void> {}
}

/** A change the state machine refused: its error, thrown. */
function must(refused: Error | undefined): void {
  if (refused) throw refused;
}
