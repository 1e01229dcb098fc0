// Case 5, run in its own process with --expose-gc: memory after 100, 1,000 and `total`
// completed runs of 3 steps (with BENCH_IDLE=1, at 100 and `total` also once idle), in one steplog engine ("steplog") or on the raw step log
// ("raw"). Prints one JSON line.

import v8 from "node:v8";
import { RawStepLog, cleanup, createEngine, createRawSchemaFile, defineWorkflow, expectStatus, openRaw, rawRunId, sqliteStore } from "../lib.mjs";

// The schema probe makes a temp folder of this process's own.
process.on("exit", cleanup);

const [mode, file, totalArg, batchArg] = process.argv.slice(2);
const total = Number(totalArg);
const batch = Number(batchArg);
if (typeof globalThis.gc !== "function") throw new Error("run with --expose-gc");

const wf = defineWorkflow({
  name: "bench-mem",
  async run(ctx, n) {
    let sum = 0;
    for (let i = 1; i <= n; i++) sum += (await ctx.step("s", async () => ({ ok: true, i }))).i;
    return sum;
  },
});

let runBatch;
let close;
if (mode === "steplog") {
  const engine = createEngine({ store: sqliteStore({ path: file, durability: "process" }), workflows: [wf] });
  runBatch = async (n) => {
    const results = await Promise.all(Array.from({ length: n }, () => engine.start(wf, 3)));
    for (const r of results) expectStatus(r, "completed", "case 5");
  };
  close = () => engine.close();
} else {
  await createRawSchemaFile(file);
  const db = openRaw(file, "NORMAL");
  const log = new RawStepLog(db);
  runBatch = async (n) => {
    for (let i = 0; i < n; i++) await log.run(rawRunId(), 3, "s");
  };
  close = async () => db.close();
}

// Peak RSS, sampled after every batch (getrusage's maxRSS would carry the parent's peak over
// the exec, so it is not used).
let peakRss = 0;
const sampleRss = () => {
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
};

function measure(runs) {
  for (let i = 0; i < 4; i++) globalThis.gc();
  const m = process.memoryUsage();
  // V8's young generation: sized by V8 to the allocation rate, not by what is retained.
  const young = v8.getHeapSpaceStatistics().find((space) => space.space_name === "new_space");
  return {
    newSpaceMB: (young?.physical_space_size ?? 0) / 2 ** 20,
    runs,
    rssMB: m.rss / 2 ** 20,
    heapUsedMB: m.heapUsed / 2 ** 20,
    heapTotalMB: m.heapTotal / 2 ** 20,
    externalMB: m.external / 2 ** 20,
    peakRssMB: peakRss / 2 ** 20,
  };
}

const newSpace = () => v8.getHeapSpaceStatistics().find((space) => space.space_name === "new_space");
const initialNewSpaceSize = newSpace()?.space_size ?? 0;
const IDLE_LIMIT_MS = 45_000;

/**
 * Wait, idle, until V8 has given its young generation back (its memory reducer shrinks it after
 * some seconds without allocation), or IDLE_LIMIT_MS pass; then RSS after gc. What a process
 * holds once the work is over, without V8's sizing for the load it just had.
 */
async function measureIdle(runs) {
  const t = performance.now();
  while ((newSpace()?.space_size ?? 0) > initialNewSpaceSize && performance.now() - t < IDLE_LIMIT_MS) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  const idleMs = performance.now() - t;
  return { ...measure(runs), idleMs, newSpaceShrunk: (newSpace()?.space_size ?? 0) <= initialNewSpaceSize };
}

let done = 0;
async function runUntil(target) {
  while (done < target) {
    const n = Math.min(batch, target - done);
    await runBatch(n);
    sampleRss();
    done += n;
  }
}

const t0 = performance.now();
const points = [];
const idle = [];
for (const target of [100, 1000, total]) {
  await runUntil(target);
  points.push(measure(target));
  // Slow (V8's memory reducer takes 20-45 s to give the young generation back): on request.
  if (process.env.BENCH_IDLE && target !== 1000) idle.push(await measureIdle(target));
}
const ms = performance.now() - t0;
await close();
process.stdout.write(JSON.stringify({ mode, points, idle, ms, batch }) + "\n");
