// A support agent written with LangChain (@langchain/core): tools made with tool(), a chat model
// with bindTools, and the tool-calling loop from LangChain's docs (invoke, then run each
// tool call with tool.invoke(toolCall)). Made durable by wrapping the tools
// (durableLangChainTools: each call a step keyed by the tool call's id) and the chat model
// (durableChatModel: each invoke a model turn). The chat model is a small BaseChatModel of the
// example's own, answering from the script in world.mjs (LangChain's fakes answer from a fixed
// list and cannot make tool calls that depend on the conversation): no network, no API key.
//
//   npm run build && node examples/agent/langchain.mjs
//
// runs the crash story (story.mjs) for this agent: killed inside sendEmail, then continued.

import { pathToFileURL } from "node:url";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, HumanMessage, SystemMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import { defineWorkflow } from "../../dist/index.js";
import { durableChatModel, durableLangChainTools } from "../../dist/agents.js";
import { costUsd, scriptedAnswer, tokens } from "./world.mjs";

/** The app's tools, as it had them before steplog. `config` carries the step's idempotencyKey once wrapped. */
export function supportTools(world) {
  return [
    tool((input, config) => world.lookupOrder(input, config), {
      name: "lookupOrder",
      description: "Look an order up by its id",
      schema: z.object({ orderId: z.string() }),
    }),
    tool((input, config) => world.saveDraft(input, config), {
      name: "saveDraft",
      description: "Save a reply draft (saving again with the same key overwrites it)",
      schema: z.object({ to: z.string(), subject: z.string(), body: z.string() }),
    }),
    tool((input, config) => world.sendEmail(input, config), {
      name: "sendEmail",
      description: "Send a saved draft to the customer",
      schema: z.object({ draftId: z.string() }),
    }),
  ];
}

/** A chat model answering from the script; each call counted in the world's ledger. */
export class ScriptedChatModel extends BaseChatModel {
  constructor(world, ticket) {
    super({});
    this.world = world;
    this.ticket = ticket;
  }

  _llmType() {
    return "scripted";
  }

  bindTools(tools) {
    return this.withConfig({ tools });
  }

  async _generate(messages) {
    const results = messages.filter((m) => m.getType() === "tool").map((m) => JSON.parse(m.content));
    this.world.recordModelCall({ agent: "langchain", turn: results.length + 1 });
    const answer = scriptedAnswer(this.ticket, results);
    const input_tokens = tokens(JSON.stringify(messages.map((m) => m.content)));
    const output_tokens = tokens(JSON.stringify(answer));
    const message = new AIMessage({
      content: answer.text,
      tool_calls: answer.calls.map((call) => ({ id: call.id, name: call.name, args: call.input, type: "tool_call" })),
      usage_metadata: { input_tokens, output_tokens, total_tokens: input_tokens + output_tokens },
    });
    return { generations: [{ text: answer.text, message }] };
  }
}

/**
 * The workflow: the app's loop, unchanged but for two lines — the tools wrapped in
 * durableLangChainTools, the chat model in durableChatModel.
 */
export function langChainAgent(world, { sendEmailQuery, sendEmailApproval }) {
  return defineWorkflow({
    name: "example-support-agent-langchain",
    version: "1.0.0",
    args: z.object({ ticket: z.string() }),
    async run(ctx, { ticket }) {
      const tools = durableLangChainTools(ctx, supportTools(world), {
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
      });
      const model = durableChatModel(ctx, new ScriptedChatModel(world, ticket), { costUsd }).bindTools(tools);
      const toolsByName = Object.fromEntries(tools.map((t) => [t.name, t]));

      const messages = [new SystemMessage("You are a support agent. Plan, then use the tools."), new HumanMessage(ticket)];
      for (let turn = 1; turn <= 8; turn++) {
        const ai = await model.invoke(messages);
        messages.push(ai);
        if (!ai.tool_calls?.length) return { answer: ai.text, turns: turn };
        for (const call of ai.tool_calls) messages.push(await toolsByName[call.name].invoke(call));
      }
      ctx.stop("the agent did not finish in 8 turns");
    },
  });
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { tellStory } = await import("./story.mjs");
  await tellStory("langchain", "LangChain tool-calling loop (tool(), bindTools, a scripted chat model)");
}
