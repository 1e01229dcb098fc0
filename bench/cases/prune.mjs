// Case 13: a writer beside a prune (issue 43: a writer's slowest step during a prune of 100,000
// runs within 3× its slowest without). A SQLite store (durability "power") is filled with ended
// runs (each with an attempt, its released lease, 3 steps and an event), written straight into
// steplog's tables in one transaction, as if by the engine (a run's steps in its side chunk).
// A writer in the same process runs a workflow of sequential steps and times each (ctx.step
// called to resolved): while engine.prune deletes every one of those runs, then alone for as
// many steps. Both figures are the slowest step; the ratio is the target's. The prune's own pace
// is info.

import { createEngine, Database, defineWorkflow, sqliteStore, tmpFile, removeDb } from "../lib.mjs";

const T0 = Date.UTC(2025, 0, 1);

/** `runs` ended runs written into `file`'s steplog tables. */
export function fill(file, runs) {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  const top = db.prepare("SELECT coalesce(max(num), 0) AS n FROM runs").get().n;
  const run = db.prepare(
    `INSERT INTO runs (id, workflow, version, args, status, attempts, budget_used, source, deadline, value, error, waiting_for, wake_at, parent, concurrency_key, rate_key, priority, dedupe_key, trace_context, created_at, updated_at, num)
     VALUES (?, 'old', NULL, '{"n":1}', 'completed', 1, 1, NULL, NULL, '"done"', NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, ?, ?, ?)`,
  );
  const attempt = db.prepare(
    `INSERT INTO attempts (run_id, number, host, boot_id, pid, process_start, started_at, ended_at, ending, from_step, forced, error, reused, consent)
     VALUES (?, 1, 'bench', NULL, 1, NULL, ?, ?, 'completed', NULL, 0, NULL, '[]', NULL)`,
  );
  const lease = db.prepare(`INSERT INTO leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES (?, 1, NULL, 0, ?)`);
  const chunk = db.prepare(`INSERT INTO step_chunks (run_num, chunk) VALUES (?, ?)`);
  const step = db.prepare(
    `INSERT INTO steps (run_num, chunk, run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage, position)
     VALUES (?, ?, ?, ?, 1, ?, ?, 'succeeded', 'idempotent', ?, ?, NULL, NULL, ?, ?, 1, NULL, NULL, ?)`,
  );
  const event = db.prepare(`INSERT INTO events (run_id, seq, name, payload, sent_at, consumed_by, key) VALUES (?, 1, 'note', '"hello"', ?, 'wait', NULL)`);
  db.transaction(() => {
    for (let i = 0; i < runs; i++) {
      const id = `old-${String(i).padStart(7, "0")}`;
      const num = top + i + 1;
      const at = T0 + i;
      run.run(id, at, at + 5, num);
      attempt.run(id, at, at + 5);
      lease.run(id, at + 5);
      chunk.run(num, -num);
      for (let seq = 1; seq <= 3; seq++)
        step.run(num, -num, id, seq, `s${seq}`, `s${seq}`, `${id}:s${seq}`, JSON.stringify({ seq, text: "x".repeat(100) }), at, at + 1, seq - 1);
      event.run(id, at);
    }
  })();
  db.close();
}

export const writer = defineWorkflow({
  name: "bench-writer",
  async run(ctx, n) {
    const times = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await ctx.step("w", async () => i);
      times.push(performance.now() - t);
    }
    return times;
  },
});

/** Runs of `steps` steps until `done(steps timed so far)`, at least once; every step's time. */
export async function write(engine, steps, done) {
  const all = [];
  let k = 0;
  do {
    const result = await engine.start(writer, steps, { id: `w-${Date.now()}-${k++}` });
    all.push(...result.value);
  } while (!done(all.length));
  return all;
}

// Not Math.max(...xs): a slow prune leaves more steps beside it than a call has room for arguments.
export const slowest = (xs) => xs.reduce((a, b) => Math.max(a, b), 0);
export const sorted = (xs) => [...xs].sort((a, b) => a - b);
export const p99 = (xs) => sorted(xs)[Math.floor(xs.length * 0.99)];

/**
 * A warm-up run, then the writer's steps timed beside `engine.prune(options)` until it has ended,
 * then alone for as many steps (at least `aloneRuns` runs): the slowest of more samples is slower
 * by chance alone (an fsync that takes long), so both slowest steps are of as many.
 */
export async function writerBesidePrune(engine, options, writerSteps, aloneRuns) {
  await write(engine, writerSteps, () => true);
  let pruned;
  const started = performance.now();
  const pruning = engine.prune(options).then((r) => (pruned = { ...r, ms: performance.now() - started }));
  const beside = await write(engine, writerSteps, () => pruned !== undefined);
  await pruning;
  const alone = await write(engine, writerSteps, (n) => n >= Math.max(beside.length, aloneRuns * writerSteps));
  const slowestAloneMs = slowest(alone);
  const slowestBesideMs = slowest(beside);
  return {
    pruned,
    writer: {
      prunedRunsPerSec: (pruned.runs / pruned.ms) * 1000,
      stepsAlone: alone.length,
      stepsBeside: beside.length,
      slowestAloneMs,
      slowestBesideMs,
      p99AloneMs: p99(alone),
      p99BesideMs: p99(beside),
      ratio: slowestBesideMs / slowestAloneMs,
    },
  };
}

export async function pruneCase(runs = 100_000, writerSteps = 200, aloneRuns = 10) {
  const file = tmpFile("prune");
  try {
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [writer] });
    await engine.start(writer, 1, { id: "first" }); // the file and its schema
    await engine.close();
    const t = performance.now();
    fill(file, runs);
    const fillMs = performance.now() - t;
    const e2 = createEngine({ store: sqliteStore({ path: file }), workflows: [writer] });
    const { pruned, writer: figures } = await writerBesidePrune(e2, { endedBefore: T0 + runs + 10, workflow: "old" }, writerSteps, aloneRuns);
    await e2.close();
    return { runs, fillMs, pruned, ...figures };
  } finally {
    removeDb(file);
  }
}
