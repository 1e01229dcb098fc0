/**
 * The store as the engine uses it: every store an engine is given is wrapped here once, so the
 * engine meets one shape whatever wrote the store. The wrapper
 *
 * - fills in the optional members (`loadRunRow` from `loadRun`, `storageId` from `location`,
 *   `countRuns`, and a listing `after` a cursor or by text in the id, from a listing of every run) and the capability
 *   flags' defaults (STORE_DEFAULTS);
 * - guards every call after `close()` with one error, STORE_CLOSED, and closes the store once;
 * - turns a rejection that is not an Error (a custom store's `throw "busy"`) into one that names
 *   the store and the call, so every message can say where it came from.
 *
 * A store object gets one wrapper (kept in a WeakMap), so two engines given the same object share
 * its closed state, as they share the object.
 */

import { InvalidOptionError, PruneUnsupportedError, StoreClosedError, StreamsUnsupportedError } from "../base/errors.js";
import type {
  AttemptEnd,
  AttemptRow,
  ClaimJudge,
  ClaimResult,
  Fence,
  FlowQuery,
  ImportedRun,
  Lease,
  LeaseRow,
  PruneJudge,
  PrunedRows,
  RunFilter,
  RunListing,
  RunRow,
  RunUpdate,
  StepOutcome,
  StepRow,
  Store,
  StoreCapabilities,
  StoredRun,
  StreamRecord,
  WorkflowCount,
} from "./types.js";
import { countByWorkflow, listed, listLimit } from "./state-machine.js";

/**
 * Set by steplog's own stores, which reject only with Errors: their calls go straight through
 * (the hot path of every step's intent and outcome), with only the closed guard in front.
 */
export const REJECTS_ONLY_ERRORS: unique symbol = Symbol("steplog.rejectsOnlyErrors");

/** What a store that does not say has. */
export const STORE_DEFAULTS: StoreCapabilities = { durable: false, multiProcess: false, leaseAge: false };

const wrapped = new WeakMap<Store, RuntimeStore>();

/** The engine's view of `store`: the same wrapper every time it is asked for the same object. */
export function runtimeStore(store: Store): RuntimeStore {
  if (store instanceof RuntimeStore) return store;
  let runtime = wrapped.get(store);
  if (!runtime) wrapped.set(store, (runtime = new RuntimeStore(store)));
  return runtime;
}

export class RuntimeStore implements Store {
  readonly kind: string;
  readonly location: string;
  readonly durable: boolean;
  readonly multiProcess: boolean;
  readonly leaseAge: boolean;
  readonly #inner: Store;
  readonly #direct: boolean;
  #closing: Promise<void> | undefined;
  /** Markers handed out for a store without changeMarker. */
  #markers = 0;

  constructor(inner: Store) {
    this.#inner = inner;
    this.#direct = (inner as { [REJECTS_ONLY_ERRORS]?: boolean })[REJECTS_ONLY_ERRORS] === true;
    this.kind = inner.kind;
    this.location = inner.location;
    this.durable = inner.durable ?? STORE_DEFAULTS.durable;
    this.multiProcess = inner.multiProcess ?? STORE_DEFAULTS.multiProcess;
    this.leaseAge = inner.leaseAge ?? STORE_DEFAULTS.leaseAge;
  }

  /** Tell the store an engine's lease length (Store.useLease), if it wants to know. */
  useLease(leaseMs: number): void {
    this.#inner.useLease?.(leaseMs);
  }

  /** The store the user gave. */
  get inner(): Store {
    return this.#inner;
  }

  /** The store keeps streams (it reads them): export asks it for the run's streams. */
  get keepsStreams(): boolean {
    return this.#inner.readStream !== undefined;
  }

  get closed(): boolean {
    return this.#closing !== undefined;
  }

  async storageId(): Promise<string> {
    this.#open("storageId");
    return this.#inner.storageId ? String(await this.#call("storageId", () => this.#inner.storageId!())) : this.location;
  }

  createRun(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Promise<Lease | { exists: RunRow }> {
    return this.#call("createRun", () => this.#inner.createRun(run, attempt, lease));
  }

  /** Only for a store that implements it: flow control queues runs (INVALID_OPTION otherwise, before anything is written). */
  enqueueRun(run: RunRow, now: number): Promise<{ queued: true } | { exists: RunRow }> {
    const inner = this.#inner;
    if (!inner.enqueueRun) {
      return Promise.reject(
        new InvalidOptionError(
          `The ${this.kind} store at ${this.location} cannot queue runs (it has no enqueueRun), so workflow ${JSON.stringify(run.workflow)}'s concurrency and rate limits cannot be held on it. Nothing was recorded; use steplog's SQLite, Postgres, JSONL or memory store, or implement enqueueRun (docs/stores.md).`,
          { runId: run.id },
        ),
      );
    }
    return this.#call("enqueueRun", () => inner.enqueueRun!(run, now));
  }

  /** Only for a store that implements it: engine.import (INVALID_OPTION otherwise, before anything is written). */
  importRuns(runs: ImportedRun[]): Promise<{ imported: true } | { exists: RunRow }> {
    const inner = this.#inner;
    if (!inner.importRuns) {
      return Promise.reject(
        new InvalidOptionError(
          `The ${this.kind} store at ${this.location} cannot import runs (it has no importRuns). Nothing was recorded; import into steplog's SQLite, Postgres, JSONL or memory store, or implement importRuns (docs/stores.md).`,
          { runId: runs[0]?.run.id },
        ),
      );
    }
    // Runs with streams go only where streams are kept (not dropped on the way).
    const streamed = runs.find((r) => (r.streams?.length ?? 0) > 0);
    if (streamed && !inner.appendStream) return Promise.reject(new StreamsUnsupportedError(this.kind, this.location, "appendStream", streamed.run.id));
    return this.#call("importRuns", () => inner.importRuns!(runs));
  }

  /** Only for a store that implements it: engine.prune (PRUNE_UNSUPPORTED otherwise, before anything is deleted). */
  pruneRuns(runIds: string[], approve: PruneJudge): Promise<PrunedRows> {
    const inner = this.#inner;
    if (!inner.pruneRuns) return Promise.reject(new PruneUnsupportedError(this.kind, this.location));
    return this.#call("pruneRuns", () => inner.pruneRuns!(runIds, approve));
  }

  /** Whether the store can prune (engine.prune asks before it reads anything). */
  get prunes(): boolean {
    return typeof this.#inner.pruneRuns === "function";
  }

  /** The store's turn (Store.takeTurn); undefined for a store without it (the engine keeps turns per process then). */
  sharedTurn(name: string, holder: string, now: number, until: number): Promise<boolean> | undefined {
    const inner = this.#inner;
    if (!inner.takeTurn) return undefined;
    return this.#call("takeTurn", () => inner.takeTurn!(name, holder, now, until));
  }

  claimRun(runId: string, decide: ClaimJudge, flow?: FlowQuery): Promise<ClaimResult> {
    const judge: ClaimJudge = this.leaseAge ? decide : (current, seen) => decide(this.#undeclared(current), seen);
    return this.#call("claimRun", () => (flow ? this.#inner.claimRun(runId, judge, flow) : this.#inner.claimRun(runId, judge)));
  }

  updateRun<T>(runId: string, decide: (current: StoredRun) => RunUpdate<T>): Promise<T | undefined> {
    return this.#call("updateRun", () => this.#inner.updateRun(runId, decide));
  }

  loadRun(runId: string): Promise<StoredRun | undefined> {
    return this.#call("loadRun", async () => {
      const found = await this.#inner.loadRun(runId);
      return found && this.#undeclared(found);
    });
  }

  loadRunRow(runId: string): Promise<RunRow | undefined> {
    const inner = this.#inner;
    return this.#call("loadRunRow", async () => (inner.loadRunRow ? inner.loadRunRow(runId) : (await inner.loadRun(runId))?.run));
  }

  listRuns(filter: RunFilter): Promise<RunListing[]> {
    return this.#call("listRuns", async () => {
      const listings = this.#pages ? await this.#inner.listRuns(filter) : await this.#listAfter(filter);
      return this.leaseAge ? listings : listings.map((l) => (l.lease && "ageMs" in l.lease ? { ...l, lease: withoutAge(l.lease) } : l));
    });
  }

  countRuns(filter: RunFilter): Promise<WorkflowCount[]> {
    return this.#call("countRuns", async () =>
      this.#pages ? this.#inner.countRuns!(filter) : countByWorkflow((await this.#listAfter({ ...filter, limit: undefined })).map((l) => l.run)),
    );
  }

  /** The store's change marker; for a store without one, a new marker every time (so its reader always reads again). */
  changeMarker(): Promise<string> {
    const inner = this.#inner;
    return this.#call("changeMarker", async () => (inner.changeMarker ? String(await inner.changeMarker()) : `unknown:${++this.#markers}`));
  }

  /** A store with countRuns lists after a cursor and by text in the id itself (the contract): for another, both and the limit are applied here, over all it lists. */
  get #pages(): boolean {
    return typeof this.#inner.countRuns === "function";
  }

  async #listAfter(filter: RunFilter): Promise<RunListing[]> {
    const { after, idContains, limit: _limit, ...rest } = filter;
    if (after === undefined && idContains === undefined) return this.#inner.listRuns(filter);
    const wanted = (await this.#inner.listRuns(rest)).filter((l) => listed(l.run, { after, idContains }));
    const limit = listLimit(filter.limit);
    return limit === undefined ? wanted : wanted.slice(0, limit);
  }

  // The two writes of every step: for a store whose promises reject only with Errors, called
  // straight through (no closure a call); any other goes the guarded way (#call).
  writeIntent(fence: Fence, step: StepRow): Promise<void> {
    if (this.#direct && this.#closing === undefined) return this.#straight("writeIntent", this.#inner.writeIntent, fence, step);
    return this.#call("writeIntent", () => this.#inner.writeIntent(fence, step));
  }

  writeOutcome(fence: Fence, outcome: StepOutcome): Promise<void> {
    if (this.#direct && this.#closing === undefined) return this.#straight("writeOutcome", this.#inner.writeOutcome, fence, outcome);
    return this.#call("writeOutcome", () => this.#inner.writeOutcome(fence, outcome));
  }

  /**
   * Through the store's own writeOutcomeLater when it has one, else writeOutcome's promise. A
   * steplog store's callbacks go straight through; any other store's are held to the contract:
   * one call at most, a failure that is not an Error named.
   */
  writeOutcomeLater(fence: Fence, outcome: StepOutcome, committed: () => void, failed: (error: unknown) => void): void {
    const inner = this.#inner;
    if (this.#closing !== undefined || !inner.writeOutcomeLater) {
      this.writeOutcome(fence, outcome).then(committed, failed);
      return;
    }
    let done = committed;
    let fail = failed;
    if (!this.#direct) {
      let settled = false;
      done = () => {
        if (settled) return;
        settled = true;
        committed();
      };
      fail = (error) => {
        if (settled) return;
        settled = true;
        failed(this.#asError("writeOutcomeLater", error));
      };
    }
    let threw: unknown;
    let didThrow = false;
    try {
      inner.writeOutcomeLater(fence, outcome, done, fail);
    } catch (error) {
      didThrow = true;
      threw = error;
    }
    // Outside the try: a callback called synchronously is not taken for the store's own throw.
    if (didThrow) {
      if (this.#direct) failed(this.#asError("writeOutcomeLater", threw));
      else fail(threw);
    }
  }

  renewLease(fence: Fence, expiresAt: number, now: number): Promise<void> {
    return this.#call("renewLease", () => this.#inner.renewLease(fence, expiresAt, now));
  }

  /** Only for a store that keeps streams (STREAMS_UNSUPPORTED otherwise, nothing written). */
  appendStream(fence: Fence, records: StreamRecord[]): Promise<void> {
    const inner = this.#inner;
    if (!inner.appendStream) return Promise.reject(new StreamsUnsupportedError(this.kind, this.location, "appendStream", fence.runId));
    return this.#call("appendStream", () => inner.appendStream!(fence, records));
  }

  readStream(runId: string, stream: string, afterSeq: number, limit: number): Promise<StreamRecord[]> {
    const inner = this.#inner;
    if (!inner.readStream) return Promise.reject(new StreamsUnsupportedError(this.kind, this.location, "readStream", runId));
    return this.#call("readStream", () => inner.readStream!(runId, stream, afterSeq, limit));
  }

  streamNames(runId: string): Promise<string[]> {
    const inner = this.#inner;
    if (!inner.streamNames) return Promise.reject(new StreamsUnsupportedError(this.kind, this.location, "streamNames", runId));
    return this.#call("streamNames", () => inner.streamNames!(runId));
  }

  endAttempt(fence: Fence, end: AttemptEnd): Promise<void> {
    return this.#call("endAttempt", () => this.#inner.endAttempt(fence, end));
  }

  /** Closes the store once; a second call waits for the first. */
  close(): Promise<void> {
    this.#closing ??= this.#inner.close();
    return this.#closing;
  }

  /** A lease age from a store that does not declare `leaseAge` is not trusted: the holder is judged by watching instead. */
  #undeclared(state: StoredRun): StoredRun {
    if (this.leaseAge) return state;
    const lease = state.lease && "ageMs" in state.lease ? withoutAge(state.lease) : state.lease;
    const flow = state.flow && { ...state.flow, holders: state.flow.holders.map((h) => ({ ...h, lease: withoutAge(h.lease) })) };
    return { ...state, lease, ...(flow ? { flow } : {}) };
  }

  #open(call: string): void {
    if (this.#closing) throw new StoreClosedError(this.location, `${call}()`);
  }

  /** #call for a direct store, without its closure: a synchronous throw still becomes a rejection. */
  #straight<A>(call: string, method: (fence: Fence, arg: A) => Promise<void>, fence: Fence, arg: A): Promise<void> {
    try {
      return method.call(this.#inner, fence, arg);
    } catch (error) {
      return Promise.reject(this.#asError(call, error));
    }
  }

  /** Calls through without an await of its own: a write is issued in the caller's turn, so group commit still batches it. */
  #call<T>(call: string, body: () => Promise<T> | T): Promise<T> {
    let result: Promise<T> | T;
    try {
      this.#open(call);
      result = body();
    } catch (error) {
      return Promise.reject(this.#asError(call, error));
    }
    if (this.#direct) return result as Promise<T>;
    return Promise.resolve(result).catch((error: unknown) => {
      throw this.#asError(call, error);
    });
  }

  #asError(call: string, error: unknown): Error {
    if (error instanceof Error) return error;
    return new Error(`The ${this.location}'s ${call}() rejected with ${describe(error)}, not an Error.`, { cause: error });
  }
}

function withoutAge(lease: LeaseRow): LeaseRow {
  const { ageMs: _ignored, ...rest } = lease;
  return rest;
}

function describe(value: unknown): string {
  try {
    return typeof value === "string" ? JSON.stringify(value) : String(value);
  } catch {
    return "a value that cannot be shown";
  }
}
