// A support agent written with the Vercel AI SDK, made durable by wrapping what it already has:
// the model (durableModel) and the tools (durableTools). The SDK runs its own tool loop; each
// turn of that loop and each tool call is a steplog step. The model is the SDK's own mock of its
// newest model interface (MockLanguageModelV4 on ai 7, V3 on ai 6), scripted in world.mjs: no
// network, no API key.

import { generateText, stepCountIs, tool } from "ai";
import * as aiTest from "ai/test";
import { z } from "zod";
import { defineWorkflow } from "../../dist/index.js";
import { durableModel, durableTools } from "../../dist/agents.js";
import { costUsd, scriptedAnswer, tokens } from "./world.mjs";

/** The app's tools, as it had them before steplog: AI SDK tool() objects. */
/** `approval`: sendEmail declares needsApproval (the SDK's flag; durableTools makes it a step approval). */
export function supportTools(world, { approval = false } = {}) {
  return {
    lookupOrder: tool({
      description: "Look an order up by its id",
      inputSchema: z.object({ orderId: z.string() }),
      execute: (input, options) => world.lookupOrder(input, options),
    }),
    saveDraft: tool({
      description: "Save a reply draft (saving again with the same key overwrites it)",
      inputSchema: z.object({ to: z.string(), subject: z.string(), body: z.string() }),
      execute: (input, options) => world.saveDraft(input, options),
    }),
    sendEmail: tool({
      description: "Send a saved draft to the customer",
      inputSchema: z.object({ draftId: z.string() }),
      ...(approval ? { needsApproval: true } : {}),
      execute: (input, options) => world.sendEmail(input, options),
    }),
  };
}

/** The model: the AI SDK's mock, answering from the script; each call is counted in the world's ledger. */
export function scriptedModel(world, ticket) {
  const MockLanguageModel = aiTest.MockLanguageModelV4 ?? aiTest.MockLanguageModelV3;
  return new MockLanguageModel({
    provider: "example",
    modelId: "scripted-support-model",
    doGenerate: async ({ prompt }) => {
      const results = prompt
        .filter((m) => m.role === "tool")
        .flatMap((m) => m.content)
        .map((part) => part.output?.value);
      world.recordModelCall({ agent: "ai-sdk", turn: results.length + 1 });
      const answer = scriptedAnswer(ticket, results);
      const content = [];
      if (answer.text) content.push({ type: "text", text: answer.text });
      for (const call of answer.calls) content.push({ type: "tool-call", toolCallId: call.id, toolName: call.name, input: JSON.stringify(call.input) });
      const input = tokens(JSON.stringify(prompt));
      const output = tokens(JSON.stringify(content));
      return {
        content,
        finishReason: { unified: answer.calls.length > 0 ? "tool-calls" : "stop", raw: undefined },
        usage: {
          inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: output, text: output, reasoning: undefined },
        },
        warnings: [],
      };
    },
  });
}

/**
 * The workflow. Compared with the app before steplog, three lines changed: the model is wrapped
 * in durableModel, the tools in durableTools (with each tool's effect), and the call sits in
 * a workflow's run(ctx).
 */
export function aiSdkAgent(world, { sendEmailQuery, sendEmailApproval }) {
  return defineWorkflow({
    name: "example-support-agent-ai-sdk",
    version: "1.0.0",
    args: z.object({ ticket: z.string() }),
    async run(ctx, { ticket }) {
      const tools = durableTools(ctx, supportTools(world, { approval: sendEmailApproval }), {
        effects: { lookupOrder: "read", saveDraft: "idempotent", sendEmail: "irreversible" },
        // With a query, a crash inside sendEmail is answered by asking the mail provider
        // whether an email with this key went out; without one, a person is asked.
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
      });
      const result = await generateText({
        model: durableModel(ctx, scriptedModel(world, ticket), { costUsd }),
        tools,
        stopWhen: stepCountIs(8),
        system: "You are a support agent. Plan, then use the tools.",
        prompt: ticket,
      });
      return { answer: result.text, turns: result.steps.length };
    },
  });
}
