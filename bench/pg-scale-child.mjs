// One worker process of case 8 (bench/cases/scale-out.mjs): `runs` runs of `steps` no-op steps
// at once on one Postgres, through steplog's store, or raw `pg` writing the same rows with the
// same batching (every run's outcome and next intent of a round in one transaction, sent in one
// round trip on one connection, as the store's group commit does). Each side first warms up on
// the same shape (the runs at once, WARM_STEPS steps each: the JIT, the connection's prepared
// statements, the heap's growth), then waits for the wall-clock time START_AT so every worker of
// a size begins together, and prints { ms, steps, cpuMs, lateMs } (cpuMs: the process's own CPU
// time while timed; lateMs: how late it was for START_AT, 0 when it waited).
//
//   START_AT=<ms since epoch> WARM_STEPS=<n> node bench/pg-scale-child.mjs steplog|raw <schema> <runs> <steps> <tag>
import { createEngine, expectStatus, seqWorkflow } from "./lib.mjs";

const [kind, schema, runsText, stepsText, tag] = process.argv.slice(2);
const runs = Number(runsText);
const steps = Number(stepsText);
const url = process.env.STEPLOG_PG_URL;
const startAt = Number(process.env.START_AT);
const pg = (await import("pg")).default;
const WARM_STEPS = Number(process.env.WARM_STEPS);
const lit = (v) => (v === null ? "NULL" : typeof v === "number" ? String(v) : `'${String(v).replace(/'/g, "''")}'`);

/** How late this worker is for START_AT (0 when it waited): a late worker would run partly alone. */
let lateMs = 0;
async function untilStart() {
  const wait = startAt - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  else lateMs = -wait;
}

if (kind === "steplog") {
  const { postgresStore } = await import("../dist/postgres.js");
  const engine = createEngine({ store: postgresStore({ connectionString: url, schema }), workflows: [seqWorkflow], tracing: false });
  const warm = await Promise.all(Array.from({ length: runs }, (_, i) => engine.start(seqWorkflow, WARM_STEPS, { id: `warm-${tag}-${i}` })));
  for (const r of warm) expectStatus(r, "completed", "case 8 warm-up");
  await untilStart();
  const cpu = process.cpuUsage();
  const t = performance.now();
  const results = await Promise.all(Array.from({ length: runs }, (_, i) => engine.start(seqWorkflow, steps, { id: `${tag}-${i}` })));
  const ms = performance.now() - t;
  const used = process.cpuUsage(cpu);
  for (const r of results) expectStatus(r, "completed", "case 8");
  await engine.close();
  process.stdout.write(JSON.stringify({ ms, steps: runs * steps, cpuMs: (used.user + used.system) / 1000, lateMs }) + "\n");
} else {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const table = `${schema}.steps`;
  await rawRuns(`warm-${tag}`, WARM_STEPS);
  await untilStart();
  const cpu = process.cpuUsage();
  const t = performance.now();
  await rawRuns(tag, steps);
  const ms = performance.now() - t;
  const used = process.cpuUsage(cpu);
  await client.end();
  process.stdout.write(JSON.stringify({ ms, steps: runs * steps, cpuMs: (used.user + used.system) / 1000, lateMs }) + "\n");

  /** The runs at once, `count` steps each: every run's outcome and next intent of a round in one transaction. */
  async function rawRuns(prefix, count) {
    const ids = Array.from({ length: runs }, (_, i) => `${prefix}-${i}`.padEnd(26, "x"));
    const values = new Array(runs).fill(null);
    for (let seq = 1; seq <= count + 1; seq++) {
      const now = Date.now();
      const parts = ["BEGIN"];
      for (let r = 0; r < runs; r++) {
        if (seq > 1)
          parts.push(
            `UPDATE ${table} SET status = 'succeeded', value = ${lit(values[r])}, ended_at = ${now}, calls = 1 WHERE run_id = ${lit(ids[r])} AND seq = ${seq - 1} AND status = 'intended'`,
          );
        if (seq <= count) {
          const key = seq === 1 ? "noop" : `noop#${seq}`;
          parts.push(
            `INSERT INTO ${table} (run_id, seq, attempt, key, name, status, effect, idempotency_key, intended_at, calls) VALUES (${lit(ids[r])}, ${seq}, 1, ${lit(key)}, 'noop', 'intended', 'idempotent', ${lit(`${ids[r]}:${key}`)}, ${now}, 0)`,
          );
        }
      }
      parts.push("COMMIT");
      await client.query(parts.join(";\n"));
      // Each run's no-op step, between its intent and its outcome.
      for (let r = 0; r < runs; r++) values[r] = JSON.stringify(await (async () => ({ ok: true, i: seq }))());
    }
  }
}
