// One workload for the instruction counts of cases 1 and 2 (bench/cases/instructions.mjs runs it
// under valgrind's callgrind, which counts instructions executed in user space: the same figure
// for the same binary and input whatever else the machine does).
//
//   node bench/instructions-child.mjs raw|steplog <steps> <file>            one run of <steps> sequential steps
//   node bench/instructions-child.mjs steplog-input <steps> <file>           the same with an input on every step
//   node bench/instructions-child.mjs raw-conc|steplog-conc <steps> <file>  100 runs at once, <steps>/100 steps each
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

const RUNS = 100;
const [kind, count, file] = process.argv.slice(2);
const n = Number(count);
if (kind === "raw" || kind === "raw-conc") {
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
