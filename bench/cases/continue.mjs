// Case 3: continue a run whose steps all succeeded, redoing the last one (fromStep), against a
// raw select of the run's rows plus JSON.parse of each value.

import { createEngine, expectStatus, interleave, now, openRaw, seqWorkflow, sqliteStore, tmpFile } from "../lib.mjs";

const STEP_COLUMNS = `run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage`;

export async function continueCase(sizes, durability) {
  const file = tmpFile("c3");
  // Build the runs at "process" (it is setup, not measured), then close that engine.
  const builder = createEngine({ store: sqliteStore({ path: file, durability: "process" }), workflows: [seqWorkflow] });
  const ids = {};
  for (const n of sizes) {
    const id = `c3-${n}`;
    expectStatus(await builder.start(seqWorkflow, n, { id }), "completed", `case 3 build ${n}`);
    ids[n] = id;
  }
  await builder.close();

  const engine = createEngine({ store: sqliteStore({ path: file, durability }), workflows: [seqWorkflow] });
  const raw = openRaw(file, durability === "power" ? "FULL" : "NORMAL");
  const select = raw.prepare(`SELECT ${STEP_COLUMNS} FROM steps WHERE run_num = (SELECT num FROM runs WHERE id = ?) ORDER BY seq`);
  const rawRead = (id) => {
    const rows = select.all(id);
    let sum = 0;
    for (const row of rows) sum += JSON.parse(row.value).i;
    return sum;
  };

  const out = {};
  for (const n of sizes) {
    const id = ids[n];
    const lastKey = `noop#${n}`;
    const cont = async () => expectStatus(await engine.continue(id, { fromStep: lastKey }), "completed", `case 3 continue ${n}`);
    // Warm-up
    await cont();
    rawRead(id);
    const timing = await interleave(
      async () => {
        const t = now();
        rawRead(id);
        return now() - t;
      },
      async () => {
        const t = now();
        await cont();
        return now() - t;
      },
    );
    out[n] = {
      steps: n,
      ...timing,
      baselineUsPerStep: (timing.baselineMedianMs * 1000) / n,
      steplogUsPerStep: (timing.steplogMedianMs * 1000) / n,
      ratio: timing.steplogMedianMs / timing.baselineMedianMs,
    };
  }
  raw.close();
  await engine.close();
  const [small, large] = sizes;
  return {
    durability,
    sizes: out,
    ratio: out[large].ratio,
    // > 1: the per-step cost grows with the run's length.
    perStepGrowth: out[large].steplogUsPerStep / out[small].steplogUsPerStep,
  };
}
