/**
 * The Postgres store: many worker processes on many machines sharing runs. `pg` is loaded on
 * first use. Every transaction on a run locks its lease row first (the run's mutex, see
 * schema.ts), so a claim, an update and the fence check of an attempt write never interleave.
 *
 * Claims use `FOR UPDATE SKIP LOCKED` on that row, and never report an existing run as
 * missing. When the row is locked, the run is read as one consistent snapshot (one statement):
 * - its lease is held: the run is busy (RUN_BUSY, naming the holder) at once. The lock belongs
 *   to the holder writing, to another worker taking the run over, or to a frozen holder's
 *   transaction; in each case a worker moves on instead of queueing behind it.
 * - its lease is free: another transaction is claiming or updating it (a send, say); the claim
 *   waits for the lock and `decide` judges what that transaction left.
 * `decide` runs once per claim, always under the lock (the engine's decide has side effects).
 */

import { taken as takenResult } from "../claim-result.js";
import type { ConnectionOptions } from "node:tls";
import {
  InvalidOptionError,
  isStoreRefusal,
  SteplogError,
  StoreReadOnlyError,
  StoreRefusedError,
  StoreUnreadableError,
  StoreWriteFailedError,
  StoreClosedError,
} from "../../base/errors.js";
import type {
  AttemptEnd,
  AttemptRow,
  ClaimJudge,
  ClaimResult,
  Fence,
  Lease,
  LeaseRow,
  RunFilter,
  RunListing,
  RunRow,
  RunUpdate,
  StepOutcome,
  StepRow,
  Store,
  StoredRun,
} from "../types.js";
import { CommitUnknownError, Connection, createPool, describeTarget, guardCheckouts, isConnectionError, isConnectionSettingsError, isDbError, redact, type PgClient, type PgPoolLike, type TxState } from "./connection.js";
import { SCHEMA_VERSION, migrate, probeSchema, quoteSchema } from "./schema.js";
import { num, Sql } from "./sql.js";
import { newRunStatement } from "./one-trip.js";
import { WriteQueue } from "./write-queue.js";
import { checkKnownKeys, type KnownKeys } from "../../base/options.js";
import { claimVerdict, listLimit } from "../state-machine.js";

export const DEFAULT_PG_SCHEMA = "steplog";

const POSTGRES_KEYS: KnownKeys<PostgresStoreOptions> = {
  connectionString: true,
  pool: true,
  schema: true,
  ssl: true,
  poolSize: true,
  applicationName: true,
  retryForMs: true,
  idleInTransactionTimeoutMs: true,
  connectTimeoutMs: true,
};

export interface PostgresStoreOptions {
  /** `postgres://user@host:5432/db`. Default: libpq's PGHOST, PGUSER, PGDATABASE… variables. */
  connectionString?: string;
  /** Use this pg.Pool instead of making one (the store will not end it on close; give it an "error" listener). */
  pool?: PgPoolLike;
  /** The Postgres schema the tables live in. Default "steplog". */
  schema?: string;
  /** Passed to pg as is. */
  ssl?: boolean | ConnectionOptions;
  /** Connections in the store's pool. Default 10. */
  poolSize?: number;
  /** Shown in pg_stat_activity. Default "steplog". */
  applicationName?: string;
  /** How long to keep retrying on new connections when the server cannot be reached, in ms. Default 5000. */
  retryForMs?: number;
  /**
   * The server ends a transaction of this store that sat idle this long, in ms (default 5000).
   * Transactions never wait on user code, so one idle this long belongs to a frozen or cut-off
   * process; ending it frees its locks, so other workers can take its runs once its leases expire.
   */
  idleInTransactionTimeoutMs?: number;
  /** How long to wait for a new connection, in ms. Default 10000. */
  connectTimeoutMs?: number;
}

/** A Store on a Postgres schema. */
export interface PostgresStore extends Store {
  readonly schema: string;
  /** Connect, and create or upgrade the schema now rather than at the first write. */
  migrate(): Promise<void>;
  /** `postgres:`, the database's oid and name, and the schema (asks the server once). */
  storageId(): Promise<string>;
}

export function postgresStore(options: PostgresStoreOptions = {}): PostgresStore {
  return new PostgresStoreImpl(options);
}

type Refused = { refused: Error };

/** A COMMIT sent without a reply, in the last try or an earlier one, may have been carried out. */
const maybeCommitted = (error: unknown, tx: TxState | undefined) => error instanceof CommitUnknownError || tx?.commitSent === true || tx?.maybeCommitted === true;

/**
 * SQL states that say the statement itself is wrong (a value out of range for its column, a
 * type mismatch, a syntax error): no operator can fix them, so they are steplog's bugs. Anything
 * else (a lost connection, a full disk, a lock timeout, a dropped table) is the server's state.
 */
const REFUSALS = /^(22|21|0A|42601|42804|42883|42P08|42P18)/;

const isRefused = (value: unknown): value is Refused => typeof value === "object" && value !== null && "refused" in value;

class PostgresStoreImpl implements PostgresStore {
  readonly kind = "postgres";
  readonly durable = true;
  readonly multiProcess = true;
  /** Leases are loaded with their age by the server's clock, which every claimer shares. */
  readonly leaseAge = true;
  readonly location: string;
  readonly schema: string;
  readonly #options: PostgresStoreOptions;
  readonly #secrets: string[];
  readonly #sql: Sql;
  #pool: Promise<{ pool: PgPoolLike; conn: Connection; queue: WriteQueue }> | undefined;
  #migrated = false;
  #opening: Promise<boolean> | undefined;
  #storageId: Promise<string> | undefined;
  #closed = false;

  constructor(options: PostgresStoreOptions) {
    checkKnownKeys("postgresStore", options, POSTGRES_KEYS);
    this.#options = options;
    this.schema = options.schema ?? DEFAULT_PG_SCHEMA;
    const bad = (what: string) => new InvalidOptionError(`postgresStore: ${what}.`);
    try {
      quoteSchema(this.schema);
    } catch {
      throw bad(`schema must be a plain name (letters, digits, _; at most 63), got ${JSON.stringify(this.schema)}`);
    }
    if (options.pool && options.connectionString !== undefined) throw bad("pass either connectionString or pool, not both");
    for (const key of ["poolSize", "retryForMs", "idleInTransactionTimeoutMs", "connectTimeoutMs"] as const) {
      const v = options[key];
      if (v !== undefined && !(Number.isInteger(v) && v >= (key === "poolSize" || key === "idleInTransactionTimeoutMs" ? 1 : 0))) {
        throw bad(`${key} must be a whole number${key === "poolSize" ? " ≥ 1" : " of ms"}, got ${String(v)}`);
      }
    }
    this.#secrets = secretsOf(options.connectionString ?? options.pool?.options?.connectionString, (options.pool?.options as { password?: unknown } | undefined)?.password);
    this.location = `postgres store (schema ${this.schema}) at ${describeTarget(options.connectionString, options.pool)}`;
    this.#sql = new Sql(quoteSchema(this.schema));
  }

  /**
   * The database's oid and name, and the schema: the same under any spelling of the server (host
   * name, address, Unix socket) and for any role. (A database on another cluster may share the
   * oid and name; then one run id live in this process on both would be judged live on each:
   * a continue refused, never a step run twice.)
   */
  storageId(): Promise<string> {
    this.#storageId ??= (async () => {
      const { conn } = await this.#connect();
      const found = await conn.run(async (client) => {
        const { rows } = await client.query("SELECT oid::text AS oid, datname AS db FROM pg_database WHERE datname = current_database()");
        return rows[0] as { oid: string; db: string };
      }, "retry");
      return `postgres:${found.oid}/${found.db}/${this.schema}`;
    })().catch((error: unknown) => {
      this.#storageId = undefined;
      throw this.#readError(error);
    });
    return this.#storageId;
  }

  // ---- connection, schema, errors ----

  #connect() {
    if (this.#closed) throw new StoreClosedError(this.location, "this call");
    this.#pool ??= (async () => {
      const o = this.#options;
      if (o.pool) guardCheckouts(o.pool);
      const pool =
        o.pool ??
        (await createPool({
          connectionString: o.connectionString,
          ssl: o.ssl,
          max: o.poolSize ?? 10,
          applicationName: o.applicationName ?? "steplog",
          connectTimeoutMs: o.connectTimeoutMs ?? 10_000,
        }));
      const conn = new Connection(pool, o.retryForMs ?? 5000, o.idleInTransactionTimeoutMs ?? 5000);
      const queue = new WriteQueue(conn, this.#sql, () => this.#ready(true), (error, what, runId) => this.#writeError(error, what, runId));
      return { pool, conn, queue };
    })().catch((error) => {
      this.#pool = undefined;
      throw error;
    });
    return this.#pool;
  }

  /** True once the schema is there. With `create` false an absent schema is reported (false) and nothing is created. */
  async #ready(create: boolean): Promise<boolean> {
    if (this.#migrated) return true;
    this.#opening ??= this.#open(create).finally(() => (this.#opening = undefined));
    const ready = await this.#opening;
    return ready || !create ? ready : this.#ready(true);
  }

  async #open(create: boolean): Promise<boolean> {
    const { conn } = await this.#connect();
    let tx: TxState | undefined;
    try {
      const state = await conn.run((client) => probeSchema(client, this.schema, this.location), "retry");
      if (state.version === SCHEMA_VERSION) return (this.#migrated = true);
      if (state.tables.length === 0 && !create) return false;
      await conn.run(async (client, state) => {
        tx = state;
        await conn.begin(client);
        await migrate(client, this.schema, this.location);
        await conn.commit(client, state);
      }, "retry");
      return (this.#migrated = true);
    } catch (error) {
      if (error instanceof SteplogError) throw error;
      if (!create) throw this.#readError(error);
      throw this.#writeError(error, "the store's schema", undefined, { maybeRecorded: maybeCommitted(error, tx) });
    }
  }

  #reason(error: unknown): string {
    const e = error as { message?: string; code?: string };
    const message = redact(String(e.message ?? error), this.#secrets);
    return e.code && !message.includes(e.code) ? `${e.code}: ${message}` : message;
  }

  /** A cause safe to show: the driver's message with credentials stripped, and its code. */
  #cause(error: unknown): Error {
    const safe = new Error(this.#reason(error));
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string") Object.assign(safe, { code });
    return safe;
  }

  #readError(error: unknown): Error {
    if (error instanceof SteplogError) return error;
    const unreachable = isConnectionError(error);
    const reason = unreachable ? `could not reach the server: ${this.#reason(error)}` : this.#reason(error);
    return new StoreUnreadableError(this.location, reason, this.#cause(error), unreachable || isConnectionSettingsError(error));
  }

  /**
   * A write that failed, by cause: a role or a standby that may not write (STORE_READ_ONLY); the
   * server out of resources (a full disk, too many connections) or out of reach, once the retries
   * are spent (STORE_WRITE_FAILED, with server advice, never a file's); any other refusal of a
   * statement steplog wrote is a bug in steplog (StoreRefusedError: INTERNAL, attempt not counted).
   */
  #writeError(error: unknown, what: string, runId: string | undefined, command?: { maybeRecorded: boolean }): Error {
    if (error instanceof SteplogError || isStoreRefusal(error)) return error as Error;
    const code = (error as { code?: unknown }).code;
    const details = { cause: this.#cause(error), ...(runId === undefined ? {} : { runId }) };
    if (code === "42501" || code === "25006") {
      return new StoreReadOnlyError(
        this.location,
        `${this.#reason(error)}: this role may not write here, or the server is a read-only standby`,
        runId,
        "connect as a role that may write to steplog's schema, on the primary server",
      );
    }
    if (typeof code === "string" && /^53/.test(code)) {
      return new StoreWriteFailedError(this.location, what, details, command, "free space on the database server (or raise its limits)");
    }
    if (isDbError(error) && REFUSALS.test(String(code))) {
      return new StoreRefusedError(this.location, what, String(code), this.#reason(error), runId);
    }
    return new StoreWriteFailedError(this.location, what, details, command, "check that the database server is up and reachable");
  }

  /** A read: absent schema → `absent`; errors → STORE_UNREADABLE. Waits for this process's queued writes first. */
  async #read<T>(absent: T, fn: (client: PgClient) => Promise<T>): Promise<T> {
    const { conn, queue } = await this.#connect();
    if (!(await this.#ready(false))) return absent;
    await queue.settled();
    try {
      return await conn.run(fn, "retry");
    } catch (error) {
      throw this.#readError(error);
    }
  }

  /** A transaction on one run outside the write queue (after it, so this process's writes keep their order). */
  /**
   * One transaction of its own, after the queued attempt writes. `command`: not an attempt's
   * write (a new run, a run update), so a failure's advice is not to continue.
   */
  async #transact<T>(
    create: boolean,
    what: string,
    runId: string,
    ambiguous: "retry" | "fail",
    command: boolean,
    fn: (client: PgClient, tx: { maybeCommitted: boolean; commitSent: boolean }) => Promise<T>,
  ): Promise<T | undefined> {
    const { conn, queue } = await this.#connect();
    if (!(await this.#ready(create))) return undefined;
    await queue.settled();
    let result: T;
    let tx: TxState | undefined;
    try {
      result = await conn.run((client, state) => fn(client, (tx = state)), ambiguous);
    } catch (error) {
      // A run update is not run again after a COMMIT with no reply: it cannot tell its own
      // effect from another's.
      throw this.#writeError(error, what, runId, command ? { maybeRecorded: maybeCommitted(error, tx) } : undefined);
    }
    if (isRefused(result)) throw result.refused;
    return result;
  }

  /** Lock the run's lease row (its mutex). A run without one (not written by this store) locks its run row instead. */
  async #lock(client: PgClient, runId: string): Promise<boolean> {
    if ((await client.query(this.#sql.lockLease, [runId])).rows.length > 0) return true;
    return (await client.query(`SELECT 1 FROM ${this.#sql.s}.runs WHERE id = $1 FOR UPDATE`, [runId])).rows.length > 0;
  }

  // ---- Store ----

  async migrate(): Promise<void> {
    await this.#connect();
    await this.#ready(true);
  }

  async createRun(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Promise<Lease | { exists: RunRow }> {
    const s = this.#sql.s;
    const ours: Lease = { runId: run.id, epoch: 1, attempt: attempt.number, expiresAt: lease.expiresAt };
    return (await this.#transact(true, "the new run", run.id, "retry", true, async (client, tx) => {
      const conn = (await this.#connect()).conn;
      // In one round trip; a retry after a COMMIT with no reply goes the usual way (it looks for its own run).
      const oneTrip = tx.maybeCommitted ? undefined : newRunStatement(s, run, attempt, lease);
      if (oneTrip !== undefined) {
        const results = await conn.transactOnce(client, oneTrip, tx);
        // Refused by the server (undefined): the usual way says what failed.
        if (results !== undefined) {
          if ((results[0]!.rows[0] as { inserted: number }).inserted === 1) return ours;
          return { exists: (await this.#sql.loadRun(client, run.id))!.run };
        }
      }
      await conn.begin(client);
      const inserted = await client.query(
        `INSERT INTO ${s}.runs (id, workflow, version, args, status, attempts, budget_used, source, deadline, value, error, waiting_for, wake_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) ON CONFLICT (id) DO NOTHING`,
        [run.id, run.workflow, run.version, run.args, run.status, run.attempts, run.budgetUsed, run.source, run.deadline, run.value, run.error, run.waitingFor, run.wakeAt, run.createdAt, run.updatedAt],
      );
      if (inserted.rowCount === 0) {
        const existing = (await this.#sql.loadRun(client, run.id))!;
        await conn.rollback(client);
        // Our own first try committed and only its reply was lost: the run is ours.
        if (tx.maybeCommitted && isOurCreation(existing, run, attempt)) return ours;
        return { exists: existing.run };
      }
      await this.#sql.insertAttempt(client, attempt, 1, null);
      await client.query(`INSERT INTO ${s}.leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES ($1, 1, $2, $3, $4)`, [
        run.id,
        attempt.number,
        lease.expiresAt,
        lease.now,
      ]);
      await conn.commit(client, tx);
      return ours;
    }))!;
  }

  async claimRun(runId: string, decide: ClaimJudge): Promise<ClaimResult> {
    let taken: { attempt: AttemptRow; expiresAt: number } | undefined;
    /** A retry after a lost COMMIT reply: if our attempt holds the lease, the claim went through. */
    const ours = (tx: TxState, state: StoredRun): ClaimResult | undefined => {
      if (!tx.maybeCommitted || !taken || state.lease?.attempt !== taken.attempt.number || state.lease.expiresAt !== taken.expiresAt) return undefined;
      const mine = state.attempts.find((a) => a.number === taken!.attempt.number);
      if (!mine || !sameAttempt(mine, taken.attempt)) return undefined;
      return { kind: "taken", state, lease: { runId, epoch: state.lease.epoch, attempt: mine.number, expiresAt: state.lease.expiresAt } };
    };
    const result = await this.#transact<ClaimResult | Refused>(false, "the new attempt", runId, "retry", false, async (client, tx) => {
      const { conn } = await this.#connect();
      await conn.begin(client);
      const got = await client.query(this.#sql.lockLeaseSkipLocked, [runId]);
      if (got.rows.length === 0) {
        // Locked by another transaction, or no such run: a snapshot tells which.
        const snapshot = await this.#sql.loadRun(client, runId);
        if (!snapshot) {
          await conn.rollback(client);
          return { kind: "missing" };
        }
        const mineAlready = ours(tx, snapshot);
        if (mineAlready) {
          await conn.rollback(client);
          return mineAlready;
        }
        // The engine judges from the snapshot: a holder writing right now is alive (refused), else wait for the lock.
        const verdict = decide(snapshot, { whileWriting: true });
        if (verdict.kind === "refuse") {
          await conn.rollback(client);
          return { refused: verdict.error };
        }
        await this.#lock(client, runId);
      }
      const current = await this.#sql.loadRun(client, runId);
      if (!current) {
        await conn.rollback(client);
        return { kind: "missing" };
      }
      const mineAlready = ours(tx, current);
      if (mineAlready) {
        await conn.rollback(client);
        return mineAlready;
      }
      const decision = claimVerdict(decide, current);
      if (decision.kind === "refuse") {
        if (decision.run) {
          await this.#sql.patchRun(client, runId, decision.run);
          await conn.commit(client, tx);
        } else await conn.rollback(client);
        return { refused: decision.error };
      }
      const previous = current.lease;
      const epoch = (previous?.epoch ?? 0) + 1;
      const lease: LeaseRow = { runId, epoch, attempt: decision.attempt.number, expiresAt: decision.expiresAt, heartbeatAt: decision.now };
      await this.#sql.patchRun(client, runId, decision.run);
      await this.#sql.insertAttempt(client, decision.attempt, epoch, previous && previous.attempt !== null ? previous.expiresAt : null);
      await client.query(
        `INSERT INTO ${this.#sql.s}.leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (run_id) DO UPDATE SET epoch = excluded.epoch, attempt = excluded.attempt, expires_at = excluded.expires_at, heartbeat_at = excluded.heartbeat_at`,
        [runId, epoch, lease.attempt, lease.expiresAt, lease.heartbeatAt],
      );
      taken = { attempt: decision.attempt, expiresAt: decision.expiresAt };
      await conn.commit(client, tx);
      return takenResult(current, decision, lease);
    });
    return (result as ClaimResult | undefined) ?? { kind: "missing" };
  }

  async updateRun<T>(runId: string, decide: (current: StoredRun) => RunUpdate<T>): Promise<T | undefined> {
    // Not retried after a lost COMMIT reply: an update cannot tell its own effect from another's.
    const result = await this.#transact<{ value: T | undefined } | Refused>(false, "the run update", runId, "fail", true, async (client, tx) => {
      const { conn } = await this.#connect();
      await conn.begin(client);
      if (!(await this.#lock(client, runId))) {
        await conn.rollback(client);
        return { value: undefined };
      }
      const current = (await this.#sql.loadRun(client, runId))!;
      const update = decide(current);
      if (update.error) {
        await conn.rollback(client);
        return { refused: update.error };
      }
      const s = this.#sql.s;
      const epoch = current.lease?.epoch ?? null;
      if (update.run) await this.#sql.patchRun(client, runId, update.run);
      for (const { seq, patch } of update.updateSteps ?? []) await this.#sql.patchStep(client, runId, seq, patch, epoch);
      for (const step of update.appendSteps ?? []) await this.#sql.insertStep(client, step, epoch);
      for (const e of update.appendEvents ?? []) {
        await client.query(`INSERT INTO ${s}.events (run_id, seq, name, payload, sent_at, consumed_by) VALUES ($1, $2, $3, $4, $5, $6)`, [
          e.runId,
          e.seq,
          e.name,
          e.payload,
          e.sentAt,
          e.consumedBy,
        ]);
      }
      if (update.fenceOut) {
        await client.query(`UPDATE ${s}.leases SET epoch = epoch + 1, attempt = NULL, expires_at = 0, heartbeat_at = $2 WHERE run_id = $1`, [runId, update.fenceOut.now]);
      }
      await conn.commit(client, tx);
      return { value: update.result };
    });
    return result === undefined ? undefined : (result as { value: T | undefined }).value;
  }

  async loadRun(runId: string): Promise<StoredRun | undefined> {
    return this.#read(undefined, (client) => this.#sql.loadRun(client, runId));
  }

  async listRuns(filter: RunFilter): Promise<RunListing[]> {
    return this.#read([] as RunListing[], async (client) => {
      const where: string[] = [];
      const values: unknown[] = [];
      if (filter.status) {
        values.push(filter.status);
        where.push(`status = ANY($${values.length}::text[])`);
      }
      if (filter.workflow !== undefined) {
        values.push(filter.workflow);
        where.push(`workflow = $${values.length}`);
      }
      if (filter.dueBy !== undefined) {
        values.push(filter.dueBy);
        where.push(`wake_at IS NOT NULL AND wake_at <= $${values.length}`);
      }
      const { rows } = await client.query(this.#sql.listing(where, listLimit(filter.limit), filter.dueBy !== undefined), values);
      return rows as RunListing[];
    });
  }

  async #write(write: Parameters<WriteQueue["enqueue"]>[0], what: string): Promise<void> {
    const { queue } = await this.#connect();
    return queue.enqueue(write, what);
  }

  writeIntent(fence: Fence, step: StepRow): Promise<void> {
    return this.#write({ kind: "intent", fence, step }, `the intent of step ${JSON.stringify(step.key)}`);
  }

  writeOutcome(fence: Fence, outcome: StepOutcome): Promise<void> {
    return this.#write({ kind: "outcome", fence, outcome }, "a step outcome");
  }

  renewLease(fence: Fence, expiresAt: number, now: number): Promise<void> {
    return this.#write({ kind: "renew", fence, expiresAt, now }, "the lease renewal");
  }

  endAttempt(fence: Fence, end: AttemptEnd): Promise<void> {
    return this.#write({ kind: "end", fence, end }, "the attempt's ending");
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const opened = this.#pool;
    if (!opened) return;
    const { pool, queue } = await opened.catch(() => ({ pool: undefined, queue: undefined }));
    try {
      await queue?.settled();
    } finally {
      if (pool && !this.#options.pool) await pool.end();
    }
  }
}

function secretsOf(connectionString: string | undefined, password: unknown): string[] {
  const secrets: string[] = typeof password === "string" ? [password] : [];
  if (connectionString) {
    secrets.push(connectionString);
    try {
      const url = new URL(connectionString);
      if (url.password) secrets.push(url.password, decodeURIComponent(url.password));
    } catch {
      // Unparseable: the whole string is already listed.
    }
  }
  if (process.env.PGPASSWORD) secrets.push(process.env.PGPASSWORD);
  return secrets;
}

function sameAttempt(a: AttemptRow, b: AttemptRow): boolean {
  return (Object.keys(b) as Array<keyof AttemptRow>).every((k) => a[k] === b[k]);
}

function isOurCreation(existing: StoredRun, run: RunRow, attempt: AttemptRow): boolean {
  const first = existing.attempts[0];
  return (
    existing.run.createdAt === run.createdAt &&
    existing.run.args === run.args &&
    existing.run.workflow === run.workflow &&
    first !== undefined &&
    sameAttempt(first, attempt) &&
    existing.lease?.epoch === 1 &&
    num(existing.lease.attempt) === attempt.number
  );
}
