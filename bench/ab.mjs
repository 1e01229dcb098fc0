// Two builds of steplog against each other on case 1's shape, in one process: is a change
// faster? Case 1 compares steplog with raw SQLite, and its samples spread with the disk's fsync
// (±10 % a 2,000-step sample), so a change worth 1 % of a step cannot be seen by comparing one
// bench run with another. Here both builds run in one process, in pairs that alternate which
// goes first, so what the disk does moves both sides of a pair.
//
//   node bench/ab.mjs <dirA> <dirB> [power|process] [pairs]
//
// Each directory is a checkout with `npm run build` done (its dist/ is imported); e.g. a
// `git worktree` of the commit before a change, and this checkout. Prints each side's median
// µs a step, the ratio of the medians (B ÷ A) and the median of the pairs' ratios. Run it with
// both directories the same to see the noise: the ratio then is 1 give or take what this
// machine's disk does (1.014, pairs 0.99–1.04, over 15 pairs at FULL on 2026-12-03,
// where steplog against raw in case 1 spread 1.00–1.20 a pair).
//
//   STEPLOG_PG_URL=postgres://postgres@127.0.0.1:5432/test node bench/ab.mjs <dirA> <dirB> postgres [pairs]
//
// does the same on the Postgres store (case 6's shape: runs of 1,000 steps), each build in a
// schema of its own, dropped afterwards (docs/performance.md, "Measuring a change").

import path from "node:path";
import { pathToFileURL } from "node:url";
import { cleanup, median, tmpFile } from "./lib.mjs";

const [dirA, dirB, durability = "power", pairsArg = "15"] = process.argv.slice(2);
if (!dirA || !dirB || !["power", "process", "postgres"].includes(durability)) {
  console.error("usage: node bench/ab.mjs <dirA> <dirB> [power|process|postgres] [pairs]");
  process.exit(2);
}
const postgres = durability === "postgres";
const url = process.env.STEPLOG_PG_URL;
if (postgres && !url) {
  console.error("set STEPLOG_PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to compare on Postgres");
  process.exit(2);
}
const PAIRS = Math.max(1, Number(pairsArg) | 0);
const STEPS = postgres ? 1000 : 2000;
process.on("exit", cleanup);

/** One build's engine on its own store file, with case 1's workflow defined by that build. */
async function side(dir, label) {
  const dist = (file) => pathToFileURL(path.resolve(dir, "dist", file)).href;
  const { createEngine, defineWorkflow } = await import(dist("index.js"));
  const store = postgres
    ? (await import(dist("postgres.js"))).postgresStore({ connectionString: url, schema: `steplog_ab_${label}_${process.pid}` })
    : (await import(dist("sqlite.js"))).sqliteStore({ path: tmpFile(`ab-${label}`), durability });
  const workflow = defineWorkflow({
    name: "bench-seq",
    async run(ctx, n) {
      for (let i = 1; i <= n; i++) await ctx.step("noop", async () => ({ ok: true, i }));
      return n;
    },
  });
  const engine = createEngine({ store, workflows: [workflow] });
  return {
    engine,
    /** µs a step of one run of `n` steps. */
    async time(n) {
      const t = performance.now();
      const result = await engine.start(workflow, n);
      if (result.status !== "completed") throw new Error(`build ${label}: the run ended ${result.status}: ${JSON.stringify(result.error)}`);
      return ((performance.now() - t) * 1000) / n;
    },
  };
}

const a = await side(dirA, "a");
const b = await side(dirB, "b");
// Warm-up: a whole sample's worth each (the JIT, the files' first pages), then A once more, so
// that in the pairs below each side follows itself and the other equally often (a run that
// follows the other build's is slower for its first steps; on Postgres, by ~10 %: with B last
// before the pairs, the same build against itself measured 0.92).
await a.time(STEPS);
await b.time(STEPS);
await a.time(STEPS);

const usA = [];
const usB = [];
for (let i = 0; i < PAIRS; i++) {
  if (i % 2 === 0) {
    usA.push(await a.time(STEPS));
    usB.push(await b.time(STEPS));
  } else {
    usB.push(await b.time(STEPS));
    usA.push(await a.time(STEPS));
  }
}
await a.engine.close();
await b.engine.close();
if (postgres) {
  const pg = (await import("pg")).default;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  for (const label of ["a", "b"]) await client.query(`DROP SCHEMA IF EXISTS steplog_ab_${label}_${process.pid} CASCADE`);
  await client.end();
}

const ratios = usB.map((us, i) => us / usA[i]);
console.log(
  `${durability}, ${PAIRS} pairs of ${STEPS} steps: A ${median(usA).toFixed(1)} µs/step, B ${median(usB).toFixed(1)} µs/step, ` +
    `B ÷ A ${(median(usB) / median(usA)).toFixed(3)} (pairs: median ${median(ratios).toFixed(3)}, ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
);
