/**
 * The statements both the store and the write queue use, for one schema. A run is read in one
 * statement (JSON aggregates), so what it returns is one consistent snapshot even without a lock.
 */

import {
  ENDED_STATUSES,
  type AttemptRow,
  type FlowFacts,
  type FlowQuery,
  type LeaseRow,
  type RunPatch,
  type RunRow,
  type StepRow,
  type StoredRun,
} from "../types.js";
import type { PgClient } from "./connection.js";

const RUN_COLUMNS = `id, workflow, version, args, status, attempts, budget_used AS "budgetUsed", source, deadline, value, error,
  waiting_for AS "waitingFor", wake_at AS "wakeAt", parent, concurrency_key AS "concurrencyKey", rate_key AS "rateKey", priority,
  dedupe_key AS "dedupeKey", trace_context AS "traceContext", cost_budget AS "costBudget", spent_usd AS "spentUsd",
  spent_tokens AS "spentTokens", created_at AS "createdAt", updated_at AS "updatedAt"`;
const ATTEMPT_COLUMNS = `run_id AS "runId", number, host, boot_id AS "bootId", pid, process_start AS "processStart",
  started_at AS "startedAt", ended_at AS "endedAt", ending, from_step AS "fromStep", forced, error, reused, consent`;
/** An attempt row as JSON; `reused` is absent (not null) until an ending records it, `consent` unless one was given. */
const attemptJson = (a: string) =>
  `(CASE WHEN ${a}.reused IS NULL THEN to_jsonb(${a}) - 'reused' ELSE to_jsonb(${a}) END) - (CASE WHEN ${a}.consent IS NULL THEN 'consent' ELSE '' END)`;
/** With the lease's age by the server's clock: a claim judges expiry by it (owner.ts). */
const LEASE_COLUMNS = `run_id AS "runId", epoch, attempt, expires_at AS "expiresAt", heartbeat_at AS "heartbeatAt",
  (extract(epoch FROM clock_timestamp() - written_at) * 1000)::float8 AS "ageMs"`;
const STEP_COLUMNS = `run_id AS "runId", seq, attempt, key, name, status, effect, idempotency_key AS "idempotencyKey", value, error,
  version, intended_at AS "intendedAt", ended_at AS "endedAt", calls, resolution, usage, position`;
const EVENT_COLUMNS = `run_id AS "runId", seq, name, payload, sent_at AS "sentAt", consumed_by AS "consumedBy", key`;

export const RUN_FIELDS: Record<string, string> = {
  workflow: "workflow",
  version: "version",
  args: "args",
  status: "status",
  attempts: "attempts",
  budgetUsed: "budget_used",
  source: "source",
  deadline: "deadline",
  value: "value",
  error: "error",
  waitingFor: "waiting_for",
  wakeAt: "wake_at",
  updatedAt: "updated_at",
  // Set by the first traced attempt of a run created without one (a claim's patch).
  traceContext: "trace_context",
  // Set by engine.raiseBudget.
  costBudget: "cost_budget",
};
const STEP_FIELDS: Record<string, string> = {
  attempt: "attempt",
  key: "key",
  name: "name",
  status: "status",
  effect: "effect",
  idempotencyKey: "idempotency_key",
  value: "value",
  error: "error",
  version: "version",
  intendedAt: "intended_at",
  endedAt: "ended_at",
  calls: "calls",
  resolution: "resolution",
  usage: "usage",
};

/** The columns a new step row is written with, in the order insertStep (and one-trip.ts) give values. */
export const STEP_INSERT_COLUMNS = `run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version,
  intended_at, ended_at, calls, resolution, usage, written_epoch, position`;

/** pg returns bigint as text unless told otherwise (a pool the user gave us may not be). */
export const num = (v: unknown): number => (typeof v === "number" ? v : Number(v));

/** Run $1's lease row, locked: what every transaction on a run takes first. */
export const lockLeaseText = (s: string) => `SELECT epoch, attempt FROM ${s}.leases WHERE run_id = $1 FOR UPDATE`;

export class Sql {
  readonly load: string;
  readonly #insertStep: string;
  readonly lockLease: string;
  readonly lockLeaseSkipLocked: string;

  constructor(readonly s: string) {
    this.load = `SELECT
      (SELECT row_to_json(r) FROM (SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE id = $1) r) AS run,
      (SELECT coalesce(jsonb_agg(${attemptJson("a")} ORDER BY a.number), '[]'::jsonb) FROM (SELECT ${ATTEMPT_COLUMNS} FROM ${s}.attempts WHERE run_id = $1) a) AS attempts,
      (SELECT coalesce(json_agg(t ORDER BY t.seq), '[]'::json) FROM (SELECT ${STEP_COLUMNS} FROM ${s}.steps WHERE run_id = $1) t) AS steps,
      (SELECT row_to_json(l) FROM (SELECT ${LEASE_COLUMNS} FROM ${s}.leases WHERE run_id = $1) l) AS lease,
      (SELECT coalesce(json_agg(e ORDER BY e.seq), '[]'::json) FROM (SELECT ${EVENT_COLUMNS} FROM ${s}.events WHERE run_id = $1) e) AS events`;
    this.#insertStep = `INSERT INTO ${s}.steps (${STEP_INSERT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`;
    this.lockLease = lockLeaseText(s);
    this.lockLeaseSkipLocked = `${this.lockLease} SKIP LOCKED`;
  }

  /** The run of this id, or with this dedupe key and not ended: what takes a new run's place. */
  async taken(client: PgClient, run: RunRow): Promise<RunRow | undefined> {
    const same = await client.query(`SELECT ${RUN_COLUMNS} FROM ${this.s}.runs WHERE id = $1`, [run.id]);
    if (same.rows.length > 0 || run.dedupeKey == null) return same.rows[0] as RunRow | undefined;
    const active = await client.query(`SELECT ${RUN_COLUMNS} FROM ${this.s}.runs WHERE dedupe_key = $1 AND NOT (status = ANY($2::text[])) LIMIT 1`, [
      run.dedupeKey,
      ENDED_STATUSES,
    ]);
    return active.rows[0] as RunRow | undefined;
  }

  /**
   * Serialise, until this transaction ends, with every other transaction that locks the same
   * key (a dedupe key, a concurrency or rate key) in this schema: a transaction-scoped advisory
   * lock, so two processes cannot both find a key free and both take it.
   */
  async lockKey(client: PgClient, kind: "dedupe" | "flow", key: string): Promise<void> {
    await client.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`steplog:${this.s}:${kind}:${key}`]);
  }

  /** What a claim's FlowQuery asks of the other runs; the keys locked first (lockKey), in order. */
  async flowFacts(client: PgClient, runId: string, query: FlowQuery): Promise<FlowFacts> {
    const keys = [...new Set([query.concurrencyKey, query.rate?.key].filter((k): k is string => k !== undefined))].sort();
    for (const key of keys) await this.lockKey(client, "flow", key);
    let holders: FlowFacts["holders"] = [];
    if (query.concurrencyKey !== undefined) {
      const { rows } = await client.query(
        `SELECT (SELECT row_to_json(x) FROM (SELECT ${LEASE_COLUMNS} FROM ${this.s}.leases WHERE run_id = r.id) x) AS lease,
           (SELECT ${attemptJson("a")} FROM (SELECT ${ATTEMPT_COLUMNS} FROM ${this.s}.attempts WHERE run_id = r.id AND number = l.attempt) a) AS attempt
         FROM ${this.s}.runs r JOIN ${this.s}.leases l ON l.run_id = r.id
         WHERE r.concurrency_key = $1 AND r.id <> $2 AND l.attempt IS NOT NULL`,
        [query.concurrencyKey, runId],
      );
      holders = (rows as FlowFacts["holders"]).filter((h) => h.lease !== null && h.attempt !== null);
    }
    let started = 0;
    if (query.rate) {
      const { rows } = await client.query(
        `SELECT count(*)::int AS n FROM ${this.s}.attempts WHERE started_at >= $1 AND run_id IN (SELECT id FROM ${this.s}.runs WHERE rate_key = $2)`,
        [query.rate.since, query.rate.key],
      );
      started = (rows[0] as { n: number }).n;
    }
    return { holders, started };
  }

  async loadRun(client: PgClient, runId: string): Promise<StoredRun | undefined> {
    const row = (await client.query(this.load, [runId])).rows[0] as {
      run: RunRow | null;
      attempts: AttemptRow[];
      steps: StepRow[];
      lease: LeaseRow | null;
      events: StoredRun["events"];
    };
    if (!row.run) return undefined;
    return { run: row.run, attempts: row.attempts, steps: row.steps, lease: row.lease, events: row.events };
  }

  /** Newest first; a due listing (`byWake`) highest priority first, then oldest wake time first. `limit`: whole, as listLimit makes it. */
  listing(where: string[], limit: number | undefined, byWake: boolean): string {
    const s = this.s;
    const [inner, outer] = byWake ? ["priority DESC, wake_at, id", `r.priority DESC, r."wakeAt", r.id`] : ["created_at DESC, id", `r."createdAt" DESC, r.id`];
    return `SELECT row_to_json(r) AS run,
        (SELECT ${attemptJson("a")} FROM (SELECT ${ATTEMPT_COLUMNS} FROM ${s}.attempts WHERE run_id = r.id ORDER BY number DESC LIMIT 1) a) AS "lastAttempt",
        (SELECT row_to_json(l) FROM (SELECT ${LEASE_COLUMNS} FROM ${s}.leases WHERE run_id = r.id) l) AS lease
      FROM (SELECT ${RUN_COLUMNS} FROM ${s}.runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
            ORDER BY ${inner} ${limit === undefined ? "" : `LIMIT ${limit}`}) r
      ORDER BY ${outer}`;
  }

  async insertStep(client: PgClient, step: StepRow, epoch: number | null, onConflictDoNothing = false): Promise<boolean> {
    const result = await client.query(this.#insertStep + (onConflictDoNothing ? " ON CONFLICT (run_id, seq) DO NOTHING" : ""), [
      step.runId,
      step.seq,
      step.attempt,
      step.key,
      step.name,
      step.status,
      step.effect,
      step.idempotencyKey,
      step.value,
      step.error,
      step.version,
      step.intendedAt,
      step.endedAt,
      step.calls,
      step.resolution,
      step.usage,
      epoch,
      step.position,
    ]);
    return result.rowCount === 1;
  }

  async insertAttempt(client: PgClient, a: AttemptRow, epoch: number, replacedExpiresAt: number | null): Promise<void> {
    await client.query(
      `INSERT INTO ${this.s}.attempts (run_id, number, host, boot_id, pid, process_start, started_at, ended_at, ending, from_step, forced, error, reused, epoch, replaced_expires_at, consent)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
      [
        a.runId,
        a.number,
        a.host,
        a.bootId,
        a.pid,
        a.processStart,
        a.startedAt,
        a.endedAt,
        a.ending,
        a.fromStep,
        a.forced,
        a.error,
        a.reused ? JSON.stringify(a.reused) : null,
        epoch,
        replacedExpiresAt,
        a.consent ? JSON.stringify(a.consent) : null,
      ],
    );
  }

  async patchRun(client: PgClient, runId: string, patch: RunPatch): Promise<void> {
    await this.#patch(client, `${this.s}.runs`, RUN_FIELDS, patch as Record<string, unknown>, "id = $1", [runId]);
  }

  async patchStep(client: PgClient, runId: string, seq: number, patch: Partial<StepRow>, epoch: number | null): Promise<void> {
    await this.#patch(
      client,
      `${this.s}.steps`,
      STEP_FIELDS,
      { ...(patch as Record<string, unknown>), writtenEpoch: epoch },
      "run_id = $1 AND seq = $2",
      [runId, seq],
      {
        writtenEpoch: "written_epoch",
      },
    );
  }

  async #patch(
    client: PgClient,
    table: string,
    fields: Record<string, string>,
    patch: Record<string, unknown>,
    where: string,
    keys: unknown[],
    extra: Record<string, string> = {},
  ) {
    const sets: string[] = [];
    const values = [...keys];
    for (const [field, value] of Object.entries(patch)) {
      const column = fields[field] ?? extra[field];
      if (value === undefined || column === undefined) continue;
      values.push(value);
      sets.push(`${column} = $${values.length}`);
    }
    if (sets.length === 0) return;
    if (table.endsWith(".steps")) sets.push("written_at = clock_timestamp()");
    await client.query(`UPDATE ${table} SET ${sets.join(", ")} WHERE ${where}`, values);
  }
}
