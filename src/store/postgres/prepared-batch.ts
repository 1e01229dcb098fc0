/**
 * The steady state's batch — step intents and outcomes, nothing else — as one named prepared
 * statement with array parameters, run on its own (autocommit: the statement is its
 * transaction). The server parses and plans it once per connection; the literal batches of
 * one-trip.ts are parsed and planned anew every time (about 0.2 ms a statement on a small
 * machine: more than the rows' own work).
 *
 * One statement, in data-modifying CTEs: lock the batch's lease rows (FOR UPDATE, in run id
 * order, as every transaction on a run does first), insert the intents and update the outcomes
 * whose lease is live, and return which applied and the leases found. All parts see one
 * snapshot, so an outcome cannot find an intent inserted by the same statement: a batch holding
 * both for one step goes the other way (it never happens in practice: a step's function runs
 * only after its intent has committed).
 */

import { createHash } from "node:crypto";
import type { AttemptWrite } from "./attempt-write.js";
import { STEP_INSERT_COLUMNS } from "./sql.js";

type Intent = Extract<AttemptWrite, { kind: "intent" }>;
type Outcome = Extract<AttemptWrite, { kind: "outcome" }>;

export interface PreparedQuery {
  name: string;
  text: string;
  values: unknown[];
}

/** One row of the statement's answer: an intent inserted (0), an outcome applied (1), or a lease found (2). */
export interface PreparedRow {
  k: number;
  run_id: string;
  seq: number | string | null;
  epoch: number | string | null;
  attempt: number | null;
}

const texts = new Map<string, { name: string; text: string }>();

function statement(s: string): { name: string; text: string } {
  let found = texts.get(s);
  if (found) return found;
  const text = `WITH locked AS (
    SELECT run_id, epoch, attempt FROM ${s}.leases WHERE run_id = ANY($1::text[]) ORDER BY run_id FOR UPDATE
  ), ins AS (
    INSERT INTO ${s}.steps (${STEP_INSERT_COLUMNS})
    SELECT v.run_id, v.seq, v.attempt, v.key, v.name, v.status, v.effect, v.idempotency_key, v.value, v.error, v.version,
      v.intended_at, v.ended_at, v.calls, v.resolution, v.usage, v.epoch, v.position
    FROM unnest($2::text[], $3::integer[], $4::integer[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
      $11::text[], $12::text[], $13::bigint[], $14::bigint[], $15::integer[], $16::text[], $17::text[], $18::bigint[], $19::integer[])
      AS v(run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls,
        resolution, usage, epoch, position)
    JOIN locked l ON l.run_id = v.run_id AND l.epoch = v.epoch AND l.attempt IS NOT NULL
    ON CONFLICT (run_id, seq) DO NOTHING
    RETURNING run_id, seq
  ), upd AS (
    UPDATE ${s}.steps t SET status = v.status, value = v.value, error = v.error, ended_at = v.ended_at, calls = v.calls,
      resolution = v.resolution, usage = v.usage, written_epoch = v.epoch, written_at = clock_timestamp()
    FROM unnest($20::text[], $21::integer[], $22::text[], $23::text[], $24::text[], $25::bigint[], $26::integer[], $27::text[],
      $28::text[], $29::bigint[]) AS v(run_id, seq, status, value, error, ended_at, calls, resolution, usage, epoch)
    JOIN locked l ON l.run_id = v.run_id AND l.epoch = v.epoch AND l.attempt IS NOT NULL
    WHERE t.run_id = v.run_id AND t.seq = v.seq AND t.status = 'intended'
    RETURNING t.run_id, t.seq
  )
  SELECT 0 AS k, run_id, seq, NULL::bigint AS epoch, NULL::integer AS attempt FROM ins
  UNION ALL SELECT 1, run_id, seq, NULL, NULL FROM upd
  UNION ALL SELECT 2, run_id, NULL, epoch, attempt FROM locked`;
  // Named by its text: one store's schema, one statement; two schemas on one pool never clash.
  found = { name: `steplog_batch_${createHash("sha1").update(text).digest("hex").slice(0, 16)}`, text };
  texts.set(s, found);
  return found;
}

/**
 * The batch as the prepared statement, or undefined when it must go another way: an outcome
 * that consumes an event, an outcome for an intent of the same batch, a value a parameter
 * cannot carry (an epoch or number that is not a safe integer, a string holding a NUL).
 */
export function preparedBatch(s: string, intents: readonly Intent[], outcomes: readonly Outcome[]): PreparedQuery | undefined {
  const runIds = new Set<string>();
  const intended = new Set<string>();
  const cols: unknown[][] = Array.from({ length: 28 }, () => []);
  for (const { fence, step: t } of intents) {
    if (t.runId !== fence.runId || !safe(fence.epoch, t.seq, t.attempt, t.intendedAt, t.endedAt, t.calls, t.position)) return undefined;
    const row = [t.runId, t.seq, t.attempt, t.key, t.name, t.status, t.effect, t.idempotencyKey, t.value, t.error, t.version];
    const rest = [t.intendedAt, t.endedAt, t.calls, t.resolution, t.usage, fence.epoch, t.position ?? null];
    if (!noNul(row) || !noNul(rest)) return undefined;
    [...row, ...rest].forEach((value, i) => cols[i]!.push(value));
    runIds.add(fence.runId);
    intended.add(`${t.runId}\0${t.seq}`);
  }
  for (const { fence, outcome: o } of outcomes) {
    if (o.consumes || intended.has(`${fence.runId}\0${o.seq}`) || !safe(fence.epoch, o.seq, o.endedAt, o.calls)) return undefined;
    const row = [fence.runId, o.seq, o.status, o.value, o.error, o.endedAt, o.calls, o.resolution, o.usage, fence.epoch];
    if (!noNul(row)) return undefined;
    row.forEach((value, i) => cols[18 + i]!.push(value));
    runIds.add(fence.runId);
  }
  const { name, text } = statement(s);
  return { name, text, values: [[...runIds].sort(), ...cols] };
}

function safe(...numbers: Array<number | null | undefined>): boolean {
  return numbers.every((n) => n === null || n === undefined || Number.isSafeInteger(n));
}

/** Postgres text cannot hold a NUL. */
function noNul(values: readonly unknown[]): boolean {
  return values.every((v) => typeof v !== "string" || !v.includes("\0"));
}
