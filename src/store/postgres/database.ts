/**
 * The store's way to its database. The pool is made on the first call (so `pg` is loaded then,
 * and a store that is never used never connects); the schema is probed once, and created or
 * upgraded only by a write (a read of an absent schema finds nothing, and creates nothing).
 * A store call runs in one of two ways: a read, or a transaction of its own on one run; each
 * waits first for this process's queued attempt writes, so it sees them and they keep their
 * order. Closing lets the queued writes finish before the pool ends.
 */

import { SteplogError, StoreClosedError } from "../../base/errors.js";
import { Connection, createPool, guardCheckouts, type PgClient, type PgPoolLike, type TxState } from "./connection.js";
import { maybeCommitted, type Failures } from "./failures.js";
import { idleLimitFor, idleLimitBeforeAnyLease, type PostgresStoreOptions } from "./options.js";
import { SCHEMA_VERSION, migrate, probeSchema, quoteSchema } from "./schema.js";
import { Sql } from "./sql.js";
import { PgBatchWriter } from "./batch-writer.js";
import { describeWrite, type AttemptWrite } from "./attempt-write.js";
import { GroupCommit } from "../group-commit.js";

/** The queue of attempt writes (group-commit.ts), written a batch at a time by batch-writer.ts. */
export type WriteQueue = GroupCommit<AttemptWrite, undefined>;

/** A transaction's way to have an error thrown once it has ended (a refused claim or update). */
export type Refused = { refused: Error };

const isRefused = (value: unknown): value is Refused => typeof value === "object" && value !== null && "refused" in value;

export class Database {
  readonly sql: Sql;
  readonly #options: PostgresStoreOptions;
  readonly #schema: string;
  readonly #location: string;
  readonly #failures: Failures;
  #pool: Promise<{ pool: PgPoolLike; conn: Connection; queue: WriteQueue }> | undefined;
  /** The write queue once the pool is open: a step's writes reach it without awaiting `connect`. */
  #queue: WriteQueue | undefined;
  #migrated = false;
  #opening: Promise<boolean> | undefined;
  #storageId: Promise<string> | undefined;
  #closed = false;
  /** How long the server lets a transaction of this store sit idle: the shortest any engine's lease allows. */
  #idleLimitMs: number;

  constructor(options: PostgresStoreOptions, schema: string, location: string, failures: Failures) {
    this.#options = options;
    this.#schema = schema;
    this.#location = location;
    this.#failures = failures;
    this.sql = new Sql(quoteSchema(schema));
    this.#idleLimitMs = idleLimitBeforeAnyLease(options);
  }

  /** An engine's lease on this store: the idle-in-transaction limit fits within it, or it is refused (INVALID_OPTION). */
  useLease(leaseMs: number): void {
    this.#idleLimitMs = Math.min(this.#idleLimitMs, idleLimitFor(this.#options, leaseMs));
  }

  /**
   * The database's oid and name, and the schema: the same under any spelling of the server (host
   * name, address, Unix socket) and for any role. (A database on another cluster may share the
   * oid and name; then one run id live in this process on both would be judged live on each:
   * a continue refused, never a step run twice.)
   */
  storageId(): Promise<string> {
    this.#storageId ??= (async () => {
      const { conn } = await this.connect();
      const found = await conn.run(async (client) => {
        const { rows } = await client.query("SELECT oid::text AS oid, datname AS db FROM pg_database WHERE datname = current_database()");
        return rows[0] as { oid: string; db: string };
      }, "retry");
      return `postgres:${found.oid}/${found.db}/${this.#schema}`;
    })().catch((error: unknown) => {
      this.#storageId = undefined;
      throw this.#failures.readError(error);
    });
    return this.#storageId;
  }

  // ---- connection, schema ----

  /** The write queue once the pool is open, else undefined (`connect` opens it). */
  openQueue(): WriteQueue | undefined {
    if (this.#closed) throw new StoreClosedError(this.#location, "this call");
    return this.#queue;
  }

  connect() {
    if (this.#closed) throw new StoreClosedError(this.#location, "this call");
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
      const conn = new Connection(pool, o.retryForMs ?? 5000, () => this.#idleLimitMs);
      const writer = new PgBatchWriter(
        conn,
        this.sql,
        () => this.ready(true),
        (error, write) => this.#failures.writeError(error, describeWrite(write), write.fence.runId),
      );
      // The writers a batch just released issue their next writes a few promise hops later (a
      // sequential step: its outcome and the next step's intent): one turn of the event loop
      // lets all of them join the next batch, instead of the first few going alone (with 50
      // runs at once, 2.5 commits a round instead of one).
      const queue: WriteQueue = new GroupCommit(writer, { turnBetweenBatches: true });
      this.#queue = queue;
      return { pool, conn, queue };
    })().catch((error) => {
      this.#pool = undefined;
      throw error;
    });
    return this.#pool;
  }

  /** True once the schema is there. With `create` false an absent schema is reported (false) and nothing is created. */
  async ready(create: boolean): Promise<boolean> {
    if (this.#migrated) return true;
    this.#opening ??= this.#open(create).finally(() => (this.#opening = undefined));
    const ready = await this.#opening;
    return ready || !create ? ready : this.ready(true);
  }

  async #open(create: boolean): Promise<boolean> {
    const { conn } = await this.connect();
    let tx: TxState | undefined;
    try {
      const state = await conn.run((client) => probeSchema(client, this.#schema, this.#location), "retry");
      if (state.version === SCHEMA_VERSION) return (this.#migrated = true);
      if (state.tables.length === 0 && !create) return false;
      await conn.run(async (client, state) => {
        tx = state;
        await conn.begin(client);
        await migrate(client, this.#schema, this.#location);
        await conn.commit(client, state);
      }, "retry");
      return (this.#migrated = true);
    } catch (error) {
      if (error instanceof SteplogError) throw error;
      if (!create) throw this.#failures.readError(error);
      throw this.#failures.writeError(error, "the store's schema", undefined, { maybeRecorded: maybeCommitted(error, tx) });
    }
  }

  // ---- the two ways a call runs ----

  /** A read: absent schema → `absent`; errors → STORE_UNREADABLE. Waits for this process's queued writes first. */
  async read<T>(absent: T, fn: (client: PgClient) => Promise<T>): Promise<T> {
    const { conn, queue } = await this.connect();
    if (!(await this.ready(false))) return absent;
    await queue.settled();
    try {
      return await conn.run(fn, "retry");
    } catch (error) {
      throw this.#failures.readError(error);
    }
  }

  /** A transaction on one run outside the write queue (after it, so this process's writes keep their order). */
  /**
   * One transaction of its own, after the queued attempt writes. `command`: not an attempt's
   * write (a new run, a run update), so a failure's advice is not to continue.
   */
  async transact<T>(
    create: boolean,
    what: string,
    runId: string,
    ambiguous: "retry" | "fail",
    command: boolean,
    fn: (client: PgClient, tx: { maybeCommitted: boolean; commitSent: boolean }) => Promise<T>,
    /** An earlier transaction holding this write sent its COMMIT and got no reply: a failure now may have been recorded too. */
    maybeBefore = false,
  ): Promise<T | undefined> {
    const { conn, queue } = await this.connect();
    if (!(await this.ready(create))) return undefined;
    await queue.settled();
    let result: T;
    let tx: TxState | undefined;
    try {
      result = await conn.run((client, state) => fn(client, (tx = state)), ambiguous);
    } catch (error) {
      // A run update is not run again after a COMMIT with no reply: it cannot tell its own
      // effect from another's.
      throw this.#failures.writeError(error, what, runId, command ? { maybeRecorded: maybeBefore || maybeCommitted(error, tx) } : undefined);
    }
    if (isRefused(result)) throw result.refused;
    return result;
  }

  /** Lock the run's lease row (its mutex). A run without one (not written by this store) locks its run row instead. */
  async lock(client: PgClient, runId: string): Promise<boolean> {
    if ((await client.query(this.sql.lockLease, [runId])).rows.length > 0) return true;
    return (await client.query(`SELECT 1 FROM ${this.sql.s}.runs WHERE id = $1 FOR UPDATE`, [runId])).rows.length > 0;
  }

  /** Refuse every later call, let the queued writes finish, then end the pool (unless it was the caller's). */
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
