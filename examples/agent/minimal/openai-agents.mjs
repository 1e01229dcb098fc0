// examples/agent/minimal/openai-agents.mjs: a support agent on the OpenAI Agents SDK, made durable.
import { Agent, run, setTracingDisabled, tool, Usage } from "@openai/agents";
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from "@openai/agents/testing";
import { z } from "zod";
import { createEngine, defineWorkflow } from "steplog";
import { durableAgent } from "steplog/agents";

setTracingDisabled(true); // the SDK sends traces to OpenAI unless told not to

const lookupOrder = tool({
  name: "lookupOrder",
  description: "Look an order up by its id",
  parameters: z.object({ orderId: z.string() }),
  execute: async ({ orderId }) => ({ orderId, email: "ada@example.com", eta: "tomorrow" }),
});
const sendEmail = tool({
  name: "sendEmail",
  description: "Email the customer",
  parameters: z.object({ to: z.string(), body: z.string() }),
  // The same idempotencyKey if a crash makes steplog call this again: give it to your mail service.
  execute: async ({ to, body }, _runContext, { idempotencyKey }) => {
    console.log(`email to ${to}: ${body} (key ${idempotencyKey})`);
    return { messageId: "m-1" };
  },
});

// A stand-in for your model (the SDK's ScriptedModel), so this runs offline: it answers by how many tool results it has.
// With a model named by a string, wrap the Runner's provider instead: durableModelProvider (docs/agents.md).
const answers = [
  [functionCall("lookupOrder", { orderId: "o-17" }, { callId: "call_1" })],
  [functionCall("sendEmail", { to: "ada@example.com", body: "Order o-17 arrives tomorrow." }, { callId: "call_2" })],
  [assistantMessage("Emailed ada@example.com: order o-17 arrives tomorrow.")],
];
const answer = ({ request }) => ({
  output: answers[[request.input].flat().filter((item) => item.type === "function_call_result").length],
  usage: new Usage({ requests: 1, inputTokens: 50, outputTokens: 10, totalTokens: 60 }),
});
const model = new ScriptedModel(answers.map(() => modelResponder(answer)));

const agent = new Agent({ name: "Support", instructions: "Look the order up, then email the customer.", tools: [lookupOrder, sendEmail], model });

const support = defineWorkflow({
  name: "support-agent",
  args: z.object({ ticket: z.string() }),
  async run(ctx, { ticket }) {
    // A clone of the agent: each turn of its model is a step, and each call of its tools.
    const durable = durableAgent(ctx, agent, { effects: { lookupOrder: "read", sendEmail: "irreversible" } });
    const result = await run(durable, ticket);
    return result.finalOutput;
  },
});

const engine = createEngine({ workflows: [support] }); // SQLite at .steplog/steplog.db
// Run this file twice: the second start attaches to ticket-212 and hands back its answer; no email is sent again.
// After a crash, engine.continue("ticket-212") goes on from the log: recorded turns and calls are not made again.
const outcome = await engine.start(support, { ticket: "Where is my order o-17?" }, { id: "ticket-212", ifExists: "attach" });
console.log(outcome.status, outcome.value ?? outcome.error?.message);
await engine.close();
