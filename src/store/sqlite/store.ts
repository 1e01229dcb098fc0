/**
 * The SQLite store (better-sqlite3): the embedded default. WAL, busy_timeout, every write
 * transaction BEGIN IMMEDIATE, and `synchronous` set explicitly on every open (an existing
 * WAL database would otherwise drop to NORMAL). Attempt writes issued in the same turn of the
 * event loop share one transaction (group commit, see write-queue.ts).
 */

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import {
  InvalidOptionError,
  StoreDriverFailedError,
  LeaseLostError,
  StoreFileGoneError,
  StoreReadOnlyError,
  StoreTooNewError,
  StoreUnreadableError,
  StoreWriteFailedError,
  SteplogError,
  StoreClosedError,
} from "../../base/errors.js";
import { taken } from "../claim-result.js";
import type {
  Consent,
  AttemptEnd,
  AttemptRow,
  ClaimJudge,
  EventRow,
  ClaimResult,
  Fence,
  Lease,
  LeaseRow,
  RunFilter,
  RunListing,
  RunPatch,
  RunRow,
  RunUpdate,
  StepOutcome,
  StepRow,
  Store,
  StoredRun,
} from "../types.js";
import { createOwnerOnlyFile, warnIfShared } from "../owner-only-files.js";
import { fault } from "../../base/faults.js";
import { MIGRATIONS, SCHEMA_VERSION } from "./schema.js";
import { WriteQueue } from "./write-queue.js";
import { canonicalPath } from "../canonical-path.js";
import { claimVerdict, listLimit } from "../state-machine.js";
import { checkKnownKeys, type KnownKeys } from "../../base/options.js";

export interface SqliteStoreOptions {
  /** The database file. Default `.steplog/steplog.db` under the working directory. */
  path?: string;
  /**
   * "power" (default): synchronous=FULL, a committed step survives a power loss.
   * "process": synchronous=NORMAL, survives a process crash but may lose the last
   * commits on a power loss or OS crash; several times faster.
   */
  durability?: "power" | "process";
  /** How long a write waits for another process's transaction, in ms. Default 5000. */
  busyTimeoutMs?: number;
  /** Open for reading only (get, list); any write is refused with STORE_READ_ONLY. */
  readonly?: boolean;
  /**
   * Extra pragmas applied on every open, after steplog's own, e.g. `{ max_page_count: 100000 }`
   * to cap the file's size, or `{ cache_size: -16000 }` for a 16 MB page cache (steplog sets
   * 2 MB). journal_mode, synchronous and busy_timeout are steplog's to set.
   */
  pragmas?: Record<string, string | number>;
  /** Told once when an existing store file can be read by other users. Default: process.emitWarning. */
  onWarning?: (message: string) => void;
}

/** SQLite's page cache per connection, in SQLite's units: negative means KiB. */
const DEFAULT_CACHE_SIZE = -2000;

const SQLITE_KEYS: KnownKeys<SqliteStoreOptions> = { path: true, durability: true, busyTimeoutMs: true, readonly: true, pragmas: true, onWarning: true };

const RESERVED_PRAGMAS = new Set(["journal_mode", "synchronous", "busy_timeout", "locking_mode"]);

const NEW_RUN = "the new run";

export const DEFAULT_SQLITE_PATH = path.join(".steplog", "steplog.db");

/** A Store on one SQLite file, with a look at the settings of its open connection. */
export interface SqliteStore extends Store {
  readonly path: string;
  /** `sqlite:` and the file's path with symlinks resolved. */
  storageId(): Promise<string>;
  /** The live connection's settings (opening the file if it exists): to check what durability you run with. */
  pragmas(): { journalMode: string; synchronous: number; busyTimeoutMs: number; cacheSize: number } | undefined;
}

export function sqliteStore(options: SqliteStoreOptions = {}): SqliteStore {
  return new SqliteStoreImpl(options);
}

type Db = Database.Database;
type Stmt = Database.Statement;

const UNREADABLE_CODES = new Set(["SQLITE_NOTADB", "SQLITE_CORRUPT", "SQLITE_CANTOPEN"]);
/** What creating a file or folder answers where this process may not write. */
const NOT_WRITABLE_CODES = new Set(["EACCES", "EPERM", "EROFS"]);

/**
 * better-sqlite3's native module failing to load (not built, built for another Node.js, another
 * platform's binary): its own code, with the fix, never "restore the store from a backup".
 */
function driverFailed(error: unknown, location: string): StoreDriverFailedError | undefined {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: string }).code;
  const native = code === "ERR_DLOPEN_FAILED" || /bindings file|NODE_MODULE_VERSION|better_sqlite3\.node|invalid ELF header|wrong ELF class/i.test(message);
  if (!native) return undefined;
  const needs = `Node.js ${process.version} (NODE_MODULE_VERSION ${process.versions.modules}) on ${process.platform}-${process.arch}`;
  return new StoreDriverFailedError(
    location,
    "better-sqlite3's native module",
    message.split("\n")[0]!,
    `Build it for ${needs}: type npm rebuild better-sqlite3 (it needs python3, make and a C++ compiler), or npm ci again after switching Node.js versions.`,
    error,
  );
}

/** The not-writable code behind a failure to create `dir` (or a file in it), if that is what it was. */
function notWritable(error: unknown, dir: string): string | undefined {
  const code = (error as NodeJS.ErrnoException).code ?? "";
  if (NOT_WRITABLE_CODES.has(code)) return code;
  if (code !== "ENOENT") return undefined;
  let existing = dir;
  while (!fs.existsSync(existing) && path.dirname(existing) !== existing) existing = path.dirname(existing);
  try {
    fs.accessSync(existing, fs.constants.W_OK);
    return undefined;
  } catch (denied) {
    const found = (denied as NodeJS.ErrnoException).code ?? "";
    return NOT_WRITABLE_CODES.has(found) ? found : undefined;
  }
}

const RUN_COLUMNS = `id, workflow, version, args, status, attempts, budget_used AS budgetUsed, source, deadline, value, error,
  waiting_for AS waitingFor, wake_at AS wakeAt, created_at AS createdAt, updated_at AS updatedAt`;
const EVENT_COLUMNS = `run_id AS runId, seq, name, payload, sent_at AS sentAt, consumed_by AS consumedBy`;
const ATTEMPT_COLUMNS = `run_id AS runId, number, host, boot_id AS bootId, pid, process_start AS processStart,
  started_at AS startedAt, ended_at AS endedAt, ending, from_step AS fromStep, forced, error, consent, reused`;
/** The same without each attempt's list of reused steps (long for long runs; a claim does not read it). */
const ATTEMPT_COLUMNS_LEAN = ATTEMPT_COLUMNS.replace(/, reused$/, ", NULL AS reused");
const LEASE_COLUMNS = `run_id AS runId, epoch, attempt, expires_at AS expiresAt, heartbeat_at AS heartbeatAt`;
const STEP_COLUMNS = `run_id AS runId, seq, attempt, key, name, status, effect, idempotency_key AS idempotencyKey, value, error,
  version, intended_at AS intendedAt, ended_at AS endedAt, calls, resolution, usage, position`;

const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

class SqliteStoreImpl implements SqliteStore {
  readonly kind = "sqlite";
  readonly durable = true;
  readonly multiProcess = true;
  readonly location: string;
  readonly #file: string;
  #storageId: string | undefined;
  readonly #durability: "power" | "process";
  readonly #busyTimeoutMs: number;
  readonly #readonly: boolean;
  readonly #extraPragmas: Array<[string, string | number]>;
  readonly #warn: (message: string) => void;
  #db: Db | undefined;
  #stmts: ReturnType<typeof prepare> | undefined;
  #patchStmts = new Map<string, Stmt>();
  /** Run id → its number in `runs`, for the runs this store writes steps of (a number never changes). */
  #runNums = new Map<string, number>();
  /**
   * Run id → the lease epoch its fence was checked at in the write transaction under way. The
   * transaction holds SQLite's write lock, so no other connection can move a lease until it
   * commits: one check per run per batch covers all of that run's writes in it, until a write in
   * the batch releases the lease (an attempt's ending). Cleared as each batch begins. A queued
   * write that changes a lease row must forget that run's entry (endAttempt does); claims and
   * fence-outs run in transactions of their own, outside any batch.
   */
  #fencesChecked = new Map<string, number>();
  #queue: WriteQueue | undefined;
  #closed = false;
  /** Why the store is read from a snapshot and refuses writes (its folder cannot be written), if it is. */
  #readOnlyWhy: string | undefined;
  /** The private folder holding that snapshot, removed on close. */
  #snapshotDir: string | undefined;
  /** The opened file's device and inode: the path naming another file, or none, means it was deleted or replaced meanwhile. */
  #identity: { dev: number; ino: number } | undefined;

  constructor(options: SqliteStoreOptions) {
    checkKnownKeys("sqliteStore", options, SQLITE_KEYS);
    this.#file = path.resolve(options.path ?? DEFAULT_SQLITE_PATH);
    this.location = `sqlite store at ${this.#file}`;
    this.#durability = options.durability ?? "power";
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    this.#readonly = options.readonly === true;
    this.#extraPragmas = Object.entries(options.pragmas ?? {});
    this.#warn = options.onWarning ?? ((message) => process.emitWarning(message, { code: "STEPLOG_STORE_PERMISSIONS" }));
    for (const [name, value] of this.#extraPragmas) {
      if (RESERVED_PRAGMAS.has(name.toLowerCase()) || !/^[a-z_]+$/i.test(name) || !/^[\w.-]+$/.test(String(value))) {
        throw new InvalidOptionError(`sqliteStore: pragma ${JSON.stringify(name)} = ${JSON.stringify(value)} is not allowed here (steplog sets ${[...RESERVED_PRAGMAS].join(", ")} itself; names are words, values plain numbers or words).`);
      }
    }
  }

  get path(): string {
    return this.#file;
  }

  async storageId(): Promise<string> {
    if (this.#storageId) return this.#storageId;
    const id = `sqlite:${canonicalPath(this.#file)}`;
    // Kept once the file exists: until then a folder on the way may still be created.
    if (fs.existsSync(this.#file)) this.#storageId = id;
    return id;
  }

  pragmas() {
    const db = this.#open(false);
    if (!db) return undefined;
    return {
      journalMode: String(db.pragma("journal_mode", { simple: true })),
      synchronous: Number(db.pragma("synchronous", { simple: true })),
      busyTimeoutMs: Number(db.pragma("busy_timeout", { simple: true })),
      cacheSize: Number(db.pragma("cache_size", { simple: true })),
    };
  }

  /** Open on first use. With `create` false a missing file is reported as absent and nothing is created. */
  #open(create: boolean): Db | undefined {
    if (this.#closed) throw new StoreClosedError(this.location, "this call");
    if (this.#db) return this.#db;
    const exists = fs.existsSync(this.#file);
    if (!exists && !create) return undefined;
    if (!exists && this.#readonly) throw new StoreReadOnlyError(this.location, "opened with readonly: true, and the file does not exist yet");
    if (!exists) {
      try {
        createOwnerOnlyFile(this.#file);
      } catch (error) {
        // A recursive mkdir on a read-only file system may answer ENOENT: ask the nearest folder that exists.
        const code = notWritable(error, path.dirname(this.#file));
        if (code !== undefined) throw new StoreReadOnlyError(this.location, `${code}: its folder cannot be created or written by this user, so the file cannot be made`);
        throw error;
      }
    } else warnIfShared(this.#file, this.location, this.#warn);
    let db: Db;
    try {
      db = this.#connect();
    } catch (error) {
      throw driverFailed(error, this.location) ?? this.#unreadable(error);
    }
    try {
      this.#checkReadable(db);
      db.pragma(`busy_timeout = ${this.#busyTimeoutMs}`);
      if (!db.readonly) {
        db.pragma("journal_mode = WAL");
        db.pragma(`synchronous = ${this.#durability === "power" ? "FULL" : "NORMAL"}`);
        // SQLite's own default page cache (2 MB), not the 16 MB better-sqlite3 builds in: the step
        // log's hot pages are few (the table's end, index ends, live runs), and an embedded store
        // should not hold 16 MB of an app's memory per open file. `pragmas` can raise it.
        db.pragma(`cache_size = ${DEFAULT_CACHE_SIZE}`);
        for (const [name, value] of this.#extraPragmas) db.pragma(`${name} = ${value}`);
        this.#migrate(db);
      } else if (this.#schemaVersion(db) < SCHEMA_VERSION) {
        throw new StoreReadOnlyError(this.location, "its schema needs an upgrade, which is a write");
      }
    } catch (error) {
      db.close();
      const code = (error as { code?: string }).code ?? "";
      if (error instanceof SteplogError || UNREADABLE_CODES.has(code)) throw error instanceof SteplogError ? error : this.#unreadable(error);
      throw this.#writeFailed(error, "the store's schema", undefined, { maybeRecorded: false });
    }
    this.#db = db;
    const opened = fs.statSync(this.#file);
    this.#identity = { dev: opened.dev, ino: opened.ino };
    this.#stmts = prepare(db);
    this.#prepareInsertNewRun(db);
    this.#queue = new WriteQueue(
      db,
      (error, what, runId) => this.#writeFailed(error, what, runId),
      () => this.#fencesChecked.clear(),
    );
    return db;
  }

  /**
   * The connection. A WAL store on a folder this process cannot write (a read-only mount, a
   * folder owned by another user) cannot be opened where it lies when no one has it open: SQLite
   * must create its -shm beside it. The file is fine, so it is read from a private snapshot copy
   * instead, and every write is refused with STORE_READ_ONLY.
   */
  #connect(): Db {
    const direct = new Database(this.#file, { fileMustExist: true, readonly: this.#readonly });
    try {
      direct.prepare("SELECT 1 FROM sqlite_master LIMIT 1").get();
      return direct;
    } catch (error) {
      direct.close();
      const why = (error as { code?: string }).code === "SQLITE_CANTOPEN" ? this.#unwritableFolder() : undefined;
      if (why === undefined) throw error;
      this.#readOnlyWhy = why;
      return new Database(this.#snapshot(), { fileMustExist: true, readonly: true });
    }
  }

  /** Why the store's folder cannot be written (EROFS: a read-only file system; EACCES: another user's), or undefined if it can. */
  #unwritableFolder(): string | undefined {
    try {
      fs.accessSync(path.dirname(this.#file), fs.constants.W_OK);
      return undefined;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "EROFS") return "it lies on a read-only file system";
      if (code === "EACCES" || code === "EPERM") return "its folder is not writable by this user";
      return undefined;
    }
  }

  /** Copy the store (and its -wal, if one was left) into a private folder, to read it from there. */
  #snapshot(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "steplog-readonly-"));
    const copy = path.join(dir, path.basename(this.#file));
    fs.copyFileSync(this.#file, copy);
    fs.chmodSync(copy, 0o600);
    if (fs.existsSync(`${this.#file}-wal`)) fs.copyFileSync(`${this.#file}-wal`, `${copy}-wal`);
    this.#snapshotDir = dir;
    return copy;
  }

  /** Read-only probe before any pragma that writes: a foreign or broken file is never touched. */
  #checkReadable(db: Db): void {
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((t) => t.name);
    if (tables.length === 0) return;
    if (!tables.includes("meta")) {
      throw new StoreUnreadableError(this.location, `it holds tables ${tables.slice(0, 5).join(", ")} but no steplog schema`);
    }
    const found = this.#schemaVersion(db);
    if (found > SCHEMA_VERSION) throw new StoreTooNewError(this.location, found, SCHEMA_VERSION);
  }

  #schemaVersion(db: Db): number {
    const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
    if (!hasMeta) return 0;
    const row = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string } | undefined;
    return row ? Number(row.value) : 0;
  }

  #migrate(db: Db): void {
    db.transaction(() => {
      // Re-read inside the write transaction: another process may have migrated meanwhile.
      const current = this.#schemaVersion(db);
      if (current > SCHEMA_VERSION) throw new StoreTooNewError(this.location, current, SCHEMA_VERSION);
      for (let v = current; v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v]!);
      if (current < SCHEMA_VERSION) {
        // Crash tests stop here: every migration applied, nothing committed.
        fault("during-migration", String(SCHEMA_VERSION));
        db.prepare("INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(
          String(SCHEMA_VERSION),
        );
      }
    }).immediate();
  }

  #unreadable(error: unknown): SteplogError {
    const code = (error as { code?: string }).code ?? "";
    const reason = error instanceof Error ? error.message : String(error);
    return new StoreUnreadableError(this.location, UNREADABLE_CODES.has(code) ? `${code}: ${reason}` : reason, error);
  }

  #writeFailed(error: unknown, what: string, runId: string | undefined, command?: { maybeRecorded: boolean }): SteplogError {
    // A new run that could not be inserted: rolled back with its batch or its savepoint.
    if (what === NEW_RUN) command = { maybeRecorded: false };
    if (error instanceof SteplogError) return error;
    const code = (error as { code?: string }).code ?? "";
    if (UNREADABLE_CODES.has(code)) return this.#unreadable(error);
    if (code.startsWith("SQLITE_READONLY")) {
      return new StoreReadOnlyError(this.location, `${code}: the file or its folder is not writable by this user`, runId);
    }
    return new StoreWriteFailedError(this.location, what, { cause: error, ...(runId === undefined ? {} : { runId }) }, command);
  }

  #read<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (error instanceof SteplogError) throw error;
      const code = (error as { code?: string }).code ?? "";
      if (UNREADABLE_CODES.has(code)) throw this.#unreadable(error);
      throw error;
    }
  }

  /**
   * Refuse when the file this store has open is no longer the one at its path (deleted by
   * `rm -rf .steplog` or `git clean`, or replaced): SQLite would go on writing to the unlinked
   * file, and every record would vanish with the process. Checked where a run starts or is
   * claimed, by commands, and at each lease renewal (so a running attempt stops within leaseMs).
   */
  #stillThere(runId: string | undefined): void {
    const id = this.#identity;
    if (!id) return;
    const now = fs.statSync(this.#file, { throwIfNoEntry: false });
    if (now && now.dev === id.dev && now.ino === id.ino) return;
    throw new StoreFileGoneError(this.location, now ? "replaced by another file" : "deleted", runId);
  }

  #writable(db: Db, runId: string): void {
    if (db.readonly) {
      throw new StoreReadOnlyError(this.location, this.#readonly ? "opened with readonly: true" : (this.#readOnlyWhy ?? "the file or its folder is not writable by this user"), runId);
    }
  }

  /** A synchronous write transaction, after any queued attempt writes (so order is kept). */
  #transact<T>(create: boolean, what: string, runId: string, fn: (db: Db) => T, command = false): T | undefined {
    const db = this.#open(create);
    if (!db) return undefined;
    this.#writable(db, runId);
    this.#stillThere(runId);
    this.#queue!.flush();
    try {
      return db.transaction(() => fn(db)).immediate();
    } catch (error) {
      // SQLite rolled the transaction back: nothing of it was recorded.
      throw this.#writeFailed(error, what, runId, command ? { maybeRecorded: false } : undefined);
    }
  }

  /** A run's records; `forClaim` leaves out the attempts' reused lists, which only views show. */
  #load(runId: string, forClaim = false): StoredRun | undefined {
    const s = this.#stmts!;
    const run = s.getRun.get(runId) as RunRow | undefined;
    if (!run) return undefined;
    const attempts = ((forClaim ? s.getAttemptsLean : s.getAttempts).all(runId) as StoredAttempt[]).map(attemptFromDb);
    const steps = s.getSteps.all(runId) as StepRow[];
    const lease = (s.getLease.get(runId) as LeaseRow | undefined) ?? null;
    const events = s.getEvents.all(runId) as EventRow[];
    return { run, attempts, steps, lease, events };
  }

  #patchRun(db: Db, runId: string, patch: RunPatch): void {
    const keys = Object.keys(patch).filter((k) => (patch as Record<string, unknown>)[k] !== undefined);
    if (keys.length === 0) return;
    const signature = keys.join(",");
    let stmt = this.#patchStmts.get(signature);
    if (!stmt) {
      stmt = db.prepare(`UPDATE runs SET ${keys.map((k) => `${snake(k)} = @${k}`).join(", ")} WHERE id = @id`);
      this.#patchStmts.set(signature, stmt);
    }
    stmt.run({ ...patch, id: runId });
  }

  #insertAttempt(attempt: AttemptRow): void {
    this.#stmts!.insertAttempt.run({
      ...attempt,
      forced: attempt.forced ? 1 : 0,
      reused: attempt.reused ? JSON.stringify(attempt.reused) : null,
      consent: attempt.consent ? JSON.stringify(attempt.consent) : null,
    });
  }

  /** Inside a batch: refuse the write unless the run's lease is still at this fence's epoch. */
  #fence(fence: Fence, what: string): void {
    if (this.#fencesChecked.get(fence.runId) === fence.epoch) return;
    this.#checkFence(fence, what);
    this.#fencesChecked.set(fence.runId, fence.epoch);
  }

  #checkFence(fence: Fence, what: string): void {
    const lease = this.#stmts!.getFence.get(fence.runId) as { epoch: number; attempt: number | null } | undefined;
    if (!lease || lease.epoch !== fence.epoch || lease.attempt === null) {
      throw new LeaseLostError(fence.runId, undefined, `${what} refused: the lease epoch is no longer ${fence.epoch}`);
    }
  }

  /** Inside a write transaction: the run's number, or null when the run has no row (the fence then refuses). */
  #runNum(runId: string): number | null {
    let num = this.#runNums.get(runId);
    if (num === undefined) {
      const row = this.#stmts!.getRunNum.get(runId) as { num: number | null } | undefined;
      if (!row || row.num === null) return null;
      num = row.num;
      this.#runNums.set(runId, num);
    }
    return num;
  }

  // Through the write queue: runs started together share a commit with each other's steps.
  createRun(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Promise<Lease | { exists: RunRow }> {
    try {
      this.#writable(this.#open(true)!, run.id);
      this.#stillThere(run.id);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#queue!.enqueue(NEW_RUN, run.id, (): Lease | { exists: RunRow } => {
      // In a savepoint of the batch's transaction: a run that cannot be inserted fails alone,
      // not the other runs' writes that share the commit.
      try {
        return this.#insertNewRun!(run, attempt, lease);
      } catch (error) {
        if (!this.#db!.inTransaction) throw error; // SQLite rolled the whole batch back: it fails as one
        throw this.#writeFailed(error, NEW_RUN, run.id);
      }
    });
  }

  /** Built once per connection: nested in the batch's transaction, better-sqlite3 makes it a savepoint. */
  #insertNewRun: ((run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }) => Lease | { exists: RunRow }) | undefined;

  #prepareInsertNewRun(db: Db): void {
    this.#insertNewRun = db.transaction((run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Lease | { exists: RunRow } => {
      const s = this.#stmts!;
      const existing = s.getRun.get(run.id) as RunRow | undefined;
      if (existing) return { exists: existing };
      s.insertRun.run(run);
      this.#insertAttempt(attempt);
      s.upsertLease.run({ runId: run.id, epoch: 1, attempt: attempt.number, expiresAt: lease.expiresAt, heartbeatAt: lease.now });
      return { runId: run.id, epoch: 1, attempt: attempt.number, expiresAt: lease.expiresAt };
    });
  }

  async claimRun(runId: string, decide: ClaimJudge): Promise<ClaimResult> {
    let refusal: Error | undefined;
    const result = this.#transact(false, "the new attempt", runId, (db): ClaimResult => {
      const current = this.#load(runId, true);
      if (!current) return { kind: "missing" };
      const decision = claimVerdict(decide, current);
      if (decision.kind === "refuse") {
        if (decision.run) this.#patchRun(db, runId, decision.run);
        refusal = decision.error;
        return { kind: "missing" };
      }
      this.#patchRun(db, runId, decision.run);
      this.#insertAttempt(decision.attempt);
      const epoch = (current.lease?.epoch ?? 0) + 1;
      const lease: LeaseRow = { runId, epoch, attempt: decision.attempt.number, expiresAt: decision.expiresAt, heartbeatAt: decision.now };
      this.#stmts!.upsertLease.run(lease);
      return taken(current, decision, lease);
    });
    // Thrown after the commit, so a refusal's own patch (say, dead-lettering) is kept.
    if (refusal) throw refusal;
    return result ?? { kind: "missing" };
  }

  async updateRun<T>(runId: string, decide: (current: StoredRun) => RunUpdate<T>): Promise<T | undefined> {
    let refusal: Error | undefined;
    const result = this.#transact(false, "the run update", runId, (db) => {
      const current = this.#load(runId);
      if (!current) return undefined;
      const update = decide(current);
      if (update.error) {
        refusal = update.error;
        return undefined;
      }
      if (update.run) this.#patchRun(db, runId, update.run);
      for (const { seq, patch } of update.updateSteps ?? []) this.#patchStep(db, runId, seq, patch);
      for (const step of update.appendSteps ?? []) this.#stmts!.insertStep.run(step);
      for (const event of update.appendEvents ?? []) this.#stmts!.insertEvent.run(event);
      if (update.fenceOut) this.#stmts!.fenceOut.run({ runId, heartbeatAt: update.fenceOut.now });
      return update.result;
    }, true);
    if (refusal) throw refusal;
    return result;
  }

  #patchStep(db: Db, runId: string, seq: number, patch: Partial<StepRow>): void {
    const keys = Object.keys(patch).filter((k) => (patch as Record<string, unknown>)[k] !== undefined);
    if (keys.length === 0) return;
    db.prepare(`UPDATE steps SET ${keys.map((k) => `${snake(k)} = @${k}`).join(", ")} WHERE run_num = (SELECT num FROM runs WHERE id = @runId) AND seq = @seq`).run({
      ...patch,
      runId,
      seq,
    });
  }

  async loadRunRow(runId: string): Promise<RunRow | undefined> {
    return this.#read(() => {
      if (!this.#open(false)) return undefined;
      this.#queue!.flush();
      return this.#stmts!.getRun.get(runId) as RunRow | undefined;
    });
  }

  async loadRun(runId: string): Promise<StoredRun | undefined> {
    return this.#read(() => {
      const db = this.#open(false);
      if (!db) return undefined;
      this.#queue!.flush();
      return this.#load(runId);
    });
  }

  async listRuns(filter: RunFilter): Promise<RunListing[]> {
    return this.#read(() => {
      const db = this.#open(false);
      if (!db) return [];
      this.#queue!.flush();
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter.status) {
        where.push(`status IN (${filter.status.map(() => "?").join(", ")})`);
        params.push(...filter.status);
      }
      if (filter.workflow !== undefined) {
        where.push("workflow = ?");
        params.push(filter.workflow);
      }
      if (filter.dueBy !== undefined) {
        where.push("wake_at IS NOT NULL AND wake_at <= ?");
        params.push(filter.dueBy);
      }
      const sql =
        `SELECT ${RUN_COLUMNS} FROM runs` +
        (where.length ? ` WHERE ${where.join(" AND ")}` : "") +
        // Newest first; a listing of due runs goes oldest due first, so none is starved.
        (filter.dueBy !== undefined ? ` ORDER BY wake_at, id` : ` ORDER BY created_at DESC, id`) +
        (listLimit(filter.limit) === undefined ? "" : ` LIMIT ${listLimit(filter.limit)}`);
      const runs = db.prepare(sql).all(...params) as RunRow[];
      const s = this.#stmts!;
      return runs.map((run) => {
        const last = s.getLastAttempt.get(run.id) as StoredAttempt | undefined;
        return {
          run,
          lastAttempt: last ? attemptFromDb(last) : null,
          lease: (s.getLease.get(run.id) as LeaseRow | undefined) ?? null,
        };
      });
    });
  }

  // The hot path: an intent and an outcome per step, each one statement with positional
  // parameters after the run's fence (checked once per batch).
  writeIntent(fence: Fence, step: StepRow): Promise<void> {
    this.#writable(this.#open(true)!, fence.runId);
    return this.#queue!.enqueue(() => "the intent of step " + JSON.stringify(step.key), fence.runId, () => {
      this.#fence(fence, "intent");
      const s = step;
      this.#stmts!.insertStepAt.run(
        this.#runNum(fence.runId), fence.runId, s.seq, s.attempt, s.key, s.name, s.status, s.effect, s.idempotencyKey, s.value, s.error, s.version,
        s.intendedAt, s.endedAt, s.calls, s.resolution, s.usage, s.position,
      );
    }, true);
  }

  writeOutcome(fence: Fence, outcome: StepOutcome): Promise<void> {
    this.#open(true);
    return this.#queue!.enqueue("a step outcome", fence.runId, () => {
      this.#fence(fence, "outcome");
      const o = outcome;
      if (o.consumes) {
        const taken = this.#stmts!.consumeEvent.run({ runId: fence.runId, seq: o.consumes.eventSeq, by: o.consumes.by }).changes;
        if (taken !== 1) throw new Error(`steplog internal: event ${o.consumes.eventSeq} of run ${fence.runId} was consumed already`);
      }
      const changed = this.#stmts!.outcome.run(o.status, o.value, o.error, o.endedAt, o.calls, o.resolution, o.usage, this.#runNum(fence.runId), o.seq).changes;
      if (changed !== 1) throw new Error(`steplog internal: outcome for seq ${o.seq} of run ${fence.runId} has no open intent`);
    });
  }

  renewLease(fence: Fence, expiresAt: number, now: number): Promise<void> {
    this.#open(true);
    try {
      this.#stillThere(fence.runId);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#queue!.enqueue("the lease renewal", fence.runId, () => {
      this.#fence(fence, "lease renewal");
      this.#stmts!.renewLease.run({ runId: fence.runId, expiresAt, heartbeatAt: now });
    });
  }

  endAttempt(fence: Fence, end: AttemptEnd): Promise<void> {
    const db = this.#open(true)!;
    return this.#queue!.enqueue("the attempt's ending", fence.runId, () => {
      this.#runNums.delete(fence.runId);
      this.#fence(fence, "attempt ending");
      this.#stmts!.endAttempt.run({
        runId: fence.runId,
        number: end.attempt,
        ending: end.ending,
        endedAt: end.endedAt,
        error: end.error,
        reused: end.reused ? JSON.stringify(end.reused) : null,
      });
      this.#patchRun(db, fence.runId, end.run);
      if (end.wakeOnEvent !== undefined) this.#stmts!.wakeOnEvent.run({ runId: fence.runId, name: end.wakeOnEvent, now: end.endedAt });
      this.#stmts!.releaseLease.run({ runId: fence.runId, heartbeatAt: end.endedAt });
      // The lease is released (see #fencesChecked): a later write of this attempt in the same batch must be refused.
      this.#fencesChecked.delete(fence.runId);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#db) {
      try {
        this.#queue!.flush();
      } finally {
        this.#db.close();
        this.#db = undefined;
        this.#runNums.clear();
      }
    }
    if (this.#snapshotDir) fs.rmSync(this.#snapshotDir, { recursive: true, force: true });
    this.#closed = true;
  }
}

function prepare(db: Db) {
  return {
    getRun: db.prepare(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = ?`),
    getAttempts: db.prepare(`SELECT ${ATTEMPT_COLUMNS} FROM attempts WHERE run_id = ? ORDER BY number`),
    getAttemptsLean: db.prepare(`SELECT ${ATTEMPT_COLUMNS_LEAN} FROM attempts WHERE run_id = ? ORDER BY number`),
    getLastAttempt: db.prepare(`SELECT ${ATTEMPT_COLUMNS} FROM attempts WHERE run_id = ? ORDER BY number DESC LIMIT 1`),
    getSteps: db.prepare(`SELECT ${STEP_COLUMNS} FROM steps WHERE run_num = (SELECT num FROM runs WHERE id = ?) ORDER BY seq`),
    getLease: db.prepare(`SELECT ${LEASE_COLUMNS} FROM leases WHERE run_id = ?`),
    getFence: db.prepare(`SELECT epoch, attempt FROM leases WHERE run_id = ?`),
    getEvents: db.prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE run_id = ? ORDER BY seq`),
    insertEvent: db.prepare(
      `INSERT INTO events (run_id, seq, name, payload, sent_at, consumed_by) VALUES (@runId, @seq, @name, @payload, @sentAt, @consumedBy)`,
    ),
    wakeOnEvent: db.prepare(
      `UPDATE runs SET wake_at = @now WHERE id = @runId AND EXISTS (SELECT 1 FROM events WHERE run_id = @runId AND name = @name AND consumed_by IS NULL)`,
    ),
    consumeEvent: db.prepare(`UPDATE events SET consumed_by = @by WHERE run_id = @runId AND seq = @seq AND consumed_by IS NULL`),
    insertRun: db.prepare(
      `INSERT INTO runs (id, workflow, version, args, status, attempts, budget_used, source, deadline, value, error, waiting_for, wake_at, created_at, updated_at, num)
       VALUES (@id, @workflow, @version, @args, @status, @attempts, @budgetUsed, @source, @deadline, @value, @error, @waitingFor, @wakeAt, @createdAt, @updatedAt,
               (SELECT coalesce(max(num), 0) + 1 FROM runs))`,
    ),
    insertAttempt: db.prepare(
      `INSERT INTO attempts (run_id, number, host, boot_id, pid, process_start, started_at, ended_at, ending, from_step, forced, error, reused, consent)
       VALUES (@runId, @number, @host, @bootId, @pid, @processStart, @startedAt, @endedAt, @ending, @fromStep, @forced, @error, @reused, @consent)`,
    ),
    upsertLease: db.prepare(
      `INSERT INTO leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES (@runId, @epoch, @attempt, @expiresAt, @heartbeatAt)
       ON CONFLICT (run_id) DO UPDATE SET epoch = excluded.epoch, attempt = excluded.attempt, expires_at = excluded.expires_at, heartbeat_at = excluded.heartbeat_at`,
    ),
    renewLease: db.prepare(`UPDATE leases SET expires_at = @expiresAt, heartbeat_at = @heartbeatAt WHERE run_id = @runId`),
    fenceOut: db.prepare(`UPDATE leases SET epoch = epoch + 1, attempt = NULL, expires_at = 0, heartbeat_at = @heartbeatAt WHERE run_id = @runId`),
    releaseLease: db.prepare(`UPDATE leases SET attempt = NULL, expires_at = 0, heartbeat_at = @heartbeatAt WHERE run_id = @runId`),
    insertStep: db.prepare(
      `INSERT INTO steps (run_num, run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage, position)
       VALUES ((SELECT num FROM runs WHERE id = @runId), @runId, @seq, @attempt, @key, @name, @status, @effect, @idempotencyKey, @value, @error, @version, @intendedAt, @endedAt, @calls, @resolution, @usage, @position)`,
    ),
    getRunNum: db.prepare(`SELECT num FROM runs WHERE id = ?`),
    // The hot path's two statements; the caller has checked the run's fence in this transaction.
    insertStepAt: db.prepare(
      `INSERT INTO steps (run_num, run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage, position)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    outcome: db.prepare(
      `UPDATE steps SET status = ?, value = ?, error = ?, ended_at = ?, calls = ?, resolution = ?, usage = ?
       WHERE run_num = ? AND seq = ? AND status = 'intended'`,
    ),
    endAttempt: db.prepare(
      `UPDATE attempts SET ending = @ending, ended_at = @endedAt, error = @error, reused = @reused WHERE run_id = @runId AND number = @number`,
    ),
  };
}

type StoredAttempt = Omit<AttemptRow, "forced" | "reused" | "consent"> & { forced: number; reused: string | null; consent: string | null };

/** SQLite keeps booleans as 0/1 and lists as JSON; `reused` is absent until an ending records it, `consent` unless one was given. */
function attemptFromDb(row: StoredAttempt): AttemptRow {
  const { reused, forced, consent, ...rest } = row;
  const attempt: AttemptRow = { ...rest, forced: !!forced };
  if (reused !== null) attempt.reused = JSON.parse(reused) as string[];
  if (consent !== null) attempt.consent = JSON.parse(consent) as Consent;
  return attempt;
}
