// One workload for the instruction count of case 1 (bench/cases/instructions.mjs runs it under
// valgrind's callgrind, which counts instructions executed in user space: the same figure for
// the same binary and input whatever else the machine does).
//
//   node bench/instructions-child.mjs raw|steplog <steps> <file>
import { RawStepLog, createEngine, createSchemaFile, expectStatus, openRaw, rawRunId, seqWorkflow, sqliteStore } from "./lib.mjs";

const [kind, count, file] = process.argv.slice(2);
const n = Number(count);
if (kind === "raw") {
  await createSchemaFile(file);
  const raw = openRaw(file, "NORMAL");
  await new RawStepLog(raw).run(rawRunId(), n);
  raw.close();
} else {
  const engine = createEngine({ store: sqliteStore({ path: file, durability: "process" }), workflows: [seqWorkflow], tracing: false });
  expectStatus(await engine.start(seqWorkflow, n), "completed", "instructions");
  await engine.close();
}
