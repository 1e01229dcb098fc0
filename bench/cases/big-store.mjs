// Case 4: starting and continuing a run on a store holding many step rows, against the same
// on an empty store. The big store is filled with raw inserts shaped like steplog's rows.

import fs from "node:fs";
import os from "node:os";
import { monotonicFactory } from "ulid";
import { Database, createEngine, createSchemaFile, defineWorkflow, expectStatus, interleave, now, sqliteStore, tmpFile } from "../lib.mjs";

/** Steps a run writes into one chunk (CHUNK_STEPS in src/store/sqlite/schema.ts; the bench imports only public entries). */
const CHUNK_STEPS = 16;

/**
 * Fill `file` (created with steplog's schema) with `runs` completed runs of `steps` steps.
 * Runs are written in groups of `concurrency`, their steps interleaved round by round, as
 * that many concurrent runs would have left them in the append-ordered steps table, each run
 * taking a new chunk every CHUNK_STEPS steps as steplog's store does (schema.ts).
 */
export async function buildBigStore(file, runs, steps, concurrency = 100) {
  const t = now();
  await createSchemaFile(file);
  const db = new Database(file);
  db.pragma("journal_mode = OFF");
  db.pragma("synchronous = OFF");
  db.pragma("cache_size = -262144");
  const insertRun = db.prepare(
    `INSERT INTO runs (id, workflow, version, args, status, attempts, budget_used, source, deadline, value, error, created_at, updated_at, num)
     VALUES (?, 'bench-big', NULL, ?, 'completed', 1, 0, NULL, NULL, ?, NULL, ?, ?, ?)`,
  );
  const insertAttempt = db.prepare(
    `INSERT INTO attempts (run_id, number, host, boot_id, pid, process_start, started_at, ended_at, ending, from_step, forced, error)
     VALUES (?, 1, ?, ?, ?, ?, ?, ?, 'completed', NULL, 0, NULL)`,
  );
  const insertLease = db.prepare(`INSERT INTO leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES (?, 1, NULL, 0, ?)`);
  const insertStep = db.prepare(
    `INSERT INTO steps (run_num, chunk, run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage)
     VALUES (?, ?, ?, ?, 1, ?, 'noop', 'succeeded', 'idempotent', ?, ?, NULL, NULL, ?, ?, 1, NULL, NULL)`,
  );
  const insertChunk = db.prepare(`INSERT INTO step_chunks (run_num, chunk) VALUES (?, ?)`);
  const host = os.hostname();
  const bootId = "00000000-0000-0000-0000-000000000000";
  const nextId = monotonicFactory();
  // A month ago, so the runs made later sort after these ones, as they would.
  let clock = Date.now() - 30 * 24 * 3600 * 1000;
  let num = 0;
  let chunk = 0;
  const group = db.transaction((ids) => {
    const t0 = clock;
    const nums = new Map();
    for (const id of ids) {
      nums.set(id, ++num);
      insertRun.run(id, JSON.stringify(steps), JSON.stringify(steps), t0, t0 + steps, num);
      insertAttempt.run(id, host, bootId, 4242, t0 - 1000, t0, t0 + steps);
      insertLease.run(id, t0 + steps);
    }
    const chunks = new Map();
    for (let seq = 1; seq <= steps; seq++) {
      const key = seq === 1 ? "noop" : `noop#${seq}`;
      const value = JSON.stringify({ ok: true, i: seq });
      for (const id of ids) {
        if ((seq - 1) % CHUNK_STEPS === 0) {
          chunks.set(id, ++chunk);
          insertChunk.run(nums.get(id), chunk);
        }
        insertStep.run(nums.get(id), chunks.get(id), id, seq, key, `${id}:${key}`, value, t0 + seq, t0 + seq);
      }
    }
    clock += steps + 10;
  });
  for (let done = 0; done < runs; done += concurrency) {
    const ids = [];
    for (let i = 0; i < Math.min(concurrency, runs - done); i++) ids.push(nextId(clock));
    group(ids);
  }
  db.pragma("journal_mode = WAL");
  const count = db.prepare("SELECT count(*) AS n FROM steps").get().n;
  const pages = db.pragma("page_count", { simple: true });
  const pageSize = db.pragma("page_size", { simple: true });
  db.close();
  // Written with synchronous=OFF: flush it now, or the first checkpoint of the measured
  // engine would pay for writing back the whole file.
  const fd = fs.openSync(file, "r+");
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  return { runs, stepsPerRun: steps, stepRows: count, fileMB: (pages * pageSize) / 2 ** 20, buildMs: now() - t };
}

/** 10 steps; the last one fails on attempt 1, so a continue reuses 9 and runs 1. */
const failLast = defineWorkflow({
  name: "bench-fail-last",
  async run(ctx) {
    for (let i = 1; i <= 10; i++) {
      await ctx.step("s", async () => {
        if (i === 10 && ctx.attempt === 1) throw new Error("attempt 1 fails at the last step");
        return { ok: true, i };
      });
    }
    return "done";
  },
});

/** Start + continue `pairs` runs per sample on the empty and on the big store, interleaved. */
export async function bigStoreCase(bigFile, durability, pairs) {
  const emptyFile = tmpFile(`c4-empty-${durability}`);
  await createSchemaFile(emptyFile);
  const empty = createEngine({ store: sqliteStore({ path: emptyFile, durability }), workflows: [failLast] });
  const big = createEngine({ store: sqliteStore({ path: bigFile, durability }), workflows: [failLast] });
  const startMs = { empty: [], big: [] };
  const continueMs = { empty: [], big: [] };
  const sample = (engine, which) => async () => {
    let start = 0;
    let cont = 0;
    for (let i = 0; i < pairs; i++) {
      const t0 = now();
      const first = expectStatus(await engine.start(failLast, undefined), "failed", "case 4 start");
      const t1 = now();
      expectStatus(await engine.continue(first.id), "completed", "case 4 continue");
      const t2 = now();
      start += t1 - t0;
      cont += t2 - t1;
    }
    startMs[which].push(start);
    continueMs[which].push(cont);
    return start + cont;
  };
  // Warm-up, not recorded.
  for (const engine of [empty, big]) {
    for (let i = 0; i < 3; i++) {
      const first = await engine.start(failLast, undefined);
      await engine.continue(first.id);
    }
  }
  const timing = await interleave(sample(empty, "empty"), sample(big, "big"));
  await empty.close();
  await big.close();
  return {
    durability,
    pairsPerSample: pairs,
    ...timing,
    startMs,
    continueMs,
    baselineUsPerPair: (timing.baselineMedianMs * 1000) / pairs,
    steplogUsPerPair: (timing.steplogMedianMs * 1000) / pairs,
    ratio: timing.steplogMedianMs / timing.baselineMedianMs,
  };
}
