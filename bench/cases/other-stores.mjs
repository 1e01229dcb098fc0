// Case 6: the JSONL and Postgres stores, each against its raw baseline, in the shape of case 1
// (sequential no-op steps in one run, interleaved with the baseline, medians):
//   JSONL: a hand-written journal, one append of outcome(n) + intent(n+1) per step, fsync'd
//          ("power") or not ("process").
//   Postgres: raw `pg`, one statement per step (autocommit: one transaction, one WAL flush), the
//          outcome UPDATE of step n and the intent INSERT of step n+1 in one data-modifying CTE.
// Postgres runs only when STEPLOG_PG_URL is set (as for the tests); it works in a schema of its
// own, dropped afterwards.

import fs from "node:fs";
import { createEngine, expectStatus, interleave, now, rawPgStep, rawPgTable, rawRunId, seqWorkflow, tmpDir, tmpFile } from "../lib.mjs";

async function importOrNull(specifier) {
  try {
    return await import(specifier);
  } catch {
    return null;
  }
}

const summary = (n, timing) => ({
  steps: n,
  ...timing,
  baselineUsPerStep: (timing.baselineMedianMs * 1000) / n,
  steplogUsPerStep: (timing.steplogMedianMs * 1000) / n,
  ratio: timing.steplogMedianMs / timing.baselineMedianMs,
});

/** Raw journal: one file, per step one write of outcome(n) + intent(n+1), then fsync when durable. */
function rawJournal(file, durable) {
  const fd = fs.openSync(file, "a", 0o600);
  return {
    async run(runId, n) {
      let previous = JSON.stringify({ t: "run", runId, workflow: "bench-seq", args: n, at: Date.now() }) + "\n";
      for (let i = 1; i <= n; i++) {
        const key = i === 1 ? "noop" : `noop#${i}`;
        const intent = JSON.stringify({
          t: "intent",
          runId,
          seq: i,
          key,
          name: "noop",
          effect: "idempotent",
          idempotencyKey: `${runId}:${key}`,
          at: Date.now(),
        });
        fs.writeSync(fd, previous + intent + "\n");
        if (durable) fs.fsyncSync(fd);
        const value = await (async () => ({ ok: true, i }))();
        previous = JSON.stringify({ t: "outcome", runId, seq: i, status: "succeeded", value: JSON.stringify(value), at: Date.now() }) + "\n";
      }
      fs.writeSync(fd, previous + JSON.stringify({ t: "end", runId, status: "completed", at: Date.now() }) + "\n");
      if (durable) fs.fsyncSync(fd);
    },
    close: () => fs.closeSync(fd),
  };
}

export async function jsonlCase(durability, n) {
  const mod = await importOrNull("steplog/jsonl");
  if (!mod?.jsonlStore) return { built: false };
  const raw = rawJournal(tmpFile("c6-raw").replace(/\.db$/, ".jsonl"), durability === "power");
  const engine = createEngine({ store: mod.jsonlStore({ path: `${tmpDir()}/c6-${durability}.jsonl`, durability }), workflows: [seqWorkflow] });
  try {
    await raw.run("warm", 200);
    expectStatus(await engine.start(seqWorkflow, 200), "completed", "case 6 jsonl warm-up");
    const timing = await interleave(
      async () => {
        const t = now();
        await raw.run(rawRunId(), n);
        return now() - t;
      },
      async () => {
        const t = now();
        expectStatus(await engine.start(seqWorkflow, n), "completed", "case 6 jsonl");
        return now() - t;
      },
    );
    return { built: true, durability, ...summary(n, timing) };
  } finally {
    raw.close();
    await engine.close();
  }
}

export async function postgresCase(n) {
  const mod = await importOrNull("steplog/postgres");
  if (!mod?.postgresStore) return { built: false };
  const url = process.env.STEPLOG_PG_URL;
  if (!url) return { built: true, skipped: "set STEPLOG_PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to run it" };
  const pg = (await importOrNull("pg"))?.default;
  if (!pg) return { built: true, skipped: "the `pg` client is not installed" };
  const schema = `steplog_bench_${process.pid}`;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (error) {
    return { built: true, skipped: `STEPLOG_PG_URL cannot be reached: ${error.message}` };
  }
  let engine;
  try {
    const settings = {};
    for (const name of ["server_version", "synchronous_commit", "fsync", "wal_sync_method"])
      settings[name] = (await client.query(`SHOW ${name}`)).rows[0][name];
    // The store's schema and the raw table's are apart: the store refuses a schema holding foreign tables.
    await client.query(`CREATE SCHEMA ${schema}_raw`);
    const table = `${schema}_raw.steps`;
    await client.query(rawPgTable(table));
    const step = rawPgStep(table);
    const last = `UPDATE ${table} SET status = 'succeeded', value = $3, ended_at = $4, calls = 1 WHERE run_id = $1 AND seq = $2 AND status = 'intended'`;
    const rawRun = async (runId, steps) => {
      let prevValue = null;
      for (let i = 1; i <= steps; i++) {
        const key = i === 1 ? "noop" : `noop#${i}`;
        await client.query({ name: "step", text: step, values: [runId, i - 1, prevValue, Date.now(), i, key, `${runId}:${key}`] });
        const value = await (async () => ({ ok: true, i }))();
        prevValue = JSON.stringify(value);
      }
      await client.query({ name: "last", text: last, values: [runId, steps, prevValue, Date.now()] });
    };
    engine = createEngine({ store: mod.postgresStore({ connectionString: url, schema, applicationName: "steplog-bench" }), workflows: [seqWorkflow] });
    await rawRun("warm", 200);
    expectStatus(await engine.start(seqWorkflow, 200), "completed", "case 6 postgres warm-up");
    const timing = await interleave(
      async () => {
        const t = now();
        await rawRun(rawRunId(), n);
        return now() - t;
      },
      async () => {
        const t = now();
        expectStatus(await engine.start(seqWorkflow, n), "completed", "case 6 postgres");
        return now() - t;
      },
    );
    return { built: true, settings, ...summary(n, timing) };
  } finally {
    if (engine) await engine.close().catch(() => {});
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await client.query(`DROP SCHEMA IF EXISTS ${schema}_raw CASCADE`).catch(() => {});
    await client.end().catch(() => {});
  }
}
