/**
 * The statements of a batch that goes to the server in one round trip: BEGIN, the lease lock,
 * then each write as one statement that changes a row only while its run's lease is live (the
 * epoch it was written under, an attempt holding it), then COMMIT, all in one query string.
 *
 * A query string carries no parameters, so values are written as literals: strings as E''
 * literals (backslashes and quotes escaped, so they read the same whatever
 * standard_conforming_strings says), integers as digits, null with its column's type. A write
 * that does not fit — another kind of write, a string holding a NUL (the protocol ends a query
 * string at the first NUL), a number that is not a safe integer — makes the batch go the usual
 * way, a statement at a time with parameters.
 */

import { literal } from "./connection.js";
import { RUN_FIELDS, STEP_INSERT_COLUMNS } from "./sql.js";
import type { AttemptEnd, AttemptRow, Fence, RunPatch, RunRow } from "../types.js";
import type { AttemptWrite } from "./attempt-write.js";

type SqlType = "text" | "jsonb" | "integer" | "bigint" | "boolean";

/** A value as an SQL literal, or undefined when it cannot be written as one. */
function sqlValue(value: string | number | boolean | null, type: SqlType): string | undefined {
  if (value === null) return `NULL::${type}`;
  if (typeof value === "boolean") return type === "boolean" ? String(value).toUpperCase() : undefined;
  if (typeof value === "number") return (type === "integer" || type === "bigint") && Number.isSafeInteger(value) ? String(value) : undefined;
  if (value.includes("\0")) return undefined;
  return type === "text" ? literal(value) : type === "jsonb" ? `${literal(value)}::jsonb` : undefined;
}

/** `values` as literals, or undefined if any cannot be one. */
function sqlValues(values: Array<[string | number | boolean | null, SqlType]>): string[] | undefined {
  const out: string[] = [];
  for (const [value, type] of values) {
    const text = sqlValue(value, type);
    if (text === undefined) return undefined;
    out.push(text);
  }
  return out;
}

/** True while the run's lease is the one the write was made under. */
function live(s: string, runId: string, epoch: number): string {
  return `EXISTS (SELECT 1 FROM ${s}.leases WHERE run_id = ${literal(runId)} AND epoch = ${epoch} AND attempt IS NOT NULL)`;
}

/**
 * The write as statements that change rows only while the write's lease is live, the last of
 * which changes exactly one row when the write applied; or undefined when it cannot go in a
 * one-round-trip batch (an outcome that consumes an event, a value that cannot be a literal).
 */
export function oneTripStatements(s: string, write: AttemptWrite): string[] | undefined {
  const { runId, epoch } = write.fence;
  if (!Number.isSafeInteger(epoch) || runId.includes("\0")) return undefined;
  switch (write.kind) {
    case "intent": {
      const t = write.step;
      const values = sqlValues([
        [t.runId, "text"],
        [t.seq, "integer"],
        [t.attempt, "integer"],
        [t.key, "text"],
        [t.name, "text"],
        [t.status, "text"],
        [t.effect, "text"],
        [t.idempotencyKey, "text"],
        [t.value, "text"],
        [t.error, "text"],
        [t.version, "text"],
        [t.intendedAt, "bigint"],
        [t.endedAt, "bigint"],
        [t.calls, "integer"],
        [t.resolution, "text"],
        [t.usage, "text"],
        [epoch, "bigint"],
        [t.position ?? null, "integer"],
      ]);
      if (values === undefined || t.runId !== runId) return undefined;
      return [
        `INSERT INTO ${s}.steps (${STEP_INSERT_COLUMNS})
        SELECT ${values.join(", ")} WHERE ${live(s, runId, epoch)} ON CONFLICT (run_id, seq) DO NOTHING`,
      ];
    }
    case "outcome": {
      const o = write.outcome;
      if (o.consumes || o.spend) return undefined;
      const v = sqlValues([
        [o.status, "text"],
        [o.value, "text"],
        [o.error, "text"],
        [o.endedAt, "bigint"],
        [o.calls, "integer"],
        [o.resolution, "text"],
        [o.usage, "text"],
        [o.seq, "integer"],
      ]);
      if (v === undefined) return undefined;
      return [
        `UPDATE ${s}.steps SET status = ${v[0]}, value = ${v[1]}, error = ${v[2]}, ended_at = ${v[3]}, calls = ${v[4]}, resolution = ${v[5]},
        usage = ${v[6]}, written_epoch = ${epoch}, written_at = clock_timestamp()
        WHERE run_id = ${literal(runId)} AND seq = ${v[7]} AND status = 'intended' AND ${live(s, runId, epoch)}`,
      ];
    }
    case "renew":
      if (!Number.isSafeInteger(write.expiresAt) || !Number.isSafeInteger(write.now)) return undefined;
      return [
        `UPDATE ${s}.leases SET expires_at = ${write.expiresAt}, heartbeat_at = ${write.now}
        WHERE run_id = ${literal(runId)} AND epoch = ${epoch} AND attempt IS NOT NULL`,
      ];
    case "end":
      return endStatements(s, write.fence, write.end);
    case "stream":
      return undefined;
  }
}

/**
 * An attempt's ending: its row, the run's, the wake-up if its event is there, and last the
 * lease's release (so the others still find the lease live; a later write of the attempt in the
 * same batch finds it released and changes nothing).
 */
function endStatements(s: string, fence: Fence, end: AttemptEnd): string[] | undefined {
  const { runId, epoch } = fence;
  const id = literal(runId);
  const where = live(s, runId, epoch);
  const v = sqlValues([
    [end.attempt, "integer"],
    [end.ending, "text"],
    [end.endedAt, "bigint"],
    [end.error, "text"],
    [end.reused ? JSON.stringify(end.reused) : null, "jsonb"],
  ]);
  const sets = runSets(end.run);
  if (v === undefined || sets === undefined) return undefined;
  const statements = [
    `UPDATE ${s}.attempts SET ending = ${v[1]}, ended_at = ${v[2]}, error = ${v[3]}, reused = ${v[4]} WHERE run_id = ${id} AND number = ${v[0]} AND ${where}`,
  ];
  if (sets.length > 0) statements.push(`UPDATE ${s}.runs SET ${sets.join(", ")} WHERE id = ${id} AND ${where}`);
  if (end.wakeOnEvent !== undefined) {
    const name = sqlValue(end.wakeOnEvent, "text");
    if (name === undefined) return undefined;
    statements.push(
      `UPDATE ${s}.runs SET wake_at = ${v[2]} WHERE id = ${id} AND ${where}
        AND EXISTS (SELECT 1 FROM ${s}.events WHERE run_id = ${id} AND name = ${name} AND consumed_by IS NULL)`,
    );
  }
  statements.push(
    `UPDATE ${s}.leases SET attempt = NULL, expires_at = 0, heartbeat_at = ${v[2]} WHERE run_id = ${id} AND epoch = ${epoch} AND attempt IS NOT NULL`,
  );
  return statements;
}

/** `column = literal` for each field the patch sets (as the store's patchRun does), or undefined if a value cannot be a literal. */
function runSets(patch: RunPatch): string[] | undefined {
  const sets: string[] = [];
  for (const [field, value] of Object.entries(patch)) {
    const column = RUN_FIELDS[field];
    if (value === undefined || column === undefined) continue;
    if (value !== null && typeof value !== "string" && typeof value !== "number") return undefined;
    const text = value === null ? "NULL" : sqlValue(value, typeof value === "number" ? "bigint" : "text");
    if (text === undefined) return undefined;
    sets.push(`${column} = ${text}`);
  }
  return sets;
}

/**
 * A new run, its first attempt and its lease, as one statement (data-modifying CTEs: the attempt
 * and the lease are inserted only if the run was), answering `inserted` 1 or 0 (the id is
 * taken). Undefined when a value cannot be a literal.
 */
export function newRunStatement(s: string, run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): string | undefined {
  // A dedupe key is looked up under a lock first: the usual way does that (and inserts a budget).
  if (run.dedupeKey != null || run.costBudget != null) return undefined;
  const r = sqlValues([
    [run.id, "text"],
    [run.workflow, "text"],
    [run.version, "text"],
    [run.args, "text"],
    [run.status, "text"],
    [run.attempts, "integer"],
    [run.budgetUsed, "integer"],
    [run.source, "text"],
    [run.deadline, "bigint"],
    [run.value, "text"],
    [run.error, "text"],
    [run.waitingFor, "text"],
    [run.wakeAt, "bigint"],
    [run.parent ?? null, "text"],
    [run.concurrencyKey ?? null, "text"],
    [run.rateKey ?? null, "text"],
    [run.priority ?? 0, "integer"],
    [run.traceContext ?? null, "text"],
    [run.createdAt, "bigint"],
    [run.updatedAt, "bigint"],
  ]);
  const a = sqlValues([
    [attempt.number, "integer"],
    [attempt.host, "text"],
    [attempt.bootId, "text"],
    [attempt.pid, "integer"],
    [attempt.processStart, "bigint"],
    [attempt.startedAt, "bigint"],
    [attempt.endedAt, "bigint"],
    [attempt.ending, "text"],
    [attempt.fromStep, "text"],
    [attempt.forced, "boolean"],
    [attempt.error, "text"],
    [attempt.reused ? JSON.stringify(attempt.reused) : null, "jsonb"],
  ]);
  const l = sqlValues([
    [lease.expiresAt, "bigint"],
    [lease.now, "bigint"],
  ]);
  if (r === undefined || a === undefined || l === undefined || attempt.runId !== run.id) return undefined;
  return `WITH r AS (
      INSERT INTO ${s}.runs (id, workflow, version, args, status, attempts, budget_used, source, deadline, value, error, waiting_for, wake_at, parent,
        concurrency_key, rate_key, priority, trace_context, created_at, updated_at)
      VALUES (${r.join(", ")}) ON CONFLICT (id) DO NOTHING RETURNING id),
    a AS (
      INSERT INTO ${s}.attempts (run_id, number, host, boot_id, pid, process_start, started_at, ended_at, ending, from_step, forced, error, reused, epoch, replaced_expires_at)
      SELECT id, ${a.join(", ")}, 1, NULL::bigint FROM r RETURNING 1),
    l AS (
      INSERT INTO ${s}.leases (run_id, epoch, attempt, expires_at, heartbeat_at)
      SELECT id, 1, ${a[0]}, ${l.join(", ")} FROM r RETURNING 1)
    SELECT count(*)::int AS inserted FROM r`;
}

/** The values of an intent's row as literals, in STEP_INSERT_COLUMNS order, or undefined. */
function intentValues(write: Extract<AttemptWrite, { kind: "intent" }>): string[] | undefined {
  const t = write.step;
  if (t.runId !== write.fence.runId || !Number.isSafeInteger(write.fence.epoch)) return undefined;
  return sqlValues([
    [t.runId, "text"],
    [t.seq, "integer"],
    [t.attempt, "integer"],
    [t.key, "text"],
    [t.name, "text"],
    [t.status, "text"],
    [t.effect, "text"],
    [t.idempotencyKey, "text"],
    [t.value, "text"],
    [t.error, "text"],
    [t.version, "text"],
    [t.intendedAt, "bigint"],
    [t.endedAt, "bigint"],
    [t.calls, "integer"],
    [t.resolution, "text"],
    [t.usage, "text"],
    [write.fence.epoch, "bigint"],
    [t.position ?? null, "integer"],
  ]);
}

/**
 * Every intent of a batch as one statement: the rows inserted where their run's lease is still
 * the one they were written under (joined to the lease rows the batch has locked), answering
 * the (run, seq) of each row it inserted. One statement for many writes costs the server a
 * fraction of one guarded statement each. Undefined when one cannot be written as literals.
 */
export function setIntentStatement(s: string, writes: Array<Extract<AttemptWrite, { kind: "intent" }>>): string | undefined {
  const rows: string[] = [];
  for (const write of writes) {
    const values = intentValues(write);
    if (values === undefined) return undefined;
    rows.push(`(${values.join(", ")})`);
  }
  const columns = STEP_INSERT_COLUMNS.replace(/\s+/g, " ");
  return `INSERT INTO ${s}.steps (${columns})
    SELECT v.* FROM (VALUES ${rows.join(", ")}) AS v(${columns})
    JOIN ${s}.leases l ON l.run_id = v.run_id AND l.epoch = v.written_epoch AND l.attempt IS NOT NULL
    ON CONFLICT (run_id, seq) DO NOTHING RETURNING run_id, seq, written_epoch`;
}

/**
 * Every outcome of a batch as one statement, likewise: each open intent updated where its run's
 * lease is still the one the outcome was written under, answering the (run, seq) of each row
 * it updated. Undefined when one cannot go so (it consumes an event or adds spend, a value is no literal).
 */
export function setOutcomeStatement(s: string, writes: Array<Extract<AttemptWrite, { kind: "outcome" }>>): string | undefined {
  const rows: string[] = [];
  for (const write of writes) {
    const o = write.outcome;
    // An outcome adding spend to run rows goes the usual way (usual-write.ts), as one consuming an event does.
    if (o.consumes || o.spend || !Number.isSafeInteger(write.fence.epoch)) return undefined;
    const v = sqlValues([
      [write.fence.runId, "text"],
      [o.seq, "integer"],
      [o.status, "text"],
      [o.value, "text"],
      [o.error, "text"],
      [o.endedAt, "bigint"],
      [o.calls, "integer"],
      [o.resolution, "text"],
      [o.usage, "text"],
      [write.fence.epoch, "bigint"],
    ]);
    if (v === undefined) return undefined;
    rows.push(`(${v.join(", ")})`);
  }
  return `UPDATE ${s}.steps t SET status = v.status, value = v.value, error = v.error, ended_at = v.ended_at, calls = v.calls,
    resolution = v.resolution, usage = v.usage, written_epoch = v.epoch, written_at = clock_timestamp()
    FROM (VALUES ${rows.join(", ")}) AS v(run_id, seq, status, value, error, ended_at, calls, resolution, usage, epoch)
    JOIN ${s}.leases l ON l.run_id = v.run_id AND l.epoch = v.epoch AND l.attempt IS NOT NULL
    WHERE t.run_id = v.run_id AND t.seq = v.seq AND t.status = 'intended' RETURNING t.run_id, t.seq, t.written_epoch`;
}
