// Case 13 on Postgres: a writer beside a prune. A Postgres store (its own schema, dropped after)
// is filled with ended runs shaped as case 13's (an attempt, a released lease, 3 steps and an
// event each), written straight into steplog's tables by one INSERT … SELECT per table. A writer
// in the same process (sharing its event loop and its pool) runs workflows of sequential steps
// and times each step while engine.prune deletes every one of those runs, then alone for as many steps.
// Each prune batch (one store transaction, PRUNE_BATCH_RUNS runs) is timed too: the question is
// whether a writer's step is ever held for longer than one batch, and the issue's ≤ 3× ratio.

import { createEngine } from "../lib.mjs";
import { slowest, sorted, writer, writerBesidePrune } from "./prune.mjs";

const T0 = Date.UTC(2025, 0, 1);

/** `runs` ended runs written into the schema's steplog tables (created_at T0 + i). */
async function fill(client, schema, runs) {
  const series = `FROM generate_series(0, ${runs - 1}) i`;
  const id = `'old-' || lpad(i::text, 7, '0')`;
  const at = `(${T0} + i)`;
  await client.query("BEGIN");
  await client.query(`INSERT INTO ${schema}.runs (id, workflow, args, status, attempts, budget_used, value, created_at, updated_at)
    SELECT ${id}, 'old', '{"n":1}', 'completed', 1, 1, '"done"', ${at}, ${at} + 5 ${series}`);
  await client.query(`INSERT INTO ${schema}.attempts (run_id, number, host, pid, started_at, ended_at, ending, forced, reused)
    SELECT ${id}, 1, 'bench', 1, ${at}, ${at} + 5, 'completed', false, '[]' ${series}`);
  await client.query(`INSERT INTO ${schema}.leases (run_id, epoch, attempt, expires_at, heartbeat_at) SELECT ${id}, 1, NULL, 0, ${at} + 5 ${series}`);
  await client.query(`INSERT INTO ${schema}.steps (run_id, seq, attempt, key, name, status, effect, idempotency_key, value, intended_at, ended_at, calls, position)
    SELECT ${id}, s, 1, 's' || s, 's' || s, 'succeeded', 'idempotent', ${id} || ':s' || s, '{"seq":' || s || ',"text":"${"x".repeat(100)}"}', ${at}, ${at} + 1, 1, s - 1
    ${series}, generate_series(1, 3) s`);
  await client.query(
    `INSERT INTO ${schema}.events (run_id, seq, name, payload, sent_at, consumed_by) SELECT ${id}, 1, 'note', '"hello"', ${at}, 'wait' ${series}`,
  );
  await client.query("COMMIT");
  await client.query(`ANALYZE ${schema}.runs, ${schema}.attempts, ${schema}.leases, ${schema}.steps, ${schema}.events`);
}

export async function prunePgCase(runs = 10_000, writerSteps = 200, aloneRuns = 10) {
  const url = process.env.STEPLOG_PG_URL;
  if (!url) return { skipped: "set STEPLOG_PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to run it" };
  const pg = (await import("pg")).default;
  const { postgresStore } = await import("steplog/postgres");
  const schema = `steplog_bench_prune_${process.pid}`;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (error) {
    return { skipped: `STEPLOG_PG_URL cannot be reached: ${error.message}` };
  }
  let engine;
  try {
    const store = postgresStore({ connectionString: url, schema, applicationName: "steplog-bench" });
    // Each batch's transaction, timed where the engine calls it.
    const batches = [];
    const pruneRuns = store.pruneRuns.bind(store);
    store.pruneRuns = async (...a) => {
      const t = performance.now();
      try {
        return await pruneRuns(...a);
      } finally {
        batches.push(performance.now() - t);
      }
    };
    engine = createEngine({ store, workflows: [writer] });
    await engine.start(writer, 1, { id: "first" }); // the schema
    const t = performance.now();
    await fill(client, schema, runs);
    const fillMs = performance.now() - t;
    const { pruned, writer: figures } = await writerBesidePrune(engine, { endedBefore: T0 + runs + 10, workflow: "old" }, writerSteps, aloneRuns);
    const left = Number((await client.query(`SELECT count(*) FROM ${schema}.runs WHERE workflow = 'old'`)).rows[0].count);
    if (pruned.runs !== runs || left !== 0) throw new Error(`case 13 (Postgres): pruned ${pruned.runs} of ${runs}, ${left} left`);
    const slowestBatch = slowest(batches);
    return {
      runs,
      fillMs,
      pruned,
      batches: batches.length,
      slowestBatchMs: slowestBatch,
      medianBatchMs: sorted(batches)[Math.floor(batches.length / 2)],
      ...figures,
      // Held by at most one batch: the slowest step beside is no longer than the slowest alone and the slowest batch.
      withinOneBatch: figures.slowestBesideMs <= figures.slowestAloneMs + slowestBatch,
    };
  } finally {
    if (engine) await engine.close().catch(() => {});
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await client.end().catch(() => {});
  }
}
