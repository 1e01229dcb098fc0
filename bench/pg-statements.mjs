// What a sequential step's statement costs on the Postgres server, part by part: the round trip
// of each variant below from one plain `pg` client (no steplog in the way), in blocks of B
// steps of one run each that rotate between the variants (ROUNDS rounds, the order reversed
// every other round), medians of every round trip. Not part of `npm run bench`; see
// docs/performance.md, item 26.
//
//   STEPLOG_PG_URL=postgres://postgres@127.0.0.1:5432/test node bench/pg-statements.mjs
//   B=300 ROUNDS=10 ONLY=raw,steplog node bench/pg-statements.mjs
//
// The variants, each an outcome of step n and the intent of step n+1 in one statement:
//   raw        case 6's baseline: an UPDATE in a CTE and an INSERT, 7 parameters, on a table
//              of its own (steplog's columns without its audit trail)
//   raw26      raw's shape on steplog's steps table with all 26 of steplog's parameters and
//              ON CONFLICT DO NOTHING
//   noFence    steplog's statement without the lease row (no lock, no join), still answering
//              its two counts
//   noAnswer   steplog's statement (the lease row locked and joined) answering nothing
//   steplog    the store's statement (src/store/postgres/prepared-batch.ts)

import pg from "pg";
import { createEngine, rawPgStep, rawPgTable, seqWorkflow } from "./lib.mjs";
import { postgresStore } from "steplog/postgres";

const url = process.env.STEPLOG_PG_URL;
if (!url) {
  console.error("set STEPLOG_PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test)");
  process.exit(2);
}
const schema = `steplog_stmt_${process.pid}`;
const s = `"${schema}"`;
// The store creates its own tables; one run makes it do so.
const setup = createEngine({ store: postgresStore({ connectionString: url, schema }), workflows: [seqWorkflow], tracing: false });
await setup.start(seqWorkflow, 1);
await setup.close();

const client = new pg.Client({ connectionString: url });
await client.connect();
await client.query(rawPgTable(`${s}.raw_steps`));

const COLUMNS = `run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls,
  resolution, usage, written_epoch, position`;
const INTENT = `$1::text, $3::integer, $4::integer, $5::text, $6::text, $7::text, $8::text, $9::text, $10::text, $11::text, $12::text,
  $13::bigint, $14::bigint, $15::integer, $16::text, $17::text, $2::bigint, $18::integer`;
const OUTCOME = `status = $20::text, value = $21::text, error = $22::text, ended_at = $23::bigint, calls = $24::integer,
  resolution = $25::text, usage = $26::text, written_epoch = $2::bigint, written_at = clock_timestamp()`;
const COUNTS = `SELECT (SELECT count(*) FROM ins)::integer AS i, (SELECT count(*) FROM upd)::integer AS u`;

/** Steplog's statement, with its fence (the lease row locked and joined) and its answer or without. */
function steplog({ fence = true, answer = true } = {}) {
  const from = fence ? "FROM locked l" : "";
  const live = fence ? "AND l.epoch = $2::bigint AND l.attempt IS NOT NULL" : "";
  const returning = answer ? "RETURNING 1" : "";
  return `WITH ${fence ? `locked AS (SELECT run_id, epoch, attempt FROM ${s}.leases WHERE run_id = $1::text FOR UPDATE),` : ""}
  ins AS (
    INSERT INTO ${s}.steps (${COLUMNS}) SELECT ${INTENT} ${from} WHERE $3::integer IS NOT NULL ${live}
    ON CONFLICT (run_id, seq) DO NOTHING ${returning}
  ), upd AS (
    UPDATE ${s}.steps t SET ${OUTCOME} ${from}
    WHERE $19::integer IS NOT NULL ${live} AND t.run_id = $1::text AND t.seq = $19::integer AND t.status = 'intended' ${returning}
  )
  ${answer ? COUNTS : "SELECT 1 AS i"}`;
}

const rawValues = (runId, i, key, now, previous) => [runId, i - 1, previous, now, i, key, `${runId}:${key}`];
const stepValues = (runId, i, key, now, previous) => [
  runId,
  1,
  i,
  1,
  key,
  "noop",
  "intended",
  "idempotent",
  `${runId}:${key}`,
  null,
  null,
  null,
  now,
  null,
  0,
  null,
  null,
  null,
  i > 1 ? i - 1 : null,
  "succeeded",
  previous,
  null,
  now,
  1,
  null,
  null,
];

const VARIANTS = {
  raw: {
    text: rawPgStep(`${s}.raw_steps`),
    values: rawValues,
  },
  raw26: {
    text: `WITH outcome AS (UPDATE ${s}.steps t SET ${OUTCOME} WHERE t.run_id = $1::text AND t.seq = $19::integer AND t.status = 'intended')
      INSERT INTO ${s}.steps (${COLUMNS}) VALUES (${INTENT}) ON CONFLICT (run_id, seq) DO NOTHING`,
    values: stepValues,
    lease: true,
  },
  noFence: { text: steplog({ fence: false }), values: stepValues, lease: true, counts: true },
  noAnswer: { text: steplog({ answer: false }), values: stepValues, lease: true },
  steplog: { text: steplog(), values: stepValues, lease: true, counts: true },
};

const names = process.env.ONLY ? process.env.ONLY.split(",") : Object.keys(VARIANTS);
for (const name of names) if (!VARIANTS[name]) throw new Error(`no variant ${name}: ${Object.keys(VARIANTS).join(", ")}`);
const B = Number(process.env.B ?? 400);
const ROUNDS = Number(process.env.ROUNDS ?? 6);
let runs = 0;

/** One run of B steps with the variant; each round trip's µs pushed to `times` (none for a warm-up). */
async function block(name, times) {
  const variant = VARIANTS[name];
  const runId = `r${runs++}`;
  if (variant.lease) {
    await client.query(`INSERT INTO ${s}.leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES ($1, 1, 1, 0, 0)`, [runId]);
  }
  let previous = null;
  for (let i = 1; i <= B; i++) {
    const key = i === 1 ? "noop" : `noop#${i}`;
    const started = performance.now();
    const { rows } = await client.query({ name, text: variant.text, values: variant.values(runId, i, key, Date.now(), previous) });
    times?.push((performance.now() - started) * 1000);
    if (variant.counts && rows[0].i !== 1) throw new Error(`${name}: the intent of step ${i} was not written`);
    previous = JSON.stringify({ ok: true, i });
  }
}

try {
  const times = Object.fromEntries(names.map((name) => [name, []]));
  for (const name of names) await block(name, undefined);
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 ? [...names].reverse() : names) await block(name, times[name]);
  }
  const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
  const base = median(times[names[0]]);
  console.log(`round trip a step, medians of ${ROUNDS * B} (ratio to ${names[0]})`);
  for (const name of names) console.log(`  ${name.padEnd(9)} ${median(times[name]).toFixed(0).padStart(5)} µs  ${(median(times[name]) / base).toFixed(2)}×`);
} finally {
  await client.query(`DROP SCHEMA ${s} CASCADE`);
  await client.end();
}
