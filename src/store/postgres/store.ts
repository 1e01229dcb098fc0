/**
 * The Postgres store: many worker processes on many machines sharing runs. `pg` is loaded on
 * first use. Every transaction on a run locks its lease row first (the run's mutex, see
 * schema.ts), so a claim, an update and the fence check of an attempt write never interleave.
 *
 * This file is the Store itself: it checks the options (options.ts), and hands each call to
 * its part — creating, claiming and updating runs to claims.ts, attempt writes to the group
 * commit (../group-commit.ts; batch-writer.ts writes a batch), reads to the database
 * (database.ts, which also opens the pool and the schema); failures are told apart in
 * failures.ts.
 */

import type {
  AttemptEnd,
  AttemptRow,
  ClaimJudge,
  FlowQuery,
  ClaimResult,
  Fence,
  ImportedRun,
  PruneJudge,
  PrunedRows,
  Lease,
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
} from "../types.js";
import { describeTarget } from "./connection.js";
import * as claims from "./claims.js";
import { Database } from "./database.js";
import { Failures, secretsOf } from "./failures.js";
import { NewRuns } from "./new-runs.js";
import { importRuns } from "./import-runs.js";
import { pruneRuns, takeTurn } from "./prune-runs.js";
import { checkPostgresOptions, type PostgresStoreOptions } from "./options.js";
import type { AttemptWrite } from "./attempt-write.js";
import { listLimit } from "../state-machine.js";
import { REJECTS_ONLY_ERRORS } from "../runtime.js";

export { DEFAULT_PG_SCHEMA, type PostgresStoreOptions } from "./options.js";

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

class PostgresStoreImpl implements PostgresStore {
  readonly kind = "postgres";
  readonly [REJECTS_ONLY_ERRORS] = true;
  readonly durable = true;
  readonly multiProcess = true;
  /** Leases are loaded with their age by the server's clock, which every claimer shares. */
  readonly leaseAge = true;
  readonly location: string;
  readonly schema: string;
  readonly #db: Database;
  readonly #newRuns: NewRuns;

  constructor(options: PostgresStoreOptions) {
    this.schema = checkPostgresOptions(options);
    const secrets = secretsOf(
      options.connectionString ?? options.pool?.options?.connectionString,
      (options.pool?.options as { password?: unknown } | undefined)?.password,
    );
    this.location = `postgres store (schema ${this.schema}) at ${describeTarget(options.connectionString, options.pool)}`;
    this.#db = new Database(options, this.schema, this.location, new Failures(this.location, secrets));
    this.#newRuns = new NewRuns(this.#db);
  }

  storageId(): Promise<string> {
    return this.#db.storageId();
  }

  // ---- Store ----

  useLease(leaseMs: number): void {
    this.#db.useLease(leaseMs);
  }

  async migrate(): Promise<void> {
    await this.#db.connect();
    await this.#db.ready(true);
  }

  createRun(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Promise<Lease | { exists: RunRow }> {
    // Runs started in the same turn of the event loop share a transaction (new-runs.ts).
    return this.#newRuns.create(run, attempt, lease);
  }

  enqueueRun(run: RunRow, now: number): Promise<{ queued: true } | { exists: RunRow }> {
    return claims.enqueueRun(this.#db, run, now);
  }

  importRuns(runs: ImportedRun[]): Promise<{ imported: true } | { exists: RunRow }> {
    return importRuns(this.#db, runs);
  }

  pruneRuns(runIds: string[], approve: PruneJudge): Promise<PrunedRows> {
    return pruneRuns(this.#db, runIds, approve);
  }

  takeTurn(name: string, holder: string, now: number, until: number): Promise<boolean> {
    return takeTurn(this.#db, name, holder, now, until);
  }

  claimRun(runId: string, decide: ClaimJudge, flow?: FlowQuery): Promise<ClaimResult> {
    return claims.claimRun(this.#db, runId, decide, flow);
  }

  updateRun<T>(runId: string, decide: (current: StoredRun) => RunUpdate<T>): Promise<T | undefined> {
    return claims.updateRun(this.#db, runId, decide);
  }

  async loadRun(runId: string): Promise<StoredRun | undefined> {
    return this.#db.read(undefined, (client) => this.#db.sql.loadRun(client, runId));
  }

  async listRuns(filter: RunFilter): Promise<RunListing[]> {
    return this.#db.read([] as RunListing[], async (client) => {
      const { where, values } = runsWhere(filter);
      const { rows } = await client.query(this.#db.sql.listing(where, listLimit(filter.limit), filter.dueBy !== undefined), values);
      return rows as RunListing[];
    });
  }

  async countRuns(filter: RunFilter): Promise<WorkflowCount[]> {
    return this.#db.read([] as WorkflowCount[], async (client) => {
      const { where, values } = runsWhere(filter);
      const { rows } = await client.query(
        `SELECT workflow, count(*)::int AS runs FROM ${this.#db.sql.s}.runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""} GROUP BY workflow`,
        values,
      );
      return rows as WorkflowCount[];
    });
  }

  /**
   * The server's WAL insert position: every commit moves it, before it is visible. It is the
   * whole server's, so writes to other databases move it too (the UI then reads again).
   */
  async changeMarker(): Promise<string> {
    return this.#db.read("none", async (client) => {
      const { rows } = await client.query(
        "SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END)::text AS lsn",
      );
      return String((rows[0] as { lsn: string }).lsn);
    });
  }

  /** A step's two writes reach an open queue at once, with no await between (the common case). */
  #write(write: AttemptWrite): Promise<void> {
    try {
      const queue = this.#db.openQueue();
      if (queue) return queue.enqueue(0, write.fence.runId, write, undefined, false);
      return this.#db.connect().then((opened) => opened.queue.enqueue(0, write.fence.runId, write, undefined, false));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  writeIntent(fence: Fence, step: StepRow): Promise<void> {
    return this.#write({ kind: "intent", fence, step });
  }

  writeOutcome(fence: Fence, outcome: StepOutcome): Promise<void> {
    return this.#write({ kind: "outcome", fence, outcome });
  }

  renewLease(fence: Fence, expiresAt: number, now: number): Promise<void> {
    return this.#write({ kind: "renew", fence, expiresAt, now });
  }

  endAttempt(fence: Fence, end: AttemptEnd): Promise<void> {
    return this.#write({ kind: "end", fence, end });
  }

  appendStream(fence: Fence, records: StreamRecord[]): Promise<void> {
    return this.#write({ kind: "stream", fence, records });
  }

  async readStream(runId: string, stream: string, afterSeq: number, limit: number): Promise<StreamRecord[]> {
    return this.#db.read([] as StreamRecord[], async (client) => {
      const { rows } = await client.query(
        `SELECT run_id AS "runId", stream, seq, kind, chunk_offset AS "offset", chunk, step, attempt, at FROM ${this.#db.sql.s}.stream_records
         WHERE run_id = $1 AND stream = $2 AND seq > $3 ORDER BY seq LIMIT $4`,
        [runId, stream, afterSeq, limit],
      );
      return (rows as Array<StreamRecord & { at: unknown }>).map((r) => ({ ...r, at: Number(r.at) }));
    });
  }

  async streamNames(runId: string): Promise<string[]> {
    return this.#db.read([] as string[], async (client) => {
      const { rows } = await client.query(`SELECT DISTINCT stream FROM ${this.#db.sql.s}.stream_records WHERE run_id = $1 ORDER BY stream`, [runId]);
      return (rows as Array<{ stream: string }>).map((r) => r.stream);
    });
  }

  close(): Promise<void> {
    return this.#db.close();
  }
}

/** The WHERE conditions of a filter (its limit and order aside), with their values ($1, $2, … in order). */
function runsWhere(filter: RunFilter): { where: string[]; values: unknown[] } {
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
  if (filter.parent !== undefined) {
    values.push(filter.parent);
    where.push(`parent = $${values.length}`);
  }
  if (filter.waitingKind !== undefined) {
    values.push(filter.waitingKind);
    // Read as text: a waitingFor that is not JSON (a store written by hand) matches nothing rather than failing the listing.
    where.push(`substring(waiting_for from '"kind":"([^"]*)"') = $${values.length}`);
  }
  if (filter.idContains !== undefined) {
    // strpos, not LIKE: the text is matched as it is (no wildcards, case-sensitive).
    values.push(filter.idContains);
    where.push(`strpos(id, $${values.length}) > 0`);
  }
  if (filter.after !== undefined) {
    // `created_at <= $n` on its own: the Index Cond of a scan of runs_by_created (created_at
    // DESC, id) from the cursor down, stopped at the limit. Written as an OR of the two cases
    // alone, it was a filter: every newer run was read and dropped for each page (65 ms a page
    // deep in 100,000 runs). Not a row value: the order is created_at DESC but id ascending.
    values.push(filter.after.createdAt, filter.after.id);
    const [at, id] = [`$${values.length - 1}`, `$${values.length}`];
    where.push(`created_at <= ${at} AND (created_at < ${at} OR id > ${id})`);
  }
  return { where, values };
}
