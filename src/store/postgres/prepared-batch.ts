/**
 * The steady state's batch — step intents and outcomes, nothing else — as one named prepared
 * statement whose rows come as JSON (one parameter for the intents, one for the outcomes: a
 * JSON text is parsed far faster than a column of arrays is unnested), run on its own (autocommit: the statement is its
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

type Named = { name: string; text: string };

/**
 * A statement built once per schema, named by its text: one store's schema, one statement; two
 * schemas on one pool never clash.
 */
function namedOnce(prefix: string, build: (s: string) => string): (s: string) => Named {
  const built = new Map<string, Named>();
  return (s) => {
    let found = built.get(s);
    if (!found) {
      const text = build(s);
      found = { name: `${prefix}_${createHash("sha1").update(text).digest("hex").slice(0, 16)}`, text };
      built.set(s, found);
    }
    return found;
  };
}

const statement = namedOnce(
  "steplog_batch",
  (s) => `WITH locked AS (
    SELECT run_id, epoch, attempt FROM ${s}.leases WHERE run_id = ANY($1::text[]) ORDER BY run_id FOR UPDATE
  ), ins AS (
    INSERT INTO ${s}.steps (${STEP_INSERT_COLUMNS})
    SELECT v.run_id, v.seq, v.attempt, v.key, v.name, v.status, v.effect, v.idempotency_key, v.value, v.error, v.version,
      v.intended_at, v.ended_at, v.calls, v.resolution, v.usage, v.epoch, v.position
    FROM json_to_recordset($2::json) AS v(run_id text, seq integer, attempt integer, key text, name text, status text, effect text,
      idempotency_key text, value text, error text, version text, intended_at bigint, ended_at bigint, calls integer, resolution text,
      usage text, epoch bigint, position integer)
    JOIN locked l ON l.run_id = v.run_id AND l.epoch = v.epoch AND l.attempt IS NOT NULL
    ON CONFLICT (run_id, seq) DO NOTHING
    RETURNING run_id, seq
  ), upd AS (
    UPDATE ${s}.steps t SET status = v.status, value = v.value, error = v.error, ended_at = v.ended_at, calls = v.calls,
      resolution = v.resolution, usage = v.usage, written_epoch = v.epoch, written_at = clock_timestamp()
    FROM json_to_recordset($3::json) AS v(run_id text, seq integer, status text, value text, error text, ended_at bigint, calls integer,
      resolution text, usage text, epoch bigint)
    JOIN locked l ON l.run_id = v.run_id AND l.epoch = v.epoch AND l.attempt IS NOT NULL
    WHERE t.run_id = v.run_id AND t.seq = v.seq AND t.status = 'intended'
    RETURNING t.run_id, t.seq
  )
  SELECT 0 AS k, run_id, seq, NULL::bigint AS epoch, NULL::integer AS attempt FROM ins
  UNION ALL SELECT 1, run_id, seq, NULL, NULL FROM upd
  UNION ALL SELECT 2, run_id, NULL, epoch, attempt FROM locked`,
);

/**
 * The sequential step's batch — one run's outcome and its next intent under one fence, or either
 * alone — with a parameter a value: no JSON to parse (about 0.15 ms less a step on a small
 * server). A part that is absent has a null seq and writes nothing.
 */
const singleStatement = namedOnce(
  "steplog_step",
  (s) => `WITH locked AS (
    SELECT run_id, epoch, attempt FROM ${s}.leases WHERE run_id = $1::text FOR UPDATE
  ), ins AS (
    INSERT INTO ${s}.steps (${STEP_INSERT_COLUMNS})
    SELECT $1::text, $3::integer, $4::integer, $5::text, $6::text, $7::text, $8::text, $9::text, $10::text, $11::text, $12::text,
      $13::bigint, $14::bigint, $15::integer, $16::text, $17::text, $2::bigint, $18::integer
    FROM locked l WHERE $3::integer IS NOT NULL AND l.epoch = $2::bigint AND l.attempt IS NOT NULL
    ON CONFLICT (run_id, seq) DO NOTHING
    RETURNING run_id, seq
  ), upd AS (
    UPDATE ${s}.steps t SET status = $20::text, value = $21::text, error = $22::text, ended_at = $23::bigint, calls = $24::integer,
      resolution = $25::text, usage = $26::text, written_epoch = $2::bigint, written_at = clock_timestamp()
    FROM locked l
    WHERE $19::integer IS NOT NULL AND l.epoch = $2::bigint AND l.attempt IS NOT NULL
      AND t.run_id = $1::text AND t.seq = $19::integer AND t.status = 'intended'
    RETURNING t.run_id, t.seq
  )
  SELECT 0 AS k, run_id, seq, NULL::bigint AS epoch, NULL::integer AS attempt FROM ins
  UNION ALL SELECT 1, run_id, seq, NULL, NULL FROM upd
  UNION ALL SELECT 2, run_id, NULL, epoch, attempt FROM locked`,
);

/** The sequential shape as singleStatement's parameters, or undefined when the batch is not that shape. */
function singleBatch(s: string, intents: readonly Intent[], outcomes: readonly Outcome[]): PreparedQuery | undefined {
  if (intents.length > 1 || outcomes.length > 1) return undefined;
  const intent = intents[0];
  const outcome = outcomes[0];
  const fence = (intent ?? outcome)!.fence;
  if (intent && outcome && (intent.fence.runId !== outcome.fence.runId || intent.fence.epoch !== outcome.fence.epoch)) return undefined;
  const t = intent?.step;
  const o = outcome?.outcome;
  const values = [
    fence.runId,
    fence.epoch,
    ...(t
      ? [
          t.seq,
          t.attempt,
          t.key,
          t.name,
          t.status,
          t.effect,
          t.idempotencyKey,
          t.value,
          t.error,
          t.version,
          t.intendedAt,
          t.endedAt,
          t.calls,
          t.resolution,
          t.usage,
          t.position ?? null,
        ]
      : Array(16).fill(null)),
    ...(o ? [o.seq, o.status, o.value, o.error, o.endedAt, o.calls, o.resolution, o.usage] : Array(8).fill(null)),
  ];
  return { ...singleStatement(s), values };
}

/**
 * The batch as the prepared statement, or undefined when it must go another way: an outcome
 * that consumes an event, an outcome for an intent of the same batch, a value a parameter
 * cannot carry (an epoch or number that is not a safe integer, a string holding a NUL).
 */
export function preparedBatch(s: string, intents: readonly Intent[], outcomes: readonly Outcome[]): PreparedQuery | undefined {
  const runIds = new Set<string>();
  const intended = new Set<string>();
  const intentRows: object[] = [];
  const outcomeRows: object[] = [];
  for (const { fence, step: t } of intents) {
    if (t.runId !== fence.runId || !safe(fence.epoch, t.seq, t.attempt, t.intendedAt, t.endedAt, t.calls, t.position)) return undefined;
    const texts = [t.runId, t.key, t.name, t.status, t.effect, t.idempotencyKey, t.value, t.error, t.version, t.resolution, t.usage];
    if (!noNul(texts)) return undefined;
    intentRows.push({
      run_id: t.runId,
      seq: t.seq,
      attempt: t.attempt,
      key: t.key,
      name: t.name,
      status: t.status,
      effect: t.effect,
      idempotency_key: t.idempotencyKey,
      value: t.value,
      error: t.error,
      version: t.version,
      intended_at: t.intendedAt,
      ended_at: t.endedAt,
      calls: t.calls,
      resolution: t.resolution,
      usage: t.usage,
      epoch: fence.epoch,
      position: t.position ?? null,
    });
    runIds.add(fence.runId);
    intended.add(`${t.runId}\0${t.seq}`);
  }
  for (const { fence, outcome: o } of outcomes) {
    if (o.consumes || intended.has(`${fence.runId}\0${o.seq}`) || !safe(fence.epoch, o.seq, o.endedAt, o.calls)) return undefined;
    if (!noNul([fence.runId, o.status, o.value, o.error, o.resolution, o.usage])) return undefined;
    outcomeRows.push({
      run_id: fence.runId,
      seq: o.seq,
      status: o.status,
      value: o.value,
      error: o.error,
      ended_at: o.endedAt,
      calls: o.calls,
      resolution: o.resolution,
      usage: o.usage,
      epoch: fence.epoch,
    });
    runIds.add(fence.runId);
  }
  const single = singleBatch(s, intents, outcomes);
  if (single) return single;
  const { name, text } = statement(s);
  return { name, text, values: [[...runIds].sort(), JSON.stringify(intentRows), JSON.stringify(outcomeRows)] };
}

function safe(...numbers: Array<number | null | undefined>): boolean {
  return numbers.every((n) => n === null || n === undefined || Number.isSafeInteger(n));
}

/** Postgres text cannot hold a NUL. */
function noNul(values: readonly unknown[]): boolean {
  return values.every((v) => typeof v !== "string" || !v.includes("\0"));
}
