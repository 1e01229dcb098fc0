// The crash story each stack's example tells (openai-agents.mjs, anthropic.mjs, langchain.mjs):
// the support agent is SIGKILLed inside sendEmail, after the email left and before its outcome
// was recorded, twice over:
//
//   1. sendEmail has a query (the mail provider looks emails up by key): the continue asks it,
//      finds the email, records it, and does not send again.
//   2. no query: nobody can know, so the continue escalates the call; a person checks the outbox
//      and resolves the step; the next continue goes on from there.
//
// In both, the recorded model turns and tool calls are handed back from the log: the model is
// asked only for the last turn, and no tool runs twice. Every attempt runs in a child process
// (attempt.mjs), so the kill is real. The store is .steplog/steplog.db under the working
// directory, or <STEPLOG_AGENT_DIR>/steplog.db; the agent's world is in a temp dir, or in
// <STEPLOG_AGENT_DIR>/<agent>-world-<n>. Exits 1 if a check fails.

import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { createEngine } from "../../dist/index.js";
import { sqliteStore } from "../../dist/sqlite.js";
import { bold, dim, green, red, yellow } from "./lines.mjs";
import { openWorld, storePath } from "./world.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

/** One attempt in a child process; its lines relayed; resolves with how it ended. */
async function attempt(label, agent, runId, mode, env) {
  console.log(`${label}: ${mode === "start" ? "engine.start(...)" : `engine.continue(${JSON.stringify(runId)})`}`);
  const child = spawn(process.execPath, [path.join(here, "attempt.mjs"), agent, runId, mode], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, ...env },
  });
  let report;
  readline.createInterface({ input: child.stdout }).on("line", (line) => {
    if (line.startsWith("{")) report = JSON.parse(line);
    else console.log(`  ${line}`);
  });
  const watchdog = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const [code, signal] = await new Promise((resolve) => child.on("close", (c, s) => resolve([c, s])));
  clearTimeout(watchdog);
  if (signal === "SIGKILL") console.log(red(`  ✗ process ${child.pid} killed by SIGKILL (no catch, finally or exit handler ran)`));
  else if (report?.result) {
    const r = report.result;
    const paint = r.status === "completed" ? green : r.status === "escalated" ? yellow : red;
    console.log(paint(`  ${r.status === "completed" ? "✓" : "■"} run ${r.id}: ${r.status} in attempt ${r.attempt}`));
    if (r.value?.answer) console.log(`    answer: ${JSON.stringify(r.value.answer)}`);
  } else if (report?.refused) console.log(red(`  refused: ${report.refused.message}`));
  else console.log(red(`  exited with code ${code}`));
  return { signal, result: report?.result };
}

function tally(world) {
  const tools = world.toolCalls();
  const count = (tool) => tools.filter((t) => t.tool === tool).length;
  return {
    modelTurns: world.modelCalls().map((c) => c.turn),
    lookup: count("lookupOrder"),
    save: count("saveDraft"),
    send: count("sendEmail"),
    outbox: world.outbox().length,
  };
}

const summary = (t) =>
  `model asked ${t.modelTurns.length}× (turns ${t.modelTurns.join(", ")}); tools ran: lookupOrder ${t.lookup}×, saveDraft ${t.save}×, sendEmail ${t.send}×; emails in the outbox: ${t.outbox}`;

/**
 * Tell the story for one agent of attempt.mjs; exit 1 if a check fails. `resolution` turns the
 * email a person finds in the outbox into the value they resolve sendEmail's step with (the
 * shape the agent's tool returns; default: the email as it is).
 */
export async function tellStory(agent, title, { resolution = (sent) => sent } = {}) {
  const given = process.env.STEPLOG_AGENT_DIR;
  const tmp = given ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), `steplog-${agent}-`));
  const base = given ?? tmp;
  const stamp = Date.now();
  const problems = [];
  const check = (ok, problem) => {
    if (!ok) problems.push(problem);
  };
  const expectCounts = (scenario, t) => {
    check(t.send === 1 && t.outbox === 1, `${scenario}: exactly one email should have been sent, got ${t.outbox}`);
    check(t.lookup === 1 && t.save === 1, `${scenario}: lookupOrder and saveDraft should have run once each`);
    check(t.modelTurns.join() === "1,2,3,4", `${scenario}: the model should be asked for turns 1-3 once and then turn 4, got ${t.modelTurns.join()}`);
  };

  console.log(bold(`steplog example: ${title} (plan → lookupOrder → saveDraft → sendEmail) meets kill -9`));
  console.log(dim(`store ${storePath()}; the agent's world (outbox, drafts, call ledgers) under ${base}`));

  // ── 1. sendEmail has a query. ─────────────────────────────────────────────────────
  {
    console.log("");
    console.log(bold("1. Killed inside sendEmail; the mail provider can look an email up by its key"));
    const runId = `${agent}-${stamp}-query`;
    const worldDir = path.join(base, `${agent}-world-1`);
    const env = { STEPLOG_AGENT_WORLD: worldDir, STEPLOG_AGENT_QUERY: "1" };
    const first = await attempt("Attempt 1, child process", agent, runId, "start", { ...env, STEPLOG_AGENT_CRASH: "in-effect" });
    check(first.signal === "SIGKILL", "scenario 1: attempt 1 should have been killed inside sendEmail");
    console.log("");
    const second = await attempt("Attempt 2, child process", agent, runId, "continue", env);
    check(second.result?.status === "completed", `scenario 1: the continue should complete, got ${second.result?.status}`);
    const t = tally(openWorld(worldDir));
    console.log(dim(`  ${summary(t)}`));
    expectCounts("scenario 1", t);
  }

  // ── 2. No query: escalated, resolved by a person. ─────────────────────────────────
  {
    console.log("");
    console.log(bold("2. The same crash, but the mail provider has no lookup: the step is escalated to a person"));
    const runId = `${agent}-${stamp}-escalate`;
    const worldDir = path.join(base, `${agent}-world-2`);
    const env = { STEPLOG_AGENT_WORLD: worldDir };
    const first = await attempt("Attempt 1, child process", agent, runId, "start", { ...env, STEPLOG_AGENT_CRASH: "in-effect" });
    check(first.signal === "SIGKILL", "scenario 2: attempt 1 should have been killed inside sendEmail");
    console.log("");
    const second = await attempt("Attempt 2, child process", agent, runId, "continue", env);
    check(second.result?.status === "escalated", `scenario 2: the continue should end escalated, got ${second.result?.status}`);
    const engine = createEngine({ store: sqliteStore({ path: storePath() }) });
    try {
      const [escalation] = (await engine.escalations()).filter((x) => x.runId === runId);
      check(escalation !== undefined, "scenario 2: engine.escalations() should list the cut-off sendEmail");
      if (escalation) {
        console.log(yellow(`  engine.escalations(): ${escalation.summary}`));
        const sent = openWorld(worldDir).findSent(escalation.idempotencyKey);
        console.log(`  A person checks the outbox for ${escalation.idempotencyKey}: ${sent ? `message ${sent.messageId} went out` : "nothing"}.`);
        console.log(`  engine.resolve(${JSON.stringify(runId)}, ${JSON.stringify(escalation.step)}, { value: ${JSON.stringify(sent && resolution(sent))} })`);
        await engine.resolve(runId, escalation.step, sent ? { value: resolution(sent), by: "support-lead" } : { redo: true, by: "support-lead" });
      }
    } finally {
      await engine.close();
    }
    console.log("");
    const third = await attempt("Attempt 3, child process", agent, runId, "continue", env);
    check(third.result?.status === "completed", `scenario 2: the continue after resolve should complete, got ${third.result?.status}`);
    const t = tally(openWorld(worldDir));
    console.log(dim(`  ${summary(t)}`));
    expectCounts("scenario 2", t);
  }

  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  console.log("");
  if (problems.length > 0) {
    for (const problem of problems) console.log(red(`example check failed: ${problem}`));
    process.exit(1);
  }
  console.log("The continue replayed the recorded model turns (same tool-call ids) and tool results, and");
  console.log("settled the call cut off inside sendEmail by its policy, instead of sending the email twice.");
  console.log(green("All checks passed."));
}
