// A support agent written with the OpenAI Agents SDK (@openai/agents): an Agent with function
// tools, run by the SDK's own loop (run). Made durable by one call, durableAgent, which wraps
// the agent's tools (each call a step) and its Model (each turn a step). The model is the SDK's
// own test double, ScriptedModel from @openai/agents/testing, answering from the script in
// world.mjs: no network, no API key.
//
//   npm run build && node examples/agent/openai-agents.mjs
//
// runs the crash story (story.mjs) for this agent: killed inside sendEmail, then continued.

import crypto from "node:crypto";
import { pathToFileURL } from "node:url";
import { Agent, run, setTracingDisabled, tool, Usage } from "@openai/agents";
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from "@openai/agents/testing";
import { z } from "zod";
import { defineWorkflow } from "../../dist/index.js";
import { durableAgent } from "../../dist/agents.js";
import { costUsd, scriptedAnswer, tokens } from "./world.mjs";

// The SDK sends traces to OpenAI by default; this example stays on your machine.
setTracingDisabled(true);

/** The app's tools, as it had them before steplog. `details` carries the step's idempotencyKey once wrapped. */
/** `approval`: sendEmail declares needsApproval (the SDK's flag; durableAgent makes it a step approval). */
export function supportTools(world, { approval = false } = {}) {
  return [
    tool({
      name: "lookupOrder",
      description: "Look an order up by its id",
      parameters: z.object({ orderId: z.string() }),
      execute: (input, _runContext, details) => world.lookupOrder(input, details),
    }),
    tool({
      name: "saveDraft",
      description: "Save a reply draft (saving again with the same key overwrites it)",
      parameters: z.object({ to: z.string(), subject: z.string(), body: z.string() }),
      execute: (input, _runContext, details) => world.saveDraft(input, details),
    }),
    tool({
      name: "sendEmail",
      description: "Send a saved draft to the customer",
      parameters: z.object({ draftId: z.string() }),
      needsApproval: approval,
      execute: (input, _runContext, details) => world.sendEmail(input, details),
    }),
  ];
}

/** The model: the SDK's ScriptedModel, each answer derived from the conversation; each call counted in the world's ledger. */
export function scriptedModel(world, ticket) {
  const respond = ({ request }) => {
    const input = Array.isArray(request.input) ? request.input : [];
    // A handoff's result ({"assistant": "Support"}) is in the conversation too; the script counts the tools' results.
    const results = input
      .filter((item) => item.type === "function_call_result" && !item.name.startsWith("transfer_to_"))
      .map((item) => JSON.parse(item.output.text));
    world.recordModelCall({ agent: "openai-agents", turn: results.length + 1 });
    const answer = scriptedAnswer(ticket, results);
    const output = [];
    if (answer.text) output.push(assistantMessage(answer.text));
    for (const call of answer.calls) output.push(functionCall(call.name, call.input, { callId: call.id }));
    const inputTokens = tokens(JSON.stringify(input));
    const outputTokens = tokens(JSON.stringify(output));
    return { output, usage: new Usage({ requests: 1, inputTokens, outputTokens, totalTokens: inputTokens + outputTokens }) };
  };
  return new ScriptedModel(Array.from({ length: 8 }, () => modelResponder(respond)));
}

/** The agent as the app defines it. */
export function supportAgent(world, ticket, { sendEmailApproval = false } = {}) {
  return new Agent({
    name: "Support",
    instructions: "You are a support agent. Plan, then use the tools.",
    tools: supportTools(world, { approval: sendEmailApproval }),
    model: scriptedModel(world, ticket),
  });
}

/** A front-desk agent that hands every ticket to Support (the SDK's handoff: a call to its tool transfer_to_Support). */
export function triageAgent(world, ticket, options = {}) {
  const respond = () => {
    world.recordModelCall({ agent: "openai-agents", turn: "triage" });
    const output = [functionCall("transfer_to_Support", {}, { callId: `call_${crypto.randomBytes(4).toString("hex")}` })];
    return { output, usage: new Usage({ requests: 1, inputTokens: tokens(ticket), outputTokens: 8, totalTokens: tokens(ticket) + 8 }) };
  };
  return new Agent({
    name: "Triage",
    instructions: "Hand support tickets to Support.",
    handoffs: [supportAgent(world, ticket, options)],
    model: new ScriptedModel(Array.from({ length: 4 }, () => modelResponder(respond))),
  });
}

/** How each tool's calls behave as steps (the same for the agent alone and behind the triage agent). */
function durableOptions(world, { sendEmailQuery }) {
  return {
    effects: { lookupOrder: "read", saveDraft: "idempotent", sendEmail: "irreversible" },
    ...(sendEmailQuery
      ? {
          query: {
            sendEmail: ({ idempotencyKey }) => {
              const sent = world.findSent(idempotencyKey);
              return sent ? { done: true, value: sent } : { done: false };
            },
          },
        }
      : {}),
    model: { costUsd },
  };
}

/**
 * The workflow. Compared with the app before steplog, one line changed: the agent handed to
 * run() is durableAgent(ctx, agent, { effects }), and the call sits in a workflow's run(ctx).
 */
export function openAIAgentsAgent(world, options) {
  return defineWorkflow({
    name: "example-support-agent-openai-agents",
    version: "1.0.0",
    args: z.object({ ticket: z.string() }),
    async run(ctx, { ticket }) {
      const agent = durableAgent(ctx, supportAgent(world, ticket, options), durableOptions(world, options));
      const result = await run(agent, ticket, { maxTurns: 8 });
      return { answer: result.finalOutput, turns: result.rawResponses.length };
    },
  });
}

/** The same, started at the triage agent: the handoff to Support is a step too. */
export function openAIAgentsHandoffAgent(world, options) {
  return defineWorkflow({
    name: "example-support-agent-openai-agents-handoff",
    version: "1.0.0",
    args: z.object({ ticket: z.string() }),
    async run(ctx, { ticket }) {
      const agent = durableAgent(ctx, triageAgent(world, ticket, options), durableOptions(world, options));
      const result = await run(agent, ticket, { maxTurns: 8 });
      return { answer: result.finalOutput, turns: result.rawResponses.length };
    },
  });
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { tellStory } = await import("./story.mjs");
  await tellStory("openai-agents", "OpenAI Agents SDK agent (run() with a ScriptedModel)");
}
