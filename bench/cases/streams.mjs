// Case 12: stream write cost. `n` chunks written by ctx.stream inside one step, against raw rows
// inserted with better-sqlite3 into a table of the same shape, in the same process and run, at
// durability "power" (synchronous FULL):
//   burst     the chunks written in one turn of the event loop (group commit: one transaction)
//             vs the raw rows in one transaction;
//   per turn  one chunk a turn of setImmediate (two chunks share a commit: a chunk's append reaches
//             the store after the next turn is queued; with timer or I/O turns, as a model's
//             tokens arrive, each is a commit of its own) vs one transaction a raw row.

import { createEngine, defineWorkflow, expectStatus, interleave, now, openRaw, sqliteStore, tmpFile } from "../lib.mjs";

export const CHUNK = "token text, about 30 bytes ..";
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

export const streamer = defineWorkflow({
  name: "bench-stream",
  async run(ctx, { n, perTurn }) {
    const out = ctx.stream("out");
    await ctx.step("write", async () => {
      for (let i = 0; i < n; i++) {
        out.write(CHUNK);
        if (perTurn) await nextTurn();
      }
    });
    return null;
  },
});

export function rawTable(file) {
  const db = openRaw(file, "FULL");
  db.exec(`CREATE TABLE stream_records (
    run_id TEXT NOT NULL, stream TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, chunk_offset INTEGER NOT NULL,
    chunk TEXT, step TEXT, attempt INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (run_id, stream, seq)) WITHOUT ROWID`);
  const insert = db.prepare("INSERT INTO stream_records VALUES (?, ?, ?, 'chunk', ?, ?, 'write', 1, ?)");
  return { db, insert };
}

export async function streamCase(n) {
  const raw = rawTable(tmpFile("c12-raw"));
  const engine = createEngine({ store: sqliteStore({ path: tmpFile("c12-lib"), durability: "power" }), workflows: [streamer] });
  let runs = 0;
  const rawBurst = raw.db.transaction((runId) => {
    for (let i = 0; i < n; i++) raw.insert.run(runId, "out", i, i, JSON.stringify(CHUNK), Date.now());
  });
  const rawPerTurn = async (runId) => {
    for (let i = 0; i < n; i++) {
      raw.db.transaction(() => raw.insert.run(runId, "out", i, i, JSON.stringify(CHUNK), Date.now())).immediate();
      await nextTurn();
    }
  };
  expectStatus(await engine.start(streamer, { n: 100, perTurn: false }), "completed", "warm-up");
  const out = {};
  for (const perTurn of [false, true]) {
    const timing = await interleave(
      async () => {
        const t = now();
        if (perTurn) await rawPerTurn(`raw-${runs++}`);
        else rawBurst(`raw-${runs++}`);
        return now() - t;
      },
      async () => {
        const t = now();
        expectStatus(await engine.start(streamer, { n, perTurn }), "completed", "case 12");
        return now() - t;
      },
    );
    out[perTurn ? "perTurn" : "burst"] = {
      rawRowsPerSec: (n / timing.baselineMedianMs) * 1000,
      chunksPerSec: (n / timing.steplogMedianMs) * 1000,
      ratio: timing.steplogMedianMs / timing.baselineMedianMs,
      ...timing,
    };
  }
  await engine.close();
  raw.db.close();
  return { n, ...out };
}
