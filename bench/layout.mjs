// What the steps table's layout costs case 2's shape (not part of `npm run bench`): raw group
// commit of 100 runs × 100 steps, the same rows written three ways, timed in one process
// (medians of 9, the three alternating):
//
//   index    schema 9's layout (the raw baselines'): the (run_num, seq) index, where each run in
//            flight appends to its own place, so a commit of 100 steps writes about 25 of its leaf pages
//   none     no index at all (what a run's steps would cost to write if nothing found them)
//   chunked  the index keyed by (chunk, seq), a run taking a new chunk number (max + 1) every
//            CHUNK steps, with a (run_num, chunk) table listing each run's chunks: the chunks
//            being written sit together at the index's right edge (schema 10's layout)
//
//   node bench/layout.mjs [FULL|NORMAL] [CHUNK=16]
//
// Every variant finds an outcome's row by the rowid its intent was inserted at, as steplog's
// SQLite store does. docs/performance.md ("The SQLite steps
// table: chunks, no triggers") says what the layout bought.

import { cleanup, createRawSchemaFile, median, openRaw, rawRunId, tmpFile } from "./lib.mjs";

const [synchronous = "FULL", chunkArg = "16"] = process.argv.slice(2);
const CHUNK = Number(chunkArg);
const RUNS = 100;
const STEPS = 100;
process.on("exit", cleanup);

let nextRunNum = 0;

async function variant(layout) {
  const file = tmpFile(`layout-${layout}`);
  await createRawSchemaFile(file);
  const db = openRaw(file, synchronous);
  if (layout !== "index") db.exec("DROP INDEX steps_by_run");
  if (layout === "chunked") {
    db.exec(`ALTER TABLE steps ADD COLUMN chunk INTEGER;
      CREATE UNIQUE INDEX steps_by_chunk ON steps (chunk, seq);
      CREATE TABLE step_chunks (run_num INTEGER NOT NULL, chunk INTEGER NOT NULL, PRIMARY KEY (run_num, chunk)) WITHOUT ROWID;`);
  }
  const chunked = layout === "chunked";
  const insert = db.prepare(
    `INSERT INTO steps (run_num, run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage${chunked ? ", chunk" : ""})
     VALUES (?, ?, ?, 1, ?, 'noop', 'intended', 'idempotent', ?, NULL, NULL, NULL, ?, NULL, 0, NULL, NULL${chunked ? ", ?" : ""})`,
  );
  const newChunk = chunked ? db.prepare("SELECT coalesce(max(chunk), 0) + 1 AS c FROM steps").pluck() : undefined;
  const listChunk = chunked ? db.prepare("INSERT INTO step_chunks (run_num, chunk) VALUES (?, ?)") : undefined;
  const outcome = db.prepare(
    `UPDATE steps SET status = 'succeeded', value = ?, ended_at = ?, calls = 1 WHERE rowid = ? AND run_num = ? AND seq = ? AND status = 'intended'`,
  );
  const read = db.prepare(
    chunked
      ? "SELECT * FROM steps WHERE chunk IN (SELECT chunk FROM step_chunks WHERE run_num = ?) AND run_num = ? ORDER BY seq"
      : "SELECT * FROM steps WHERE run_num = ? AND run_num = ? ORDER BY seq",
  );
  const written = [];
  const sample = () => {
    const ids = Array.from({ length: RUNS }, rawRunId);
    const nums = ids.map(() => ++nextRunNum);
    written.push(...nums);
    const rowids = new Array(RUNS);
    const chunks = new Array(RUNS);
    const round = db.transaction((i, t) => {
      for (let r = 0; r < RUNS; r++) {
        if (i > 1 && outcome.run(JSON.stringify({ ok: true, i: i - 1 }), t, rowids[r], nums[r], i - 1).changes !== 1) throw new Error("no open intent");
        const key = i === 1 ? "noop" : `noop#${i}`;
        const values = [nums[r], ids[r], i, key, `${ids[r]}:${key}`, t];
        if (chunked) {
          if ((i - 1) % CHUNK === 0) {
            chunks[r] = newChunk.get();
            listChunk.run(nums[r], chunks[r]);
          }
          values.push(chunks[r]);
        }
        rowids[r] = insert.run(...values).lastInsertRowid;
      }
    });
    const t0 = performance.now();
    for (let i = 1; i <= STEPS; i++) round.immediate(i, Date.now());
    const ms = performance.now() - t0;
    if (read.all(nums[0], nums[0]).length !== STEPS) throw new Error(`${layout}: a run's steps do not read back`);
    return ms;
  };
  const readOne = () => {
    const n = written[Math.floor(Math.random() * written.length)];
    const t0 = performance.now();
    const rows = read.all(n, n).length;
    const ms = performance.now() - t0;
    if (rows !== STEPS) throw new Error(`${layout}: run ${n} read back ${rows} steps`);
    return ms;
  };
  return { layout, db, sample, readOne, ms: [], readMs: [] };
}

const variants = [await variant("index"), await variant("none"), await variant("chunked")];
for (const v of variants) v.sample(); // warm-up
for (let i = 0; i < 9; i++) for (const v of variants) v.ms.push(v.sample());
const base = median(variants[0].ms);
console.log(`raw group commit, ${RUNS} runs × ${STEPS} steps, synchronous=${synchronous}, chunks of ${CHUNK} steps (medians of 9)`);
for (const v of variants) {
  // Reading back: the index layout and the chunked one (no index: a whole-table scan, not timed).
  if (v.layout !== "none") for (let i = 0; i < 200; i++) v.readMs.push(v.readOne());
  const read = v.readMs.length ? `; reading one run's 100 steps ${(median(v.readMs) * 1000).toFixed(0)} µs` : "";
  console.log(
    `  ${v.layout.padEnd(8)} ${((RUNS * STEPS * 1000) / median(v.ms)).toFixed(0).padStart(7)} steps/s, ${(median(v.ms) / base).toFixed(2)}× the time${read}`,
  );
  v.db.close();
}
