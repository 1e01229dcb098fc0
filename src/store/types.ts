/**
 * The storage contract. A store is "dumb but transactional": it keeps rows and applies
 * decisions atomically, and knows nothing of workflows, schemas or policies. The engine
 * passes every time in (stores never read the clock) and hands values in already encoded.
 *
 * Atomicity the engine relies on:
 * - `createRun` and `claimRun` read and write one run in one transaction, so two callers
 *   can never both take its lease;
 * - every write that belongs to an attempt carries a `Fence`; it is applied only while the
 *   run's lease epoch still equals the fence's, else it rejects with LEASE_LOST and writes
 *   nothing;
 * - a promise a write returns resolves only after the write is durable (committed).
 */

import type { AttemptEnding, AttemptRow, EventRow, LeaseRow, RunRow, RunStatus, StepRow, StepStatus, StreamRecord } from "./rows.js";

// The rows a store keeps (runs, attempts, leases, steps, events) are in rows.ts; re-exported here.
export {
  ENDED_STATUSES,
  EFFECTS,
  type AttemptEnding,
  type AttemptRow,
  type Consent,
  type Effect,
  type EventRow,
  type LeaseRow,
  type OwnerRow,
  type RunRow,
  type RunStatus,
  type StepRow,
  type StepStatus,
  type StreamRecord,
} from "./rows.js";

export interface StoredRun {
  run: RunRow;
  attempts: AttemptRow[];
  /** In seq order. */
  steps: StepRow[];
  lease: LeaseRow | null;
  /** In order of arrival. */
  events: EventRow[];
  /** What a claim asked with a FlowQuery learns of the other runs, read in the claim's transaction. */
  flow?: FlowFacts;
}

/** What a claim asks the store about other runs, to hold flow-control limits (claimRun's `flow`). */
export interface FlowQuery {
  /** The other runs with this concurrency key whose lease is held (an attempt that has not ended, or whose owner died). */
  concurrencyKey?: string;
  /** How many attempts started at or after `since` among the runs with this rate key (this one's included). */
  rate?: { key: string; since: number };
}

export interface FlowFacts {
  /** Each other run with the concurrency key whose lease is held: the lease and its holding attempt, to judge whether its owner is gone. */
  holders: Array<{ lease: LeaseRow; attempt: AttemptRow }>;
  /** Attempts started in the rate window (0 without a rate query). */
  started: number;
}

export interface Fence {
  runId: string;
  epoch: number;
}

export interface Lease extends Fence {
  attempt: number;
  expiresAt: number;
}

export type RunPatch = Partial<Omit<RunRow, "id" | "createdAt">>;

export type ClaimDecision =
  | {
      kind: "take";
      attempt: AttemptRow;
      run: RunPatch;
      expiresAt: number;
      now: number;
    }
  | {
      kind: "refuse";
      /** Thrown to the caller after `run` (if any) is committed. */
      error: Error;
      run?: RunPatch;
    }
  | {
      /** Only when asked `whileWriting`: no verdict from a snapshot; wait for the run's lock and ask again. */
      kind: "wait";
    };

/**
 * The engine's verdict on a claim, asked inside the claim's transaction with the run as read
 * there. It is pure: it reads `current` and returns a decision, writing nothing, so a store may
 * ask it more than once for one claim (Postgres asks again when its connection was lost before
 * COMMIT's reply; the verdict of the try that committed is the one that holds). Asked with
 * `whileWriting` by a store that found the run's row locked by another transaction right now (a
 * holder writing a step): `current` is then a snapshot read without the lock, and the answer is
 * a refusal (RUN_BUSY: the holder is alive, it is writing) or `wait` (nobody holds the lease:
 * take the lock, read again and ask without `whileWriting`). A store that always waits for the
 * lock never asks so.
 */
export type ClaimJudge = (current: StoredRun, seen?: { whileWriting: true }) => ClaimDecision;

/** What a store declares it can do; src/store/runtime.ts gives the defaults for what it leaves out. */
export interface StoreCapabilities {
  /** Records outlive the process (a continue in a new process finds them). Default false. */
  durable: boolean;
  /** Several processes may use the same records at once, claims and fences holding between them. Default false. */
  multiProcess: boolean;
  /**
   * Loaded leases carry `ageMs`, how long ago they were written by one clock every claimer shares
   * (the database server's): a holder elsewhere is judged by it, with no watching. Default false.
   */
  leaseAge: boolean;
}

export type ClaimResult = { kind: "taken"; state: StoredRun; lease: Lease } | { kind: "missing" };

/** One run's rows as importRuns writes them (engine.import): every row given, the lease as the engine chose it. */
export interface ImportedRun {
  run: RunRow;
  attempts: AttemptRow[];
  /** In seq order. */
  steps: StepRow[];
  /** In order of arrival. */
  events: EventRow[];
  /** Every record of the run's streams, each stream's in seq order (absent or empty: none); a store that keeps streams writes them with the rest. */
  streams?: StreamRecord[];
  lease: LeaseRow;
}

/** The rows a prune deleted (pruneRuns), or a dry run would delete, by table. */
export interface PrunedRows {
  /** The ids of the runs deleted. */
  ids: string[];
  attempts: number;
  steps: number;
  events: number;
}

/**
 * pruneRuns' verdict on one group of runs (a run and its child runs at every depth, by their
 * `parent`), asked in the prune's transaction with the group's runs as read there, the run
 * first: true deletes every row of each of them, false keeps them all. Pure, like ClaimJudge.
 */
export type PruneJudge = (group: StoredRun[]) => boolean;

export interface RunUpdate<T> {
  run?: RunPatch;
  appendSteps?: StepRow[];
  updateSteps?: Array<{ seq: number; patch: Partial<Omit<StepRow, "runId" | "seq">> }>;
  appendEvents?: EventRow[];
  /** Release the lease and raise its epoch, so the holder (if it still lives) can write nothing more. */
  fenceOut?: { now: number };
  /** When set, nothing is written and this is thrown. */
  error?: Error;
  result: T;
}

export interface StepOutcome {
  seq: number;
  status: Exclude<StepStatus, "intended">;
  value: string | null;
  error: string | null;
  endedAt: number;
  calls: number;
  resolution: string | null;
  usage: string | null;
  /**
   * Spend to add to these runs' `spentUsd` and `spentTokens` (the run itself, and the run whose
   * budget it draws on), in the outcome's own transaction. Absent for a run without a budget.
   */
  spend?: Spend;
  /** The seq of an event this outcome consumes; refused if it was consumed already. */
  consumes?: { eventSeq: number; by: string };
}

/** What a step outcome adds to the spend of runs with a budget (the store adds numbers; it knows nothing of budgets). */
export interface Spend {
  runs: string[];
  usd: number;
  tokens: number;
}

export interface AttemptEnd {
  attempt: number;
  ending: AttemptEnding;
  endedAt: number;
  error: string | null;
  run: RunPatch;
  /** If an unconsumed event of this name exists when the ending commits, set wakeAt to endedAt. */
  wakeOnEvent?: string;
  /** Step keys the attempt reused (for timelines); stored on the attempt row. */
  reused?: string[];
}

export interface RunFilter {
  status?: RunStatus[];
  workflow?: string;
  /** Only runs whose wakeAt is set and at or before this time; such a listing is ordered by priority (highest first), then wakeAt, oldest first. */
  dueBy?: number;
  /** Only the child runs of this run (their `parent`). */
  parent?: string;
  /** Only runs whose `waitingFor` is of this kind ("child": parked on a child run). */
  waitingKind?: string;
  /** Only runs whose id contains this text (case-sensitive). */
  idContains?: string;
  /**
   * A keyset cursor for the newest-first order (not with `dueBy`): only the runs listed after
   * this position, that is created before `createdAt`, or at it with an id after `id`.
   */
  after?: RunCursor;
  limit?: number;
}

/** A run's place in the newest-first listing: its createdAt and id (ties are ordered by id). */
export interface RunCursor {
  createdAt: number;
  id: string;
}

/** How many runs a filter lists, for one workflow. */
export interface WorkflowCount {
  workflow: string;
  runs: number;
}

export interface RunListing {
  run: RunRow;
  lastAttempt: AttemptRow | null;
  lease: LeaseRow | null;
}

export interface Store {
  /** Short name used in messages: "sqlite", "memory". */
  readonly kind: string;
  /** Where the records live, for messages: "sqlite store at /app/.steplog/steplog.db". */
  readonly location: string;
  /** Capabilities (StoreCapabilities): records outlive the process. Default false. */
  readonly durable?: boolean;
  /** Several processes may share the records at once. Default false. */
  readonly multiProcess?: boolean;
  /** Loaded leases carry `ageMs` by a clock all claimers share. Default false. */
  readonly leaseAge?: boolean;
  /**
   * Optional: told the lease length (leaseMs) of each engine made on this store, before that
   * engine's first call. A store whose server ends a cut-off process's transactions on a timer
   * keeps that timer within the shortest lease it was told (the Postgres store: a third of it),
   * or throws INVALID_OPTION naming both. A store that wraps another must pass it on.
   */
  useLease?(leaseMs: number): void;
  /**
   * Optional: a name for the storage itself, the same for every store object that reads and
   * writes it, however it was spelled (a file reached through a symlink, a server named
   * `localhost` or `127.0.0.1`). steplog keys the attempts running in this process by it, so
   * two store objects on one database see each other's live attempts. Without it: `location`.
   * A store that wraps another must pass it on. Asked at every start, continue, get, list,
   * recover and resolve, and for each run a worker looks at: keep it cheap (remember it once it
   * cannot change).
   */
  storageId?(): Promise<string> | string;

  /**
   * Insert a run with its first attempt and lease (epoch 1). Resolves `{ exists }` (writing
   * nothing) when the id is taken, or when `run.dedupeKey` is set and a run with that key has not
   * ended (that run), checked in the same transaction.
   */
  createRun(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Promise<Lease | { exists: RunRow }>;
  /**
   * Optional (flow control needs it): insert a run with no attempt yet, to be claimed when its
   * turn comes (it is `waiting` and due), with a free lease row (epoch 0). `{ exists }` as for
   * createRun.
   */
  enqueueRun?(run: RunRow, now: number): Promise<{ queued: true } | { exists: RunRow }>;
  /**
   * Read the run and apply `decide`'s verdict in the same transaction: take the lease (new
   * attempt row, epoch + 1, run patched) or refuse (run patched, then the error thrown).
   * A store with no such run (or no file yet) resolves `missing` and creates nothing. `decide`
   * is pure and may be asked more than once (ClaimJudge); the store never judges a holder itself.
   * With `flow`, `current.flow` carries what it asks, read in the transaction so that no other
   * claim of a run with the same keys commits in between (the limits hold across processes).
   */
  claimRun(runId: string, decide: ClaimJudge, flow?: FlowQuery): Promise<ClaimResult>;
  /**
   * Optional (engine.import needs it): write these runs, each with every row given (its lease
   * row as given), all in one transaction. Resolves `{ exists }` and writes nothing when a run's
   * id is taken, or its `dedupeKey` is held by a run that has not ended (createRun's rule).
   */
  importRuns?(runs: ImportedRun[]): Promise<{ imported: true } | { exists: RunRow }>;
  /**
   * Optional (engine.prune needs it): in one transaction, read each of these runs with its child
   * runs at every depth (found by `parent`), ask `approve` of each such group, and delete every
   * row of each group it approves (run, attempts, lease, steps, events): a group whole or not at
   * all, and a SIGKILL leaves the whole batch or none of it. An id no longer stored is skipped.
   */
  pruneRuns?(runIds: string[], approve: PruneJudge): Promise<PrunedRows>;
  /**
   * Optional (retention across processes needs it): take the turn called `name` for `holder`
   * until `until` when nobody else holds it at `now` (never held, expired, or held by `holder`),
   * in one transaction; resolves whether `holder` has it (false, writing nothing, from a store
   * that holds no records yet). Without it the engine keeps turns per process only.
   */
  takeTurn?(name: string, holder: string, now: number, until: number): Promise<boolean>;
  /** Read and update one run atomically, outside any attempt (recover, resolve, …). */
  updateRun<T>(runId: string, decide: (current: StoredRun) => RunUpdate<T>): Promise<T | undefined>;
  loadRun(runId: string): Promise<StoredRun | undefined>;
  /** Optional: the run row alone (no steps), for the checks before a claim. The engine falls back to loadRun. */
  loadRunRow?(runId: string): Promise<RunRow | undefined>;
  listRuns(filter: RunFilter): Promise<RunListing[]>;
  /**
   * Optional: how many runs `listRuns(filter)` would list without its limit (`after` counts),
   * per workflow (in any order; a workflow with none left out). A store that has it also
   * honours `after` in listRuns; for one without, the engine counts and pages by listing all.
   */
  countRuns?(filter: RunFilter): Promise<WorkflowCount[]>;
  /**
   * Optional: a short text that changes whenever a record changes, by this process or any other
   * (it may change when nothing did). Cheap: `steplog ui` reads it every poll and reads the runs
   * again only when it changed. Without it, every poll reads them again.
   */
  changeMarker?(): Promise<string>;

  writeIntent(fence: Fence, step: StepRow): Promise<void>;
  writeOutcome(fence: Fence, outcome: StepOutcome): Promise<void>;
  /**
   * Optional: writeOutcome for a caller that does not wait for it (a group-committed outcome),
   * without a promise a write. Exactly one of `committed` and `failed` is called, once the write
   * has committed or failed as writeOutcome's promise would settle (possibly synchronously, from
   * inside a later call on the store). The engine falls back to writeOutcome(…).then(committed, failed).
   */
  writeOutcomeLater?(fence: Fence, outcome: StepOutcome, committed: () => void, failed: (error: unknown) => void): void;
  renewLease(fence: Fence, expiresAt: number, now: number): Promise<void>;
  /**
   * Optional (ctx.stream needs it): append records to a run's streams, fenced like a step's
   * outcome and queued with the attempt's other writes in their order (group commit: it commits
   * with the next intent or outcome at the latest). Nobody awaits it before going on.
   */
  appendStream?(fence: Fence, records: StreamRecord[]): Promise<void>;
  /** Optional (engine.readStream needs it): a stream's records with a seq above `afterSeq`, in seq order, at most `limit`. */
  readStream?(runId: string, stream: string, afterSeq: number, limit: number): Promise<StreamRecord[]>;
  /** Optional (a run's streams listed: export, the UI): the names of the run's streams with any record, in name order. */
  streamNames?(runId: string): Promise<string[]>;
  /** Record the attempt's ending, patch the run and release the lease, in one transaction. */
  endAttempt(fence: Fence, end: AttemptEnd): Promise<void>;

  close(): Promise<void>;
}
