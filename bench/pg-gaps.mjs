// Where a sequential Postgres step's time goes, client against server: every query `pg` sends is
// timed, as its round trip (the call to its answer) and the client's gap before it (the last
// answer to this call). Steplog's store and case 6's raw baseline, after WARM warm-up steps
// each, in 8 alternating blocks of 500 steps; medians and 90th percentiles. Not part of
// `npm run bench`; see docs/performance.md, "Postgres: one round trip and one statement a step".
//
//   STEPLOG_PG_URL=postgres://postgres@127.0.0.1:5432/test node bench/pg-gaps.mjs [steplog checkout]
//
// The optional directory is another checkout of steplog with dist/ built (a `git worktree` of an
// earlier commit), to compare two builds' gaps.

import path from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { createEngine, rawPgStep, rawPgTable, rawRunId, seqWorkflow } from "./lib.mjs";

const url = process.env.STEPLOG_PG_URL;
if (!url) {
  console.error("set STEPLOG_PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test)");
  process.exit(2);
}
const root = process.argv[2];
const { postgresStore } = root ? await import(pathToFileURL(path.resolve(root, "dist/postgres.js")).href) : await import("steplog/postgres");

// Every query of every client (the store's pooled ones included) is timed while `timing` is set.
let timing;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (...args) {
  const sample = timing;
  if (!sample) return query.apply(this, args);
  const sent = performance.now();
  if (sample.answered !== undefined) sample.gap.push((sent - sample.answered) * 1000);
  return query.apply(this, args).then((result) => {
    sample.answered = performance.now();
    sample.trip.push((sample.answered - sent) * 1000);
    return result;
  });
};

const schema = `steplog_gaps_${process.pid}`;
const client = new pg.Client({ connectionString: url });
await client.connect();
const table = `${schema}_raw.steps`;
const engine = createEngine({ store: postgresStore({ connectionString: url, schema }), workflows: [seqWorkflow], tracing: false });
try {
  await client.query(`CREATE SCHEMA ${schema}_raw`);
  await client.query(rawPgTable(table));
  const step = rawPgStep(table);
  const raw = async (steps) => {
    const runId = rawRunId();
    let previous = null;
    for (let i = 1; i <= steps; i++) {
      const key = i === 1 ? "noop" : `noop#${i}`;
      await client.query({ name: "step", text: step, values: [runId, i - 1, previous, Date.now(), i, key, `${runId}:${key}`] });
      previous = JSON.stringify(await (async () => ({ ok: true, i }))());
    }
  };
  const steplog = (steps) => engine.start(seqWorkflow, steps);

  const warm = Number(process.env.WARM ?? 3000);
  await raw(warm);
  await steplog(warm);
  const samples = { raw: { trip: [], gap: [] }, steplog: { trip: [], gap: [] } };
  for (let round = 0; round < 8; round++) {
    for (const [name, run] of [
      ["raw", raw],
      ["steplog", steplog],
    ]) {
      timing = { ...samples[name], answered: undefined };
      await run(500);
      timing = undefined;
    }
  }
  const at = (values, q) => [...values].sort((a, b) => a - b)[Math.floor(values.length * q)].toFixed(1);
  for (const [name, { trip, gap }] of Object.entries(samples)) {
    console.log(`${name.padEnd(8)} round trip ${at(trip, 0.5)} µs (p90 ${at(trip, 0.9)}), gap before a query ${at(gap, 0.5)} µs (p90 ${at(gap, 0.9)})`);
  }
} finally {
  timing = undefined;
  await engine.close();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.query(`DROP SCHEMA IF EXISTS ${schema}_raw CASCADE`);
  await client.end();
}
