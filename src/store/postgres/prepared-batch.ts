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
import { STEP_INSERT_COLUMNS, lockLeaseText } from "./sql.js";

type Intent = Extract<AttemptWrite, { kind: "intent" }>;
type Outcome = Extract<AttemptWrite, { kind: "outcome" }>;

export interface PreparedQuery {
  name: string;
  text: string;
  values: unknown[];
  /**
   * The sequential step's statement (one run: at most an intent and an outcome), which applies
   * all of its writes or none: its row count is 1 when all applied. Else the rows of PreparedRow.
   */
  single: boolean;
}

/**
 * One row of the statement's answer. The first is always the count of intents inserted
 * (`seq`) and outcomes applied (`epoch`), k = 3; the rows naming which applied and the leases
 * found follow only when a count falls short of the batch's (rare: a lease lost, a conflict):
 * an intent inserted (0) or an outcome applied (1), each with the epoch it was written under
 * (two attempts of one run may write the same seq in one batch: only the live one applied), and
 * a lease found (2). Parsing a row a write on every batch cost a worker more than building the
 * batch did.
 */
export interface PreparedRow {
  k: number;
  run_id: string | null;
  seq: number | string | null;
  epoch: number | string | null;
  attempt: number | null;
}

type Named = { name: string; text: string };

/** The counts, then (only when one falls short of the expected $COUNTS) which applied and the leases. */
const answer = (counts: string) => `, n AS (SELECT (SELECT count(*) FROM ins) AS i, (SELECT count(*) FROM upd) AS u)
  SELECT 3 AS k, NULL::text AS run_id, n.i AS seq, n.u AS epoch, NULL::integer AS attempt FROM n
  UNION ALL SELECT 0, run_id, seq, written_epoch, NULL FROM ins, n WHERE ${counts}
  UNION ALL SELECT 1, run_id, seq, written_epoch, NULL FROM upd, n WHERE ${counts}
  UNION ALL SELECT 2, run_id, NULL, epoch, attempt FROM locked, n WHERE ${counts}`;

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
    RETURNING run_id, seq, written_epoch
  ), upd AS (
    UPDATE ${s}.steps t SET status = v.status, value = v.value, error = v.error, ended_at = v.ended_at, calls = v.calls,
      resolution = v.resolution, usage = v.usage, written_epoch = v.epoch, written_at = clock_timestamp()
    FROM json_to_recordset($3::json) AS v(run_id text, seq integer, status text, value text, error text, ended_at bigint, calls integer,
      resolution text, usage text, epoch bigint)
    JOIN locked l ON l.run_id = v.run_id AND l.epoch = v.epoch AND l.attempt IS NOT NULL
    WHERE t.run_id = v.run_id AND t.seq = v.seq AND t.status = 'intended'
    RETURNING t.run_id, t.seq, t.written_epoch
  )
  ${answer("n.i <> $4::integer OR n.u <> $5::integer")}`,
);

/** The lease row of run $1, locked (the fence), as the CTE the step's statements join. */
const lockLease = (s: string) => `locked AS (${lockLeaseText(s)})`;

/** True for the locked lease while it is the one of epoch $2, an attempt holding it. */
const LIVE = "l.epoch = $2::bigint AND l.attempt IS NOT NULL";

/** The intent's row inserted while the lease is live; its values are $3 to $18. */
const intentInsert = (s: string) => `INSERT INTO ${s}.steps (${STEP_INSERT_COLUMNS})
    SELECT $1::text, $3::integer, $4::integer, $5::text, $6::text, $7::text, $8::text, $9::text, $10::text, $11::text, $12::text,
      $13::bigint, $14::bigint, $15::integer, $16::text, $17::text, $2::bigint, $18::integer
    FROM locked l WHERE ${LIVE}`;

/** The outcome applied to its open intent while the lease is live; its values are $n to $n+7. */
function outcomeUpdate(s: string, n: number): string {
  const p = (i: number) => `$${n + i}`;
  return `UPDATE ${s}.steps t SET status = ${p(1)}::text, value = ${p(2)}::text, error = ${p(3)}::text, ended_at = ${p(4)}::bigint,
      calls = ${p(5)}::integer, resolution = ${p(6)}::text, usage = ${p(7)}::text, written_epoch = $2::bigint, written_at = clock_timestamp()
    FROM locked l WHERE ${LIVE} AND t.run_id = $1::text AND t.seq = ${p(0)}::integer AND t.status = 'intended'`;
}

/**
 * The sequential step's statements — one run's outcome and its next intent under one fence, or
 * either alone — with a parameter a value (no JSON to parse: about 0.15 ms less a step on a
 * small server). Each applies all of its writes or none, so its row count alone says which: the
 * intent is inserted only if the outcome applied, and an intent whose row exists fails the
 * whole statement (no ON CONFLICT). A step's statement that applied nothing changed nothing,
 * and its batch goes the usual way, which tells each write why.
 *
 * Their shape is the cheapest measured on the server (docs/performance.md, "Postgres: one round trip and one statement a step"): the
 * INSERT or UPDATE is the statement itself, not a data-modifying CTE under a SELECT of counts,
 * and there is no ON CONFLICT arbiter to probe. The earlier shape (both writes as CTEs under a
 * SELECT of their two counts, the intent with ON CONFLICT) cost the server 10–15 µs of CPU a
 * step more, and in some backends far more: it grew and trimmed their heap on every execution.
 */
const stepStatement = namedOnce(
  "steplog_step",
  (s) => `WITH ${lockLease(s)}, upd AS (${outcomeUpdate(s, 19)} RETURNING 1)
  ${intentInsert(s)} AND EXISTS (SELECT 1 FROM upd)`,
);
const intentStatement = namedOnce("steplog_intent", (s) => `WITH ${lockLease(s)} ${intentInsert(s)}`);
const outcomeStatement = namedOnce("steplog_outcome", (s) => `WITH ${lockLease(s)} ${outcomeUpdate(s, 3)}`);

/**
 * The batch as the prepared statement, or undefined when it must go another way: an outcome
 * that consumes an event, an outcome for an intent of the same batch, a value a parameter
 * cannot carry (an epoch or number that is not a safe integer, a string holding a NUL).
 */
export function preparedBatch(s: string, intents: readonly Intent[], outcomes: readonly Outcome[]): PreparedQuery | undefined {
  for (const w of intents) if (!intentFits(w)) return undefined;
  for (const w of outcomes) if (!outcomeFits(w)) return undefined;
  if (intents.length <= 1 && outcomes.length <= 1) {
    const intent = intents[0];
    const outcome = outcomes[0];
    if (!intent || !outcome) return singleBatch(s, intent, outcome);
    const { runId, epoch } = intent.fence;
    if (outcome.fence.runId === runId && outcome.fence.epoch === epoch) {
      return outcome.outcome.seq === intent.step.seq ? undefined : singleBatch(s, intent, outcome);
    }
  }
  return jsonBatch(s, intents, outcomes);
}

/** One run's outcome and its next intent under one fence, or either alone, a parameter a value. */
function singleBatch(s: string, intent: Intent | undefined, outcome: Outcome | undefined): PreparedQuery {
  const fence = (intent ?? outcome)!.fence;
  const t = intent?.step;
  const o = outcome?.outcome;
  const values: unknown[] = [fence.runId, fence.epoch];
  if (t) {
    values.push(t.seq, t.attempt, t.key, t.name, t.status, t.effect, t.idempotencyKey, t.value, t.error, t.version);
    values.push(t.intendedAt, t.endedAt, t.calls, t.resolution, t.usage, t.position ?? null);
  }
  if (o) values.push(o.seq, o.status, o.value, o.error, o.endedAt, o.calls, o.resolution, o.usage);
  const { name, text } = (t && o ? stepStatement : t ? intentStatement : outcomeStatement)(s);
  return { name, text, values, single: true };
}

/**
 * Any other batch, its rows as two JSON texts written field by field (no object a row; a null
 * field is left out, which json_to_recordset reads as null).
 */
function jsonBatch(s: string, intents: readonly Intent[], outcomes: readonly Outcome[]): PreparedQuery | undefined {
  const runIds = new Set<string>();
  // The seq of each run's intent in the batch (more than one a run only with parallel steps).
  const intentSeq = new Map<string, number>();
  let moreIntents: Set<string> | undefined;
  let intentJson = "[";
  for (const { fence, step: t } of intents) {
    if (intentJson.length > 1) intentJson += ",";
    intentJson += `{"run_id":${JSON.stringify(t.runId)},"seq":${t.seq},"attempt":${t.attempt},"key":${JSON.stringify(t.key)},"name":${JSON.stringify(t.name)},"status":"${t.status}","effect":"${t.effect}","idempotency_key":${JSON.stringify(t.idempotencyKey)},"intended_at":${t.intendedAt},"calls":${t.calls},"epoch":${fence.epoch}`;
    if (t.value !== null) intentJson += `,"value":${JSON.stringify(t.value)}`;
    if (t.error !== null) intentJson += `,"error":${JSON.stringify(t.error)}`;
    if (t.version !== null) intentJson += `,"version":${JSON.stringify(t.version)}`;
    if (t.endedAt !== null) intentJson += `,"ended_at":${t.endedAt}`;
    if (t.resolution !== null) intentJson += `,"resolution":${JSON.stringify(t.resolution)}`;
    if (t.usage !== null) intentJson += `,"usage":${JSON.stringify(t.usage)}`;
    if (t.position != null) intentJson += `,"position":${t.position}`;
    intentJson += "}";
    runIds.add(t.runId);
    if (!intentSeq.has(t.runId)) intentSeq.set(t.runId, t.seq);
    else (moreIntents ??= new Set()).add(`${t.runId}\0${t.seq}`);
  }
  let outcomeJson = "[";
  for (const { fence, outcome: o } of outcomes) {
    if (intentSeq.get(fence.runId) === o.seq || moreIntents?.has(`${fence.runId}\0${o.seq}`)) return undefined;
    if (outcomeJson.length > 1) outcomeJson += ",";
    outcomeJson += `{"run_id":${JSON.stringify(fence.runId)},"seq":${o.seq},"status":"${o.status}","ended_at":${o.endedAt},"calls":${o.calls},"epoch":${fence.epoch}`;
    if (o.value !== null) outcomeJson += `,"value":${JSON.stringify(o.value)}`;
    if (o.error !== null) outcomeJson += `,"error":${JSON.stringify(o.error)}`;
    if (o.resolution !== null) outcomeJson += `,"resolution":${JSON.stringify(o.resolution)}`;
    if (o.usage !== null) outcomeJson += `,"usage":${JSON.stringify(o.usage)}`;
    outcomeJson += "}";
    runIds.add(fence.runId);
  }
  intentJson += "]";
  outcomeJson += "]";
  const { name, text } = statement(s);
  return { name, text, values: [[...runIds].sort(), intentJson, outcomeJson, intents.length, outcomes.length], single: false };
}

/** An intent the statements can carry: its own run's fence, safe integers, no NUL (checked here for the single statement). */
function intentFits({ fence, step: t }: Intent): boolean {
  return (
    t.runId === fence.runId &&
    Number.isSafeInteger(fence.epoch) &&
    Number.isSafeInteger(t.seq) &&
    Number.isSafeInteger(t.attempt) &&
    Number.isSafeInteger(t.intendedAt) &&
    Number.isSafeInteger(t.calls) &&
    (t.endedAt === null || Number.isSafeInteger(t.endedAt)) &&
    (t.position == null || Number.isSafeInteger(t.position)) &&
    // Written into the JSON without escaping: they must be plain words (they always are).
    PLAIN.test(t.status) &&
    PLAIN.test(t.effect) &&
    noNul(t.runId) &&
    noNul(t.key) &&
    noNul(t.name) &&
    noNul(t.idempotencyKey) &&
    noNul(t.value) &&
    noNul(t.error) &&
    noNul(t.version) &&
    noNul(t.resolution) &&
    noNul(t.usage)
  );
}

/** An outcome the statements can carry (not one that consumes an event: that needs its own check; nor one adding spend). */
function outcomeFits({ fence, outcome: o }: Outcome): boolean {
  return (
    o.consumes === undefined &&
    o.spend === undefined &&
    Number.isSafeInteger(fence.epoch) &&
    Number.isSafeInteger(o.seq) &&
    Number.isSafeInteger(o.endedAt) &&
    Number.isSafeInteger(o.calls) &&
    PLAIN.test(o.status) &&
    noNul(fence.runId) &&
    noNul(o.value) &&
    noNul(o.error) &&
    noNul(o.resolution) &&
    noNul(o.usage)
  );
}

const PLAIN = /^[a-z_]+$/;

/** Postgres text cannot hold a NUL. */
function noNul(value: string | null | undefined): boolean {
  return value == null || !value.includes("\0");
}
