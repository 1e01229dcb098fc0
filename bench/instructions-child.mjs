// One workload for the instruction counts of cases 1 and 2 (bench/cases/instructions.mjs runs it
// under valgrind's callgrind, which counts instructions executed in user space: the same figure
// for the same binary and input whatever else the machine does).
//
//   node bench/instructions-child.mjs raw|steplog <steps> <file>            one run of <steps> sequential steps
//   node bench/instructions-child.mjs steplog-input <steps> <file>           the same with an input on every step
//   node bench/instructions-child.mjs raw-conc|steplog-conc <steps> <file>  100 runs at once, <steps>/100 steps each
//   node bench/instructions-child.mjs raw-stream|steplog-stream <chunks> <file>  case 12's burst: <chunks> stream chunks
//                                                                         written in one turn (raw: rows in one transaction)
import {
  RawStepLog,
  createEngine,
  createRawSchemaFile,
  expectStatus,
  openRaw,
  rawGroupCommit,
  rawRunId,
  seqInputWorkflow,
  seqWorkflow,
  sqliteStore,
} from "./lib.mjs";
import { CHUNK, rawTable, streamer } from "./cases/streams.mjs";

const RUNS = 100;
const [kind, count, file] = process.argv.slice(2);
const n = Number(count);
if (kind === "raw-stream") {
  const { db, insert } = rawTable(file);
  db.transaction(() => {
    for (let i = 0; i < n; i++) insert.run("raw", "out", i, i, JSON.stringify(CHUNK), Date.now());
  })();
  db.close();
} else if (kind === "steplog-stream") {
  const engine = createEngine({ store: sqliteStore({ path: file, durability: "power" }), workflows: [streamer], tracing: false });
  expectStatus(await engine.start(streamer, { n, perTurn: false }), "completed", "instructions");
  await engine.close();
} else if (kind === "raw" || kind === "raw-conc") {
  await createRawSchemaFile(file);
  const raw = openRaw(file, "NORMAL");
  if (kind === "raw") await new RawStepLog(raw).run(rawRunId(), n);
  else rawGroupCommit(raw, RUNS, n / RUNS);
  raw.close();
} else {
  const engine = createEngine({ store: sqliteStore({ path: file, durability: "process" }), workflows: [seqWorkflow, seqInputWorkflow], tracing: false });
  if (kind === "steplog") expectStatus(await engine.start(seqWorkflow, n), "completed", "instructions");
  else if (kind === "steplog-input") expectStatus(await engine.start(seqInputWorkflow, n), "completed", "instructions");
  else for (const r of await Promise.all(Array.from({ length: RUNS }, () => engine.start(seqWorkflow, n / RUNS)))) expectStatus(r, "completed", "instructions");
  await engine.close();
}
