// examples/agent/minimal/langchain.mjs: a support agent on LangChain's tool-calling loop, made durable.
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import { createEngine, defineWorkflow } from "steplog";
import { durableChatModel, durableLangChainTools } from "steplog/agents";

const lookupOrder = tool(async ({ orderId }) => ({ orderId, email: "ada@example.com", eta: "tomorrow" }), {
  name: "lookupOrder",
  description: "Look an order up by its id",
  schema: z.object({ orderId: z.string() }),
});
// The same config.idempotencyKey if a crash makes steplog call this again: give it to your mail service.
const sendEmail = tool(
  async ({ to, body }, { idempotencyKey }) => {
    console.log(`email to ${to}: ${body} (key ${idempotencyKey})`);
    return { messageId: "m-1" };
  },
  { name: "sendEmail", description: "Email the customer", schema: z.object({ to: z.string(), body: z.string() }) },
);

// A stand-in for your chat model (new ChatOpenAI(), …), so this runs offline: it answers by how many tool results it has.
const answers = [
  { content: "", tool_calls: [{ id: "call_1", name: "lookupOrder", args: { orderId: "o-17" }, type: "tool_call" }] },
  { content: "", tool_calls: [{ id: "call_2", name: "sendEmail", args: { to: "ada@example.com", body: "Order o-17 arrives tomorrow." }, type: "tool_call" }] },
  { content: "Emailed ada@example.com: order o-17 arrives tomorrow." },
];
class OfflineChatModel extends BaseChatModel {
  _llmType() {
    return "offline";
  }
  bindTools(tools) {
    return this.withConfig({ tools });
  }
  async _generate(messages) {
    const message = new AIMessage(answers[messages.filter((m) => m.getType() === "tool").length]);
    return { generations: [{ text: message.text, message }] };
  }
}

const support = defineWorkflow({
  name: "support-agent",
  args: z.object({ ticket: z.string() }),
  async run(ctx, { ticket }) {
    const tools = durableLangChainTools(ctx, [lookupOrder, sendEmail], { effects: { lookupOrder: "read", sendEmail: "irreversible" } }); // each call is a step
    const model = durableChatModel(ctx, new OfflineChatModel({})).bindTools(tools); // each invoke is a model turn
    const toolsByName = Object.fromEntries(tools.map((t) => [t.name, t]));
    const messages = [new HumanMessage(ticket)];
    for (;;) {
      const ai = await model.invoke(messages);
      messages.push(ai);
      if (!ai.tool_calls?.length) return ai.text;
      for (const call of ai.tool_calls) messages.push(await toolsByName[call.name].invoke(call));
    }
  },
});

const engine = createEngine({ workflows: [support] }); // SQLite at .steplog/steplog.db
// Run this file twice: the second start attaches to ticket-212 and hands back its answer; no email is sent again.
// After a crash, engine.continue("ticket-212") goes on from the log: recorded turns and calls are not made again.
const outcome = await engine.start(support, { ticket: "Where is my order o-17?" }, { id: "ticket-212", ifExists: "attach" });
console.log(outcome.status, outcome.value ?? outcome.error?.message);
await engine.close();
