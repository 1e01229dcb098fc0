// Case 8, the scale-out path: 1, 2 and 4 worker processes on one Postgres, each running 50 runs
// of 100 steps at once, against raw `pg` writing the same rows with the same number of
// connections and the same batching (bench/pg-scale-child.mjs). Steps per second for all the
// workers of a size together (all steps / the slowest worker's time, every worker started at
// one wall-clock instant, after a warm-up of the same shape), and the ratio to raw at each size:
// medians of REPEATS, raw and steplog alternating.

import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const CHILD = fileURLToPath(new URL("../pg-scale-child.mjs", import.meta.url));
export const SCALE_WORKERS = [1, 2, 4];
const REPEATS = 3;
/** Steps a run in each worker's warm-up pass (the timed pass's shape: with 20, a steplog worker still used twice a warm one's CPU a step). */
const WARM_STEPS = 100;

/** Time for every worker to load and warm up before they start together; doubled after a pass in which one was late. */
let leadMs = 5000;

async function size(kind, schema, workers, runs, steps) {
  for (;;) {
    const pass = await sizeOnce(kind, schema, workers, runs, steps);
    if (pass) return pass;
    leadMs *= 2;
  }
}

/** One pass, or undefined when a worker was late for the common start (it would have run partly alone). */
async function sizeOnce(kind, schema, workers, runs, steps) {
  const startAt = Date.now() + leadMs;
  const outs = await Promise.all(
    Array.from({ length: workers }, (_, w) =>
      run(process.execPath, [CHILD, kind, schema, String(runs), String(steps), `${kind}${workers}w${w}-${Date.now()}`], {
        env: { ...process.env, START_AT: String(startAt), WARM_STEPS: String(WARM_STEPS) },
        timeout: 300_000,
        maxBuffer: 4 * 1024 * 1024,
      }),
    ),
  );
  const reports = outs.map((o) => JSON.parse(o.stdout.trim().split("\n").at(-1)));
  if (reports.some((r) => r.lateMs > 0)) return undefined;
  const slowest = Math.max(...reports.map((r) => r.ms));
  const steps_ = reports.reduce((sum, r) => sum + r.steps, 0);
  const cpuMs = reports.reduce((sum, r) => sum + r.cpuMs, 0);
  return { workers, ms: reports.map((r) => r.ms), stepsPerSec: (steps_ * 1000) / slowest, cpuUsPerStep: (cpuMs * 1000) / steps_ };
}

export async function scaleOutCase(runs = 50, steps = 100) {
  const url = process.env.STEPLOG_PG_URL;
  if (!url) return { skipped: "set STEPLOG_PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to run it" };
  const pg = (await import("pg")).default;
  const { postgresStore } = await import("../../dist/postgres.js");
  const { createEngine, seqWorkflow } = await import("../lib.mjs");
  const schema = `steplog_bench8_${process.pid}`;
  const raw = `${schema}_raw`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    // steplog's schema in both: the store's own, and a copy for raw (the store refuses foreign tables in its schema).
    for (const s of [schema, raw]) {
      // A first write creates and migrates the schema.
      const engine = createEngine({ store: postgresStore({ connectionString: url, schema: s }), workflows: [seqWorkflow], tracing: false });
      await engine.start(seqWorkflow, 1, { id: "schema" });
      await engine.close();
    }
    const out = { runsPerWorker: runs, stepsPerRun: steps, warmUpStepsPerRun: WARM_STEPS, sizes: [] };
    for (const workers of SCALE_WORKERS) {
      const raws = [];
      const steplogs = [];
      for (let i = 0; i < REPEATS; i++) {
        raws.push(await size("raw", raw, workers, runs, steps));
        steplogs.push(await size("steplog", schema, workers, runs, steps));
      }
      const r = median(raws);
      const s = median(steplogs);
      out.sizes.push({
        workers,
        rawStepsPerSec: r.stepsPerSec,
        steplogStepsPerSec: s.stepsPerSec,
        ratio: s.stepsPerSec / r.stepsPerSec,
        rawMs: r.ms,
        steplogMs: s.ms,
        // The worker processes' own CPU a step (the server's is not in it).
        rawCpuUsPerStep: r.cpuUsPerStep,
        steplogCpuUsPerStep: s.cpuUsPerStep,
        repeats: REPEATS,
      });
    }
    return out;
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.query(`DROP SCHEMA IF EXISTS ${raw} CASCADE`).catch(() => {});
    await admin.end();
  }
}

/** The sample with the median rate. */
function median(samples) {
  return [...samples].sort((a, b) => a.stepsPerSec - b.stepsPerSec)[Math.floor(samples.length / 2)];
}
