// examples/agent/minimal/ai-sdk.mjs: a support agent on the Vercel AI SDK, made durable.
import { generateText, stepCountIs, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";
import { createEngine, defineWorkflow } from "steplog";
import { durableModel, durableTools } from "steplog/agents";

const tools = {
  lookupOrder: tool({
    description: "Look an order up by its id",
    inputSchema: z.object({ orderId: z.string() }),
    execute: async ({ orderId }) => ({ orderId, email: "ada@example.com", eta: "tomorrow" }),
  }),
  sendEmail: tool({
    description: "Email the customer",
    inputSchema: z.object({ to: z.string(), body: z.string() }),
    // The same idempotencyKey if a crash makes steplog call this again: give it to your mail service.
    execute: async ({ to, body }, { idempotencyKey }) => {
      console.log(`email to ${to}: ${body} (key ${idempotencyKey})`);
      return { messageId: "m-1" };
    },
  }),
};

// A stand-in for your model (openai("gpt-4.1"), …), so this runs offline: it answers by how many tool results it has.
const answers = [
  { type: "tool-call", toolCallId: "call_1", toolName: "lookupOrder", input: '{"orderId":"o-17"}' },
  { type: "tool-call", toolCallId: "call_2", toolName: "sendEmail", input: '{"to":"ada@example.com","body":"Order o-17 arrives tomorrow."}' },
  { type: "text", text: "Emailed ada@example.com: order o-17 arrives tomorrow." },
];
const usage = { inputTokens: { total: 50 }, outputTokens: { total: 10 } };
const model = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const answer = answers[prompt.filter((message) => message.role === "tool").length];
    return { content: [answer], finishReason: { unified: answer.type === "text" ? "stop" : "tool-calls" }, usage, warnings: [] };
  },
});

const support = defineWorkflow({
  name: "support-agent",
  args: z.object({ ticket: z.string() }),
  async run(ctx, { ticket }) {
    const { text } = await generateText({
      model: durableModel(ctx, model), // each turn is a step
      tools: durableTools(ctx, tools, { effects: { lookupOrder: "read", sendEmail: "irreversible" } }), // each call is a step
      stopWhen: stepCountIs(5),
      prompt: ticket,
    });
    return text;
  },
});

const engine = createEngine({ workflows: [support] }); // SQLite at .steplog/steplog.db
// Run this file twice: the second start attaches to ticket-212 and hands back its answer; no email is sent again.
// After a crash, engine.continue("ticket-212") goes on from the log: recorded turns and calls are not made again.
const outcome = await engine.start(support, { ticket: "Where is my order o-17?" }, { id: "ticket-212", ifExists: "attach" });
console.log(outcome.status, outcome.value ?? outcome.error?.message);
await engine.close();
