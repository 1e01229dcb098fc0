// The LangChain integration, against the real `@langchain/core`: tools made with tool() and a
// StructuredTool subclass, a chat model (a BaseChatModel scripted from the conversation; the
// package's fakes answer from a fixed list) bound with bindTools, and the tool-calling loop.
// durableLangChainTools makes each tool call a step keyed by the tool call's id; durableChatModel
// makes each invoke a model turn. A continue answers recorded turns and calls from the log.
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { StructuredTool, tool, type ToolRunnableConfig } from "@langchain/core/tools";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durableChatModel, durableLangChainTools, messagesFromSteps, type DurableToolCallFields } from "../../src/entries/agents.js";
import { createEngine, defineWorkflow, isSteplogError, type WorkflowContext } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";

/** Looks the customer up, sends the email, says so; fresh tool-call ids each time. */
class ScriptedChat extends BaseChatModel {
  calls = 0;
  private fresh = 0;

  _llmType() {
    return "scripted";
  }

  override bindTools(tools: unknown[]) {
    return this.withConfig({ tools } as never);
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.calls++;
    const done = messages.filter((m) => m.getType() === "tool").length;
    const id = () => `call_${++this.fresh}_${Math.random().toString(36).slice(2, 6)}`;
    const usage_metadata = { input_tokens: 100 + done, output_tokens: 10 + done, total_tokens: 110 + 2 * done };
    const message =
      done === 0
        ? new AIMessage({
            content: "Looking the customer up.",
            tool_calls: [{ id: id(), name: "lookupCustomer", args: { id: "c-7" }, type: "tool_call" }],
            usage_metadata,
          })
        : done === 1
          ? new AIMessage({ content: "", tool_calls: [{ id: id(), name: "sendEmail", args: { to: "ada@example.com" }, type: "tool_call" }], usage_metadata })
          : new AIMessage({ content: "Sent the note to ada@example.com.", usage_metadata });
    return { generations: [{ text: String(message.content), message }] };
  }
}

interface World {
  calls: string[];
  configs: Record<string, any>;
  outbox: Array<{ key: string; to: string }>;
}
const newWorld = (): World => ({ calls: [], configs: {}, outbox: [] });

/** A StructuredTool subclass, the other way LangChain tools are written. */
class LookupCustomer extends StructuredTool {
  name = "lookupCustomer";
  description = "Find a customer by id";
  schema = z.object({ id: z.string() });
  constructor(private world: World) {
    super();
  }
  async _call({ id }: { id: string }, _runManager?: unknown, config?: ToolRunnableConfig) {
    this.world.calls.push("lookupCustomer");
    this.world.configs.lookupCustomer = config;
    return JSON.stringify({ id, email: "ada@example.com" });
  }
}

function makeTools(world: World) {
  const sendEmail = tool(
    async ({ to }, config: ToolRunnableConfig & DurableToolCallFields) => {
      world.calls.push("sendEmail");
      world.configs.sendEmail = config;
      world.outbox.push({ key: config.idempotencyKey!, to });
      return { messageId: `m-${world.outbox.length}` };
    },
    { name: "sendEmail", description: "Send an email", schema: z.object({ to: z.string() }) },
  );
  return [new LookupCustomer(world), sendEmail] as const;
}

async function loop(ctx: WorkflowContext, chat: ScriptedChat, world: World) {
  const tools = durableLangChainTools(ctx, makeTools(world), { effects: { lookupCustomer: "read", sendEmail: "irreversible" } });
  const model = durableChatModel(ctx, chat, { costUsd: ({ inputTokens = 0 }) => inputTokens / 1e6 }).bindTools([...tools]);
  const byName = Object.fromEntries(tools.map((t) => [t.name, t])) as unknown as Record<string, { invoke: (call: unknown) => Promise<unknown> }>;
  const messages: BaseMessage[] = [new HumanMessage("Tell customer c-7 their order shipped.")];
  for (;;) {
    const ai = (await model.invoke(messages)) as AIMessage;
    messages.push(ai);
    if (!ai.tool_calls?.length) return { text: ai.text, messages };
    for (const call of ai.tool_calls) messages.push((await byName[call.name]!.invoke(call)) as ToolMessage);
  }
}

function workflow(name: string, chat: ScriptedChat, world: World, after?: (messages: BaseMessage[]) => void) {
  return defineWorkflow({
    name,
    async run(ctx) {
      const { text, messages } = await loop(ctx, chat, world);
      after?.(messages);
      return text;
    },
  });
}

const shape = (keys: string[]) => keys.map((k) => (k.startsWith("tool:") ? k.replace(/[^:]+$/, "") : k));

describe("durableChatModel + durableLangChainTools in the tool-calling loop", () => {
  it("records each invoke as a model turn and each tool call as a step keyed by its id; the tool's config gets the idempotency key", async () => {
    const chat = new ScriptedChat({});
    const world = newWorld();
    const wf = workflow("lc-run", chat, world);
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect(await engine.start(wf, undefined, { id: "l1" })).toMatchObject({ status: "completed", value: "Sent the note to ada@example.com." });
    const view = await engine.get("l1");
    expect(view.steps.map((s) => [shape([s.key])[0], s.effect, s.status])).toEqual([
      ["model", "read", "succeeded"],
      ["tool:lookupCustomer:", "read", "succeeded"],
      ["model#2", "read", "succeeded"],
      ["tool:sendEmail:", "irreversible", "succeeded"],
      ["model#3", "read", "succeeded"],
    ]);
    const first = view.steps[0]!.value as { type: string; tool_calls: Array<{ id: string }> };
    expect(first).toMatchObject({ type: "ai", content: "Looking the customer up.", tool_calls: [{ name: "lookupCustomer", args: { id: "c-7" } }] });
    expect(view.steps[1]!.key).toBe(`tool:lookupCustomer:${first.tool_calls[0]!.id}`);
    expect(view.steps.filter((s) => s.name === "model").map((s) => s.usage)).toEqual([
      { inputTokens: 100, outputTokens: 10, costUsd: 0.0001 },
      { inputTokens: 101, outputTokens: 11, costUsd: 0.000101 },
      { inputTokens: 102, outputTokens: 12, costUsd: 0.000102 },
    ]);
    expect(chat.calls).toBe(3);
    const sendKey = view.steps[3]!.key;
    expect(world.configs.sendEmail).toMatchObject({ idempotencyKey: `l1:${sendKey}`, step: sendKey, toolCall: { id: sendKey.split(":")[2] } });
    expect(world.configs.lookupCustomer).toMatchObject({ idempotencyKey: `l1:${view.steps[1]!.key}` });
    expect(world.outbox).toEqual([{ key: `l1:${sendKey}`, to: "ada@example.com" }]);
    await engine.close();
  });

  it("a continue hands every recorded turn and tool result back, as the same LangChain messages: the model is not asked again, no tool runs again", async () => {
    const chat = new ScriptedChat({});
    const world = newWorld();
    const seen: BaseMessage[][] = [];
    let failOnce = true;
    const wf = workflow("lc-replay", chat, world, (messages) => {
      seen.push(messages);
      if (failOnce) {
        failOnce = false;
        throw new Error("the app failed after the agent answered");
      }
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect((await engine.start(wf, undefined, { id: "l2" })).status).toBe("failed");
    expect(await engine.continue("l2")).toMatchObject({ status: "completed", value: "Sent the note to ada@example.com." });
    expect(chat.calls).toBe(3);
    expect(world.calls).toEqual(["lookupCustomer", "sendEmail"]);
    expect(shape((await engine.get("l2")).attempts[1]!.reused)).toEqual(["model", "tool:lookupCustomer:", "model#2", "tool:sendEmail:", "model#3"]);
    // Both attempts built the same conversation, of real LangChain messages.
    const [live, replayed] = seen;
    expect(replayed!.map((m) => m.getType())).toEqual(["human", "ai", "tool", "ai", "tool", "ai"]);
    expect(replayed!.filter((m) => m.getType() === "ai").every((m) => AIMessage.isInstance(m))).toBe(true);
    expect(replayed!.map((m) => m.toDict())).toEqual(live!.map((m) => m.toDict()));
    await engine.close();
  });

  it("keeps each tool's fields and class; a tool invoked with bare input is numbered per name; one that throws has its error recorded and thrown again", async () => {
    const world = newWorld();
    let flakyCalls = 0;
    let failOnce = true;
    const flaky = tool(
      async (): Promise<string> => {
        flakyCalls++;
        throw new Error("mailbox full");
      },
      { name: "flaky", description: "fails", schema: z.object({}) },
    );
    const wf = defineWorkflow({
      name: "lc-tools",
      async run(ctx) {
        const originals = makeTools(world);
        const [lookup, send, flakyTool] = durableLangChainTools(ctx, [...originals, flaky]);
        expect(lookup).toBeInstanceOf(LookupCustomer);
        expect(lookup).toBeInstanceOf(StructuredTool);
        expect([lookup.name, lookup.description, lookup.schema]).toEqual([originals[0].name, originals[0].description, originals[0].schema]);
        expect(send.schema).toBe(originals[1].schema);
        const a = await send.invoke({ to: "a@example.com" });
        const b = await send.invoke({ to: "b@example.com" });
        const error = await flakyTool.invoke({ id: "t-1", name: "flaky", args: {}, type: "tool_call" }).catch((e: Error) => e.message);
        if (failOnce) {
          failOnce = false;
          throw new Error("later failure");
        }
        return { a, b, error };
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect((await engine.start(wf, undefined, { id: "l3" })).status).toBe("failed");
    const view = await engine.get("l3");
    expect(view.steps.map((s) => [s.key, s.status])).toEqual([
      ["tool:sendEmail:1", "succeeded"],
      ["tool:sendEmail:2", "succeeded"],
      ["tool:flaky:t-1", "succeeded"],
    ]);
    expect(view.steps[2]!.value).toEqual({ "steplog.toolError": { name: "Error", message: "mailbox full" } });
    // The continue hands the results and the error back: nothing is sent or called again.
    const again = await engine.continue("l3");
    expect(again.value).toEqual({ a: { messageId: "m-1" }, b: { messageId: "m-2" }, error: "mailbox full" });
    expect(flakyCalls).toBe(1);
    expect(world.outbox).toHaveLength(2);
    await engine.close();
  });

  it("bindTools and withConfig on the durable model stay durable; stream, batch and pipe are refused (INVALID_OPTION)", async () => {
    const chat = new ScriptedChat({});
    const wf = defineWorkflow({
      name: "lc-model",
      async run(ctx) {
        const model = durableChatModel(ctx, chat);
        const bound = model.bindTools([]).withConfig({ tags: ["x"] });
        const ai = (await bound.invoke([new HumanMessage("hi")])) as AIMessage;
        const refused: unknown[] = [];
        for (const call of [() => model.stream([new HumanMessage("hi")]), () => model.batch([[new HumanMessage("hi")]]), () => model.pipe((x: unknown) => x)]) {
          try {
            await call();
          } catch (error) {
            refused.push(isSteplogError(error, "INVALID_OPTION"));
          }
        }
        return { isAI: AIMessage.isInstance(ai), calls: ai.tool_calls?.map((c) => c.name), refused };
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    const result = await engine.start(wf, undefined, { id: "l4" });
    expect(result.value).toEqual({ isAI: true, calls: ["lookupCustomer"], refused: [true, true, true] });
    expect((await engine.get("l4")).steps.map((s) => s.key)).toEqual(["model"]);
    expect(chat.calls).toBe(1);
    await engine.close();
  });

  it("refuses what is not a chat model, and options naming a tool that is not there", async () => {
    const wf = defineWorkflow({
      name: "lc-refuse",
      async run(ctx) {
        const codes: unknown[] = [];
        for (const call of [
          () => durableChatModel(ctx, { invoke: async () => "x" }),
          () => durableLangChainTools(ctx, makeTools(newWorld()), { effects: { sendMail: "irreversible" } }),
        ]) {
          try {
            call();
          } catch (error) {
            codes.push([(error as { code?: unknown }).code, (error as Error).message.split(":")[0]]);
          }
        }
        return codes;
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect((await engine.start(wf, undefined)).value).toEqual([
      ["INVALID_OPTION", "durableChatModel(ctx, model)"],
      ["INVALID_OPTION", "durableLangChainTools"],
    ]);
    await engine.close();
  });

  it("messagesFromSteps reads the recorded AI messages and tool results", async () => {
    const wf = workflow("lc-messages", new ScriptedChat({}), newWorld());
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    await engine.start(wf, undefined, { id: "l5" });
    const messages = messagesFromSteps(await engine.get("l5"), { format: "ai-sdk" });
    expect(messages.map((m) => m.role)).toEqual(["assistant", "tool", "assistant", "tool", "assistant"]);
    expect(messages[0]).toMatchObject({
      content: [
        { type: "text", text: "Looking the customer up." },
        { type: "tool-call", toolName: "lookupCustomer", input: { id: "c-7" } },
      ],
    });
    expect(messages[3]).toMatchObject({ content: [{ type: "tool-result", toolName: "sendEmail", output: { type: "json", value: { messageId: "m-1" } } }] });
    await engine.close();
  });
});
