// `npm run example:agent`: a support agent with durable tool calls meets kill -9, three times.
//
//   1. Vercel AI SDK agent; killed inside sendEmail after the email left, before its outcome was
//      recorded. sendEmail has a query (the mail provider looks emails up by key): the continue
//      asks it, finds the email, and does not send it again.
//   2. The same crash without a query: nobody can know, so the run is escalated. A person checks
//      the outbox and resolves the step; the continue goes on from there.
//   3. A plain hand-written loop over OpenAI-style tool_calls (no SDK); killed right after
//      sendEmail's outcome was recorded. The continue reuses every turn and every call.
//
// `npm run example:agent -- mcp`: the MCP variant instead: the same agent with its tools on an MCP
// server (mcp.mjs, mcp-server.mjs over stdio, made durable by durableMcp), killed inside sendEmail
// and continued, once with a query and once escalated (story.mjs).
//
// Every attempt runs in a child process (attempt.mjs), so the kill is real. The store is the
// default one (.steplog/steplog.db), or <STEPLOG_AGENT_DIR>/steplog.db when that is set (the test
// does this); the agent's world (outbox, drafts, call ledgers) is in a temp dir, or in
// <STEPLOG_AGENT_DIR>/world-<n>.

import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
if (!fs.existsSync(path.join(here, "../../dist/agents.js"))) {
  console.error("steplog agent example: dist/ is missing. Build first: npm run build (npm run example:agent does it for you).");
  process.exit(1);
}
const variant = process.argv[2];
if (variant === "mcp") {
  const { tellStory } = await import("./story.mjs");
  const { asToolResult } = await import("./mcp.mjs");
  await tellStory("mcp", "an agent whose tools are on an MCP server (stdio)", { resolution: asToolResult });
  process.exit(0);
} else if (variant !== undefined) {
  console.error(`steplog agent example: unknown variant ${JSON.stringify(variant)}; run it with no argument, or with "mcp".`);
  process.exit(2);
}
const { createEngine } = await import("../../dist/index.js");
const { sqliteStore } = await import("../../dist/sqlite.js");
const { messagesFromSteps } = await import("../../dist/agents.js");
const { bold, dim, green, red, yellow } = await import("./lines.mjs");
const { openWorld, storePath } = await import("./world.mjs");

const given = process.env.STEPLOG_AGENT_DIR;
const tmp = given ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), "steplog-agent-"));
const base = given ?? tmp;
const stamp = Date.now();
const problems = [];
const check = (ok, problem) => {
  if (!ok) problems.push(problem);
};

/** Run one attempt in a child process; relay its lines; resolve with how it ended. */
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

function engine() {
  return createEngine({ store: sqliteStore({ path: storePath() }) });
}

async function describeStore(runId) {
  const e = engine();
  try {
    const run = await e.get(runId);
    const latest = new Map(run.steps.map((s) => [s.key, s.status]));
    console.log(dim(`  the store now says: run ${run.status}; ${[...latest].map(([k, s]) => `${k} ${s}`).join(", ")}`));
    return { run, latest };
  } finally {
    await e.close();
  }
}

function tally(world) {
  const calls = world.modelCalls();
  const tools = world.toolCalls();
  const count = (tool) => tools.filter((t) => t.tool === tool).length;
  return {
    modelTurns: calls.map((c) => c.turn),
    modelPids: [...new Set(calls.map((c) => c.pid))].length,
    lookup: count("lookupOrder"),
    save: count("saveDraft"),
    send: count("sendEmail"),
    outbox: world.outbox().length,
  };
}

function summary(t) {
  return `model asked ${t.modelTurns.length}× (turns ${t.modelTurns.join(", ")}); tools ran: lookupOrder ${t.lookup}×, saveDraft ${t.save}×, sendEmail ${t.send}×; emails in the outbox: ${t.outbox}`;
}

console.log(bold("steplog example: a support agent (plan → lookupOrder → saveDraft → sendEmail) meets kill -9"));
console.log(dim(`store ${storePath()}; the agent's world (outbox, drafts, call ledgers) under ${base}`));

// ── 1. AI SDK agent, sendEmail with a query. ──────────────────────────────────────────
{
  console.log("");
  console.log(bold("1. Vercel AI SDK agent (generateText + mock model); sendEmail can be looked up by key"));
  const runId = `agent-${stamp}-query`;
  const worldDir = path.join(base, "world-1");
  const env = { STEPLOG_AGENT_WORLD: worldDir, STEPLOG_AGENT_QUERY: "1" };
  const first = await attempt("Attempt 1, child process", "ai-sdk", runId, "start", { ...env, STEPLOG_AGENT_CRASH: "in-effect" });
  check(first.signal === "SIGKILL", "scenario 1: attempt 1 should have been killed inside sendEmail");
  const { latest } = await describeStore(runId);
  const sendKey = [...latest.keys()].find((k) => k.startsWith("tool:sendEmail:"));
  check(sendKey && latest.get(sendKey) === "intended", "scenario 1: sendEmail should be intended (no outcome) after the crash");
  console.log("");
  const second = await attempt("Attempt 2, child process", "ai-sdk", runId, "continue", env);
  check(second.result?.status === "completed", `scenario 1: the continue should complete, got ${second.result?.status}`);
  const t = tally(openWorld(worldDir));
  console.log(dim(`  ${summary(t)}`));
  check(t.send === 1 && t.outbox === 1, "scenario 1: exactly one email should have been sent");
  check(t.modelTurns.join() === "1,2,3,4", `scenario 1: the model should be asked for turns 1-3 once and then turn 4, got ${t.modelTurns.join()}`);
  check(t.lookup === 1 && t.save === 1, "scenario 1: lookupOrder and saveDraft should have run once each");
  console.log(`  The continue asked the mail provider about ${sendKey} by its idempotency key, found the`);
  console.log(`  email, and recorded it: not sent twice. Turns 1-3 were handed back from the log; only turn 4 asked the model.`);
}

// ── 2. AI SDK agent, sendEmail without a query: escalated. ───────────────────────────
{
  console.log("");
  console.log(bold("2. The same crash, but the mail provider has no lookup: the step is escalated to a person"));
  const runId = `agent-${stamp}-escalate`;
  const worldDir = path.join(base, "world-2");
  const env = { STEPLOG_AGENT_WORLD: worldDir };
  const first = await attempt("Attempt 1, child process", "ai-sdk", runId, "start", { ...env, STEPLOG_AGENT_CRASH: "in-effect" });
  check(first.signal === "SIGKILL", "scenario 2: attempt 1 should have been killed inside sendEmail");
  console.log("");
  const second = await attempt("Attempt 2, child process", "ai-sdk", runId, "continue", env);
  check(second.result?.status === "escalated", `scenario 2: the continue should end escalated, got ${second.result?.status}`);
  const e = engine();
  try {
    const [escalation] = (await e.escalations()).filter((x) => x.runId === runId);
    check(escalation !== undefined, "scenario 2: engine.escalations() should list the cut-off sendEmail");
    if (escalation) {
      console.log(yellow(`  engine.escalations(): ${escalation.summary}`));
      // The person: checks the mail provider's dashboard for the key, sees the email went out.
      const sent = openWorld(worldDir).findSent(escalation.idempotencyKey);
      console.log(`  A person checks the outbox for ${escalation.idempotencyKey}: ${sent ? `message ${sent.messageId} went out` : "nothing"}.`);
      console.log(`  engine.resolve(${JSON.stringify(runId)}, ${JSON.stringify(escalation.step)}, { value: ${JSON.stringify(sent)} })`);
      await e.resolve(runId, escalation.step, sent ? { value: sent, by: "support-lead" } : { redo: true, by: "support-lead" });
    }
  } finally {
    await e.close();
  }
  console.log("");
  const third = await attempt("Attempt 3, child process", "ai-sdk", runId, "continue", env);
  check(third.result?.status === "completed", `scenario 2: the continue after resolve should complete, got ${third.result?.status}`);
  const t = tally(openWorld(worldDir));
  console.log(dim(`  ${summary(t)}`));
  check(t.send === 1 && t.outbox === 1, "scenario 2: exactly one email should have been sent");
  check(t.modelTurns.join() === "1,2,3,4", `scenario 2: the model should be asked for turns 1-3 once and then turn 4, got ${t.modelTurns.join()}`);
}

// ── 3. Plain loop, killed after sendEmail's outcome. ────────────────────────────────
{
  console.log("");
  console.log(bold("3. A plain hand-written loop over OpenAI-style tool_calls (no SDK); killed right after sendEmail's outcome"));
  const runId = `agent-${stamp}-plain`;
  const worldDir = path.join(base, "world-3");
  const env = { STEPLOG_AGENT_WORLD: worldDir };
  const first = await attempt("Attempt 1, child process", "plain", runId, "start", { ...env, STEPLOG_AGENT_CRASH: "after-outcome" });
  check(first.signal === "SIGKILL", "scenario 3: attempt 1 should have been killed after sendEmail's outcome");
  console.log("");
  const second = await attempt("Attempt 2, child process", "plain", runId, "continue", env);
  check(second.result?.status === "completed", `scenario 3: the continue should complete, got ${second.result?.status}`);
  const t = tally(openWorld(worldDir));
  console.log(dim(`  ${summary(t)}`));
  check(t.send === 1 && t.outbox === 1, "scenario 3: exactly one email should have been sent");
  check(t.modelTurns.join() === "1,2,3,4", `scenario 3: the model should be asked for turns 1-3 once and then turn 4, got ${t.modelTurns.join()}`);
  const e = engine();
  try {
    const run = await e.get(runId);
    const messages = messagesFromSteps(run);
    console.log(`  messagesFromSteps(engine.get(${JSON.stringify(runId)})): the conversation, derived from the step log:`);
    for (const m of messages) {
      const what =
        m.role === "tool"
          ? `${m.tool_call_id} → ${m.content}`
          : [m.content, ...(m.tool_calls ?? []).map((c) => `${c.function.name}(${c.function.arguments})`)].filter(Boolean).join(" ");
      console.log(dim(`    ${m.role.padEnd(9)} ${what.length > 110 ? `${what.slice(0, 107)}...` : what}`));
    }
    const cost = run.usage.costUsd ?? 0;
    console.log(dim(`  usage recorded by the model turns: ${run.usage.inputTokens} input + ${run.usage.outputTokens} output tokens, $${cost.toFixed(6)}`));
    check(messages.length === 7, `scenario 3: expected 7 messages from the step log, got ${messages.length}`);
  } finally {
    await e.close();
  }
}

if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
console.log("");
if (problems.length > 0) {
  for (const problem of problems) console.log(red(`example check failed: ${problem}`));
  process.exit(1);
}
console.log("In each case the step log, not the conversation, was the state: the continue replayed the");
console.log("recorded model turns (same text, same tool-call ids) and tool results, and settled the one");
console.log("call cut off inside its effect by its declared policy, instead of sending the email twice.");
console.log(green("All checks passed."));
