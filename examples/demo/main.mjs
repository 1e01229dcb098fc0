// `npm run demo`: a three-step job survives a real kill -9 inside step two.
//
// 1. A child process (attempt.mjs) starts run demo-<timestamp> on the default SQLite store
//    (.steplog/steplog.db) and SIGKILLs itself halfway through step two, "draft".
// 2. This process continues the run: "plan" is reused from the record, "draft" (found cut
//    off) is re-driven with the same idempotency key, "publish" runs.
// 3. The demo checks its own evidence, a side file in a temp dir with one line per call of
//    a step's function, and exits non-zero if anything ran a wrong number of times.
//
// Environment (both optional; the test sets them):
//   STEPLOG_DEMO_DIR    put the store at $STEPLOG_DEMO_DIR/steplog.db instead of the default
//   STEPLOG_DEMO_TALLY  write the call log there (default: a temp file, removed at the end)

import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
if (!fs.existsSync(path.join(here, "../../dist/index.js"))) {
  console.error("steplog demo: dist/ is missing. Build first: npm run build (npm run demo does it for you).");
  process.exit(1);
}
const { bold, dim, green, red, progressLine } = await import("./lines.mjs");
const { openEngine, storePath } = await import("./workflow.mjs");

const runId = `demo-${Date.now()}`;
const topic = "durable steps";
// The call log: STEPLOG_DEMO_TALLY if given (the test reads it), else a temp file removed at the end.
const tmp = process.env.STEPLOG_DEMO_TALLY ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), "steplog-demo-"));
const tallyFile = process.env.STEPLOG_DEMO_TALLY || path.join(tmp, "calls.jsonl");
const problems = [];
const check = (ok, problem) => {
  if (!ok) problems.push(problem);
};

console.log(bold("steplog demo: a three-step agent job (plan → draft → publish) meets kill -9"));
console.log(dim(`run ${runId}, store ${storePath()}`));

// ── Attempt 1: a child process starts the run and is SIGKILLed inside "draft". ──────────
console.log("");
const child = spawn(process.execPath, [path.join(here, "attempt.mjs"), runId, topic], {
  stdio: ["ignore", "pipe", "inherit"],
  env: { ...process.env, STEPLOG_DEMO_TALLY: tallyFile, STEPLOG_DEMO_CRASH_IN: "draft" },
});
console.log(`Attempt 1, child process ${child.pid}: engine.start(...)`);
readline.createInterface({ input: child.stdout }).on("line", (line) => console.log(`  ${line}`));
const watchdog = setTimeout(() => child.kill("SIGKILL"), 30_000);
const [code, signal] = await new Promise((resolve) => child.on("close", (c, s) => resolve([c, s])));
clearTimeout(watchdog);
if (signal === "SIGKILL") {
  console.log(red(`  ✗ attempt 1 died: process ${child.pid} killed by SIGKILL (no catch, finally or exit handler ran)`));
} else {
  check(false, `attempt 1 should have died by SIGKILL inside "draft", but it exited with code ${code}${signal ? `, signal ${signal}` : ""}`);
}

// ── What the store holds now. ─────────────────────────────────────────────────────────
const shown = [];
const engine = openEngine((event) => {
  shown.push(event);
  const line = progressLine(event);
  if (line && event.type !== "step-started") console.log(`  ${line}`);
});
let result;
try {
  const before = await engine.get(runId);
  const current = new Map(before.steps.map((s) => [s.key, s.status]));
  console.log(dim(`  the store now says: run ${before.status}; ${[...current].map(([k, s]) => `${k} ${s}`).join(", ")}`));
  check(before.status === "interrupted", `after the crash the run should read interrupted, not ${before.status}`);
  check(current.get("plan") === "succeeded", `after the crash "plan" should be succeeded, not ${current.get("plan")}`);
  check(current.get("draft") === "intended", `after the crash "draft" should be intended (no outcome), not ${current.get("draft")}`);

  // ── Attempt 2: this process continues the run. ──────────────────────────────────────
  console.log("");
  console.log(`Attempt 2, this process ${process.pid}: engine.continue(${JSON.stringify(runId)})`);
  process.env.STEPLOG_DEMO_TALLY = tallyFile;
  delete process.env.STEPLOG_DEMO_CRASH_IN;
  result = await engine.continue(runId);
} catch (error) {
  check(false, `the continue was refused: ${error instanceof Error ? error.message : String(error)}`);
} finally {
  await engine.close();
}

if (result) {
  const ok = result.status === "completed";
  console.log(`${ok ? green("✓") : red("✗")} run ${result.id}: ${result.status} in attempt ${result.attempt}`);
  if (result.value !== undefined) console.log(`  value: ${JSON.stringify(result.value)}`);
  if (result.error) console.log(`  error: ${result.error.message}`);
  check(ok, `the continue should complete the run, but it ended ${result.status}`);
  check(
    shown.some((e) => e.type === "step-reused" && e.step === "plan"),
    `"plan" should have been reused in attempt 2`,
  );
}

// ── The demo's own evidence: every call of a step's function, from both processes. ─────
const calls = fs.existsSync(tallyFile)
  ? fs
      .readFileSync(tallyFile, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line))
      .filter((c) => c.key.startsWith(`${runId}:`))
  : [];
if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
const of = (step) => calls.filter((c) => c.step === step);
const [plans, drafts, publishes] = [of("plan"), of("draft"), of("publish")];
check(plans.length === 1, `"plan" should have run once in all, but its function was called ${plans.length} times`);
check(drafts.length === 2 && drafts[0].attempt === 1 && drafts[1].attempt === 2, `"draft" should have been called in attempt 1 and again in attempt 2`);
check(drafts.length === 2 && drafts[0].key === drafts[1].key && drafts[1].redrive, `"draft" should have been re-driven with the same idempotency key`);
check(publishes.length === 1 && publishes[0].attempt === 2, `"publish" should have run once, in attempt 2`);

const tally = [plans, drafts, publishes].map((c, i) => `${["plan", "draft", "publish"][i]} ${c.length}×`).join(", ");
const pids = [...new Set(calls.map((c) => c.pid))].join(", ");

console.log("");
if (problems.length > 0) {
  console.log(`Function calls, both processes: ${tally} (pids ${pids}).`);
  for (const problem of problems) console.log(red(`demo check failed: ${problem}`));
  process.exit(1);
}
console.log(`Step two, "draft", was cut off inside its effect. Its intent was durable (recorded before`);
console.log(`its function ran), so the continue knew it had begun and re-drove it with the same`);
console.log(`idempotency key, ${drafts[0].key}, which lets a real service spot the repeat.`);
console.log(`"plan" had finished, so its recorded value was handed back and its function not called.`);
console.log(dim(`Function calls, both processes: ${tally} (pids ${pids}).`));
console.log(green("All checks passed."));
