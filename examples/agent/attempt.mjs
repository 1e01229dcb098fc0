// One attempt of an example agent, in a process of its own (the example and its crash test run
// it as a child process, so that it can really be killed):
//
//   node examples/agent/attempt.mjs <agent> <run id> <start|continue> [ticket]
//
// <agent>: ai-sdk, plain, openai-agents, openai-agents-handoff (a triage agent hands off to it),
// anthropic, langchain or mcp (its tools on an MCP server, this process's child over stdio).
//
// Environment:
//   STEPLOG_AGENT_DIR    the store is <dir>/steplog.db; default .steplog/steplog.db
//   STEPLOG_AGENT_WORLD  the world's directory (outbox, drafts, call ledgers); required
//   STEPLOG_AGENT_QUERY  "1": sendEmail has a query (the mail provider can look an email up by key)
//   STEPLOG_AGENT_APPROVAL "1": sendEmail needs a person's approval (the stack's own flag: needsApproval
//                        on the AI SDK and the OpenAI Agents SDK, the helper's `approval` elsewhere)
//   STEPLOG_AGENT_CRASH  "in-effect": SIGKILL inside sendEmail, after the email left, before its
//                        outcome is recorded; "after-outcome": SIGKILL right after the outcome is durable
//   STEPLOG_FAULT        steplog's own fault points (src/base/faults.ts), e.g. after-fn@model#2: SIGKILL
//                        once the second model turn answered, before its outcome is recorded
//
// Prints one line per step, then one JSON line: {"result": …} or {"refused": …}.

import { createEngine } from "../../dist/index.js";
import { sqliteStore } from "../../dist/sqlite.js";
import { progressLine } from "./lines.mjs";
import { openWorld, say, storePath } from "./world.mjs";

/** What an agent left open (an MCP client and its server process), closed at the end. */
const cleanups = [];

/** Each agent's workflow factory, loaded on demand so that an attempt loads only its own SDK. */
const AGENTS = {
  "ai-sdk": async () => (await import("./ai-sdk-agent.mjs")).aiSdkAgent,
  plain: async () => (await import("./plain-loop.mjs")).plainLoopAgent,
  "openai-agents": async () => (await import("./openai-agents.mjs")).openAIAgentsAgent,
  "openai-agents-handoff": async () => (await import("./openai-agents.mjs")).openAIAgentsHandoffAgent,
  anthropic: async () => (await import("./anthropic.mjs")).anthropicAgent,
  langchain: async () => (await import("./langchain.mjs")).langChainAgent,
  mcp: async () => {
    const { mcpAgent, closeClients } = await import("./mcp.mjs");
    cleanups.push(closeClients);
    return mcpAgent;
  },
};

const [agent, runId, mode, ticket = "Customer c-7 asks: where is my order o-17?"] = process.argv.slice(2);
const crash = process.env.STEPLOG_AGENT_CRASH ?? "";
if (!process.env.STEPLOG_AGENT_WORLD) throw new Error("attempt.mjs: set STEPLOG_AGENT_WORLD");
if (!Object.hasOwn(AGENTS, agent)) throw new Error(`attempt.mjs: unknown agent ${JSON.stringify(agent)}; one of ${Object.keys(AGENTS).join(", ")}`);

function die(why) {
  say(`! ${why}; now process.kill(${process.pid}, "SIGKILL")`);
  process.kill(process.pid, "SIGKILL");
}

// Right after an effect landed (in this process, or reported by the MCP server before its answer).
const beforeOutcome = (tool, sent) => {
  if (crash === "in-effect" && tool === "sendEmail") die(`sendEmail: email ${sent.messageId} to ${sent.to} left, its outcome not yet recorded`);
};
const world = openWorld(process.env.STEPLOG_AGENT_WORLD, { beforeOutcome });
const options = { sendEmailQuery: process.env.STEPLOG_AGENT_QUERY === "1", sendEmailApproval: process.env.STEPLOG_AGENT_APPROVAL === "1", beforeOutcome };
const workflow = (await AGENTS[agent]())(world, options);

const engine = createEngine({
  workflows: [workflow],
  ...(process.env.STEPLOG_AGENT_DIR ? { store: sqliteStore({ path: storePath() }) } : {}),
  onProgress: (event) => {
    const line = progressLine(event);
    if (line) say(line);
    // steplog reports a step succeeded once its outcome is written; an irreversible step's is durable by then.
    if (crash === "after-outcome" && event.type === "step-succeeded" && event.step.startsWith("tool:sendEmail:")) {
      die(`${event.step}: its outcome is recorded`);
    }
  },
});

try {
  const result = mode === "start" ? await engine.start(workflow, { ticket }, { id: runId }) : await engine.continue(runId);
  say(JSON.stringify({ result }));
} catch (error) {
  say(JSON.stringify({ refused: { code: error.code, message: error.message } }));
}
await engine.close();
for (const cleanup of cleanups) await cleanup();
