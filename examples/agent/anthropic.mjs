// A support agent written with the Anthropic SDK (@anthropic-ai/sdk): the classic tool-use loop
// over messages.create, as the SDK's docs show it. Made durable by wrapping the client
// (durableAnthropic: each messages.create is a model turn) and the tool handlers (durableTools:
// each tool_use is a step keyed by its id). The client is the real SDK with a stubbed transport:
// `new Anthropic({ fetch })` whose fetch answers from the script in world.mjs, in the Messages
// API's shape: no network, no API key.
//
//   npm run build && node examples/agent/anthropic.mjs
//
// runs the crash story (story.mjs) for this agent: killed inside sendEmail, then continued.

import { pathToFileURL } from "node:url";
import Anthropic from "@anthropic-ai/sdk";
import { z } from "zod";
import { defineWorkflow } from "../../dist/index.js";
import { durableAnthropic, durableTools } from "../../dist/agents.js";
import { costUsd, scriptedAnswer, tokens } from "./world.mjs";

/** A stand-in for the network: the Messages API answers from the script. */
export function scriptedFetch(world, ticket) {
  let n = 0;
  return async (url, init) => {
    if (!String(url).endsWith("/v1/messages")) return new Response("not found", { status: 404 });
    const body = JSON.parse(init.body);
    const results = body.messages
      .filter((m) => m.role === "user" && Array.isArray(m.content))
      .flatMap((m) => m.content.filter((block) => block.type === "tool_result"))
      .map((block) => JSON.parse(block.content));
    world.recordModelCall({ agent: "anthropic", turn: results.length + 1 });
    const answer = scriptedAnswer(ticket, results);
    const content = [];
    if (answer.text) content.push({ type: "text", text: answer.text });
    for (const call of answer.calls) content.push({ type: "tool_use", id: call.id, name: call.name, input: call.input });
    const message = {
      id: `msg_${++n}`,
      type: "message",
      role: "assistant",
      model: body.model,
      content,
      stop_reason: answer.calls.length > 0 ? "tool_use" : "end_turn",
      stop_sequence: null,
      usage: { input_tokens: tokens(JSON.stringify(body.messages)), output_tokens: tokens(JSON.stringify(content)) },
    };
    return new Response(JSON.stringify(message), { status: 200, headers: { "content-type": "application/json", "request-id": `req_${n}` } });
  };
}

const TOOLS = [
  { name: "lookupOrder", description: "Look an order up by its id", input_schema: { type: "object", properties: { orderId: { type: "string" } } } },
  { name: "saveDraft", description: "Save a reply draft", input_schema: { type: "object", properties: { to: {}, subject: {}, body: {} } } },
  { name: "sendEmail", description: "Send a saved draft", input_schema: { type: "object", properties: { draftId: { type: "string" } } } },
];

/**
 * The workflow: the app's loop, unchanged but for three lines — the client wrapped in
 * durableAnthropic, the handlers in durableTools, and `{ toolCallId: block.id }` passed to each.
 */
export function anthropicAgent(world, { sendEmailQuery, sendEmailApproval }) {
  return defineWorkflow({
    name: "example-support-agent-anthropic",
    version: "1.0.0",
    args: z.object({ ticket: z.string() }),
    async run(ctx, { ticket }) {
      const anthropic = new Anthropic({ apiKey: "example-no-network", fetch: scriptedFetch(world, ticket), maxRetries: 0 });
      const claude = durableAnthropic(ctx, anthropic, { costUsd });
      const tools = durableTools(
        ctx,
        {
          lookupOrder: (input, options) => world.lookupOrder(input, options),
          saveDraft: (input, options) => world.saveDraft(input, options),
          sendEmail: (input, options) => world.sendEmail(input, options),
        },
        {
          effects: { lookupOrder: "read", saveDraft: "idempotent", sendEmail: "irreversible" },
          // With approval, each sendEmail call waits for a person's yes (engine.approve) before it runs.
          ...(sendEmailApproval ? { approval: ["sendEmail"] } : {}),
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
        },
      );

      const messages = [{ role: "user", content: ticket }];
      for (let turn = 1; turn <= 8; turn++) {
        const message = await claude.messages.create({
          model: "claude-example",
          max_tokens: 1024,
          system: "You are a support agent. Plan, then use the tools.",
          tools: TOOLS,
          messages,
        });
        messages.push({ role: "assistant", content: message.content });
        if (message.stop_reason !== "tool_use") {
          return { answer: message.content.map((block) => (block.type === "text" ? block.text : "")).join(""), turns: turn };
        }
        const results = [];
        for (const block of message.content) {
          if (block.type !== "tool_use") continue;
          try {
            const output = await tools[block.name](block.input, { toolCallId: block.id });
            results.push({ type: "tool_result", tool_use_id: block.id, content: JSON.stringify(output) });
          } catch (error) {
            results.push({ type: "tool_result", tool_use_id: block.id, content: JSON.stringify({ error: error.message }), is_error: true });
          }
        }
        messages.push({ role: "user", content: results });
      }
      ctx.stop("the agent did not finish in 8 turns");
    },
  });
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { tellStory } = await import("./story.mjs");
  await tellStory("anthropic", "Anthropic SDK tool-use loop (messages.create with a stubbed fetch)");
}
