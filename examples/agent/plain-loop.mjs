// The same support agent as a plain hand-written loop over an OpenAI-style `tool_calls` array,
// with no SDK: the kind of loop many apps have. Made durable with two helpers: each model call
// goes through modelTurn, the tool table through durableTools. The "OpenAI client" is a fake
// answering from the script in world.mjs, in the chat-completions shape: no network, no key.

import { z } from "zod";
import { defineWorkflow } from "../../dist/index.js";
import { durableTools, modelTurn } from "../../dist/agents.js";
import { costUsd, scriptedAnswer, tokens } from "./world.mjs";

/** A stand-in for `new OpenAI()`: chat.completions.create answers from the script. */
export function fakeOpenAI(world, ticket) {
  return {
    chat: {
      completions: {
        async create({ model, messages }) {
          const results = messages.filter((m) => m.role === "tool").map((m) => JSON.parse(m.content));
          world.recordModelCall({ agent: "plain", turn: results.length + 1 });
          const answer = scriptedAnswer(ticket, results);
          const message = { role: "assistant", content: answer.text || null };
          if (answer.calls.length > 0) {
            message.tool_calls = answer.calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.input) } }));
          }
          const prompt_tokens = tokens(JSON.stringify(messages));
          const completion_tokens = tokens(JSON.stringify(message));
          return {
            id: `chatcmpl-${results.length + 1}`,
            object: "chat.completion",
            model,
            choices: [{ index: 0, message, finish_reason: answer.calls.length > 0 ? "tool_calls" : "stop" }],
            usage: { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens },
          };
        },
      },
    },
  };
}

const TOOL_SCHEMAS = [
  { type: "function", function: { name: "lookupOrder", parameters: { type: "object", properties: { orderId: { type: "string" } } } } },
  { type: "function", function: { name: "saveDraft", parameters: { type: "object", properties: { to: {}, subject: {}, body: {} } } } },
  { type: "function", function: { name: "sendEmail", parameters: { type: "object", properties: { draftId: { type: "string" } } } } },
];

export function plainLoopAgent(world, { sendEmailQuery, sendEmailApproval }) {
  return defineWorkflow({
    name: "example-support-agent-plain-loop",
    version: "1.0.0",
    args: z.object({ ticket: z.string() }),
    async run(ctx, { ticket }) {
      const openai = fakeOpenAI(world, ticket);
      // The app's tool table: plain functions (input, options) => result.
      const tools = durableTools(
        ctx,
        {
          lookupOrder: (input, options) => world.lookupOrder(input, options),
          saveDraft: (input, options) => world.saveDraft(input, options),
          sendEmail: (input, options) => world.sendEmail(input, options),
        },
        {
          effects: { lookupOrder: "read", saveDraft: "idempotent", sendEmail: "irreversible" },
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

      const messages = [
        { role: "system", content: "You are a support agent. Plan, then use the tools." },
        { role: "user", content: ticket },
      ];
      for (let turn = 1; turn <= 8; turn++) {
        // One model call = one step. On a continue, a recorded turn is handed back: same text, same tool-call ids.
        const completion = await modelTurn(ctx, () => openai.chat.completions.create({ model: "gpt-fake", messages, tools: TOOL_SCHEMAS }), { costUsd });
        const message = completion.choices[0].message;
        messages.push(message);
        if (!message.tool_calls?.length) return { answer: message.content, turns: turn };
        for (const call of message.tool_calls) {
          let content;
          try {
            // Pass the call id: the step is then keyed tool:<name>:<call id>.
            const output = await tools[call.function.name](JSON.parse(call.function.arguments), { toolCallId: call.id });
            content = JSON.stringify(output);
          } catch (error) {
            content = JSON.stringify({ error: error.message });
          }
          messages.push({ role: "tool", tool_call_id: call.id, content });
        }
      }
      ctx.stop("the agent did not finish in 8 turns");
    },
  });
}
