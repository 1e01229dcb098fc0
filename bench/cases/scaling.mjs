// Case 9: cost as work grows. Steps per second at 1, 10, 100 and 1,000 concurrent runs in one
// process on SQLite (power), each run of the same `steps` steps (so a run's start and end weigh
// the same at every level), and the heap each concurrent run holds while in flight. Throughput should never fall more than 10 % below its peak as
// concurrency grows: what one run costs must not depend on how many others are running.

import { createEngine, expectStatus, gcIfAvailable, median, now, seqWorkflow, sqliteStore, tmpFile, REPS } from "../lib.mjs";

export const SCALING_LEVELS = [1, 10, 100, 1000];

/** Runs of `steps` steps at each concurrency level, medians of REPS. */
export async function scalingCase(stepsPerRun) {
  const store = sqliteStore({ path: tmpFile("c9-lib"), durability: "power" });
  const engine = createEngine({ store, workflows: [seqWorkflow] });
  const level = async (runs) => {
    const steps = stepsPerRun;
    const t = now();
    const results = await Promise.all(Array.from({ length: runs }, () => engine.start(seqWorkflow, steps)));
    const ms = now() - t;
    for (const r of results) expectStatus(r, "completed", `case 9 at ${runs}`);
    return { ms, steps: runs * steps };
  };
  // Heap held per run in flight: runs parked inside a step that waits for a gate, measured once all are in.
  const heldPerRun = async (runs) => {
    let open;
    const gate = new Promise((resolve) => (open = resolve));
    let inside = 0;
    const waiting = (await import("../lib.mjs")).defineWorkflow({
      name: `bench-held-${runs}`,
      async run(ctx) {
        await ctx.step("first", async () => 1);
        return ctx.step("held", async () => {
          inside++;
          await gate;
          return 2;
        });
      },
    });
    gcIfAvailable();
    const before = process.memoryUsage().heapUsed;
    const all = Array.from({ length: runs }, () => engine.start(waiting, undefined));
    while (inside < runs) await new Promise((resolve) => setTimeout(resolve, 5));
    gcIfAvailable();
    const during = process.memoryUsage().heapUsed;
    open();
    await Promise.all(all);
    return (during - before) / runs;
  };

  await level(10); // warm-up
  const out = { stepsPerRun, levels: [] };
  for (const runs of SCALING_LEVELS) {
    const samples = [];
    for (let i = 0; i < REPS; i++) samples.push(await level(runs));
    const ms = median(samples.map((s) => s.ms));
    out.levels.push({
      runs,
      stepsPerRun,
      msSamples: samples.map((s) => s.ms),
      stepsPerSec: (samples[0].steps * 1000) / ms,
    });
  }
  out.heapBytesPerRun = {};
  for (const runs of [100, 1000]) out.heapBytesPerRun[runs] = await heldPerRun(runs);
  await engine.close();
  // The rate climbs while commits are shared by more runs, then should hold: judged from the peak on.
  const rates = out.levels.map((l) => l.stepsPerSec);
  const peakAt = rates.indexOf(Math.max(...rates));
  out.peakStepsPerSec = rates[peakAt];
  out.worstAfterPeak = Math.min(...rates.slice(peakAt));
  out.dropFromPeak = 1 - out.worstAfterPeak / out.peakStepsPerSec;
  return out;
}
