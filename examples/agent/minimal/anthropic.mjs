// examples/agent/minimal/anthropic.mjs: a support agent on the Anthropic SDK's tool-use loop, made durable.
import Anthropic from "@anthropic-ai/sdk";
import { z } from "zod";
import { createEngine, defineWorkflow } from "steplog";
import { durableAnthropic, durableTools } from "steplog/agents";

const handlers = {
  lookupOrder: async ({ orderId }) => ({ orderId, email: "ada@example.com", eta: "tomorrow" }),
  // The same idempotencyKey if a crash makes steplog call this again: give it to your mail service.
  sendEmail: async ({ to, body }, { idempotencyKey }) => {
    console.log(`email to ${to}: ${body} (key ${idempotencyKey})`);
    return { messageId: "m-1" };
  },
};
const SCHEMAS = [
  { name: "lookupOrder", description: "Look an order up by its id", input_schema: { type: "object", properties: { orderId: { type: "string" } } } },
  { name: "sendEmail", description: "Email the customer", input_schema: { type: "object", properties: { to: { type: "string" }, body: { type: "string" } } } },
];

// A stand-in for the API (your client is new Anthropic()), so this runs offline: it answers by how many tool results it has.
const answers = [
  [{ type: "tool_use", id: "toolu_1", name: "lookupOrder", input: { orderId: "o-17" } }],
  [{ type: "tool_use", id: "toolu_2", name: "sendEmail", input: { to: "ada@example.com", body: "Order o-17 arrives tomorrow." } }],
  [{ type: "text", text: "Emailed ada@example.com: order o-17 arrives tomorrow." }],
];
async function offlineFetch(_url, init) {
  const { model, messages } = JSON.parse(init.body);
  const n = messages.flatMap((m) => [m.content].flat()).filter((block) => block.type === "tool_result").length;
  const stop_reason = answers[n][0].type === "tool_use" ? "tool_use" : "end_turn";
  const message = {
    id: `msg_${n}`,
    type: "message",
    role: "assistant",
    model,
    content: answers[n],
    stop_reason,
    usage: { input_tokens: 50, output_tokens: 10 },
  };
  return new Response(JSON.stringify(message), { headers: { "content-type": "application/json" } });
}
const anthropic = new Anthropic({ apiKey: "offline", fetch: offlineFetch });

const support = defineWorkflow({
  name: "support-agent",
  args: z.object({ ticket: z.string() }),
  async run(ctx, { ticket }) {
    const claude = durableAnthropic(ctx, anthropic); // each create is a model turn
    const tools = durableTools(ctx, handlers, { effects: { lookupOrder: "read", sendEmail: "irreversible" } }); // each call is a step
    const messages = [{ role: "user", content: ticket }];
    for (;;) {
      const message = await claude.messages.create({ model: "claude-sonnet-4-5", max_tokens: 1024, tools: SCHEMAS, messages });
      messages.push({ role: "assistant", content: message.content });
      if (message.stop_reason !== "tool_use") return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
      const results = [];
      for (const block of message.content) {
        if (block.type !== "tool_use") continue;
        const output = await tools[block.name](block.input, { toolCallId: block.id });
        results.push({ type: "tool_result", tool_use_id: block.id, content: JSON.stringify(output) });
      }
      messages.push({ role: "user", content: results });
    }
  },
});

const engine = createEngine({ workflows: [support] }); // SQLite at .steplog/steplog.db
// Run this file twice: the second start attaches to ticket-212 and hands back its answer; no email is sent again.
// After a crash, engine.continue("ticket-212") goes on from the log: recorded turns and calls are not made again.
const outcome = await engine.start(support, { ticket: "Where is my order o-17?" }, { id: "ticket-212", ifExists: "attach" });
console.log(outcome.status, outcome.value ?? outcome.error?.message);
await engine.close();
