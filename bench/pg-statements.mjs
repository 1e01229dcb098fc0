// What a sequential step's statement costs on the Postgres server, part by part: the round trip
// of each variant below from one plain `pg` client (no steplog in the way), in blocks of B
// steps of one run each that rotate between the variants (ROUNDS rounds, the order reversed
// every other round), medians of every round trip; and, when the server runs on this machine
// (its backend's /proc/<pid>/schedstat readable), the backend's CPU time a step, the median of
// the blocks, which the server's wall-clock noise does not blur. Not part of `npm run bench`;
// see docs/performance.md, "Postgres: one round trip and one statement a step".
//
//   STEPLOG_PG_URL=postgres://postgres@127.0.0.1:5432/test node bench/pg-statements.mjs
//   B=300 ROUNDS=10 ONLY=raw,steplog node bench/pg-statements.mjs
//
// The variants, each an outcome of step n and the intent of step n+1 in one statement:
//   raw        case 6's baseline: an UPDATE in a CTE and an INSERT, 7 parameters, on a table
//              of its own (steplog's columns without its audit trail)
//   raw26      raw's shape on steplog's steps table with all 26 of steplog's parameters and
//              ON CONFLICT DO NOTHING
//   ctes       the store's statement until e958f29: the lease row locked, both writes as
//              data-modifying CTEs (the intent with ON CONFLICT DO NOTHING) under a SELECT of
//              their two counts
//   noFence    ctes without the lease row (no lock, no join), still answering its two counts
//   noAnswer   ctes answering nothing
//   steplog    the store's statement (src/store/postgres/prepared-batch.ts): the lease row
//              locked and the outcome in CTEs, the INSERT of the intent the statement itself,
//              inserted only if the outcome applied; its row count is its answer

import fs from "node:fs";
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

/** The store's statement until e958f29, with its fence (the lease row locked and joined) and its answer or without. */
function ctes({ fence = true, answer = true } = {}) {
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
  ctes: { text: ctes(), values: stepValues, lease: true, counts: true },
  noFence: { text: ctes({ fence: false }), values: stepValues, lease: true, counts: true },
  noAnswer: { text: ctes({ answer: false }), values: stepValues, lease: true },
  steplog: {
    text: `WITH locked AS (SELECT epoch, attempt FROM ${s}.leases WHERE run_id = $1::text FOR UPDATE),
      upd AS (UPDATE ${s}.steps t SET ${OUTCOME} FROM locked l
        WHERE l.epoch = $2::bigint AND l.attempt IS NOT NULL AND t.run_id = $1::text AND t.seq = $19::integer AND t.status = 'intended' RETURNING 1)
      INSERT INTO ${s}.steps (${COLUMNS}) SELECT ${INTENT} FROM locked l
        WHERE l.epoch = $2::bigint AND l.attempt IS NOT NULL AND ($19::integer IS NULL OR EXISTS (SELECT 1 FROM upd))`,
    values: stepValues,
    lease: true,
    rowCount: true,
  },
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
    const { rows, rowCount } = await client.query({ name, text: variant.text, values: variant.values(runId, i, key, Date.now(), previous) });
    times?.push((performance.now() - started) * 1000);
    if (variant.counts && rows[0].i !== 1) throw new Error(`${name}: the intent of step ${i} was not written`);
    if (variant.rowCount && rowCount !== 1) throw new Error(`${name}: the writes of step ${i} did not apply`);
    previous = JSON.stringify({ ok: true, i });
  }
}

try {
  // The backend's CPU time so far (ns), when the server runs here; else undefined.
  const pid = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid;
  const cpuNs = () => {
    try {
      return Number(fs.readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      return undefined;
    }
  };
  const times = Object.fromEntries(names.map((name) => [name, []]));
  const cpu = Object.fromEntries(names.map((name) => [name, []]));
  for (const name of names) await block(name, undefined);
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 ? [...names].reverse() : names) {
      const before = cpuNs();
      await block(name, times[name]);
      const after = cpuNs();
      if (before !== undefined && after !== undefined) cpu[name].push((after - before) / 1000 / B);
    }
  }
  const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
  const base = median(times[names[0]]);
  const baseCpu = cpu[names[0]].length ? median(cpu[names[0]]) : undefined;
  console.log(`round trip a step, medians of ${ROUNDS * B} (ratio to ${names[0]})${baseCpu ? "; the server's CPU a step, median of the blocks" : ""}`);
  for (const name of names) {
    const server = baseCpu ? `   server CPU ${median(cpu[name]).toFixed(0).padStart(4)} µs  ${(median(cpu[name]) / baseCpu).toFixed(2)}×` : "";
    console.log(`  ${name.padEnd(9)} ${median(times[name]).toFixed(0).padStart(5)} µs  ${(median(times[name]) / base).toFixed(2)}×${server}`);
  }
} finally {
  await client.query(`DROP SCHEMA ${s} CASCADE`);
  await client.end();
}
