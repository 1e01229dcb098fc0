// The Anthropic SDK integration, against the real `@anthropic-ai/sdk` client over a stubbed
// transport (`new Anthropic({ fetch })`, no network): the classic tool-use loop over
// messages.create, made durable by durableAnthropic (each create a model turn) and durableTools
// (each tool_use a step keyed by its id). A continue answers recorded turns and calls from the log.
import Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { durableAnthropic, durableTools, messagesFromSteps } from "../../src/entries/agents.js";
import { createEngine, defineWorkflow, type WorkflowContext } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";

interface Transport {
  fetch: (url: string | URL | Request, init?: RequestInit) => Promise<Response>;
  requests: Array<{ url: string; body: any; signal: AbortSignal | null | undefined }>;
}

/** The Messages API, scripted from the conversation: look the customer up, send the email, say so. Fresh tool_use ids each time. */
function messagesApi(options: { failFirst?: boolean } = {}): Transport {
  const requests: Transport["requests"] = [];
  let n = 0;
  let fail = options.failFirst ?? false;
  const fetch = async (url: string | URL | Request, init?: RequestInit) => {
    const body = JSON.parse(String(init!.body));
    requests.push({ url: String(url), body, signal: init?.signal });
    if (fail) {
      fail = false;
      return new Response(JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: "bad request" } }), {
        status: 400,
        headers: { "content-type": "application/json" },
      });
    }
    const results = body.messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content.filter((b: any) => b.type === "tool_result") : []));
    const id = () => `toolu_${++n}_${Math.random().toString(36).slice(2, 6)}`;
    const content =
      results.length === 0
        ? [
            { type: "text", text: "Looking the customer up." },
            { type: "tool_use", id: id(), name: "lookupCustomer", input: { id: "c-7" } },
          ]
        : results.length === 1
          ? [{ type: "tool_use", id: id(), name: "sendEmail", input: { to: "ada@example.com" } }]
          : [{ type: "text", text: "Sent the note to ada@example.com." }];
    const message = {
      id: `msg_${requests.length}`,
      type: "message",
      role: "assistant",
      model: body.model,
      content,
      stop_reason: content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn",
      stop_sequence: null,
      usage: { input_tokens: 100 + results.length, output_tokens: 10 + results.length, cache_read_input_tokens: 7 },
    };
    return new Response(JSON.stringify(message), { status: 200, headers: { "content-type": "application/json", "request-id": `req_${requests.length}` } });
  };
  return { fetch, requests };
}

interface World {
  calls: string[];
  options: Record<string, any>;
  outbox: Array<{ key: string; to: string }>;
}
const newWorld = (): World => ({ calls: [], options: {}, outbox: [] });

const SCHEMAS = [
  { name: "lookupCustomer", input_schema: { type: "object" as const, properties: { id: { type: "string" } } } },
  { name: "sendEmail", input_schema: { type: "object" as const, properties: { to: { type: "string" } } } },
];

/** The app's loop, as the Anthropic docs show it, with the client and the handlers wrapped. */
async function supportLoop(ctx: WorkflowContext, client: Anthropic, world: World) {
  const claude = durableAnthropic(ctx, client, { costUsd: ({ inputTokens = 0 }) => inputTokens / 1e6 });
  const tools = durableTools(
    ctx,
    {
      lookupCustomer: (input: { id: string }, options?: any) => (
        world.calls.push("lookupCustomer"),
        (world.options.lookupCustomer = options),
        { id: input.id, email: "ada@example.com" }
      ),
      sendEmail: (input: { to: string }, options?: any) => {
        world.calls.push("sendEmail");
        world.options.sendEmail = options;
        world.outbox.push({ key: options.idempotencyKey, to: input.to });
        return { messageId: `m-${world.outbox.length}` };
      },
    },
    { effects: { lookupCustomer: "read", sendEmail: "irreversible" } },
  );
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Tell customer c-7 their order shipped." }];
  for (;;) {
    const message = await claude.messages.create({ model: "claude-test", max_tokens: 512, tools: SCHEMAS, messages });
    messages.push({ role: "assistant", content: message.content });
    if (message.stop_reason !== "tool_use") return message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
    const results: Anthropic.ToolResultBlockParam[] = [];
    for (const block of message.content) {
      if (block.type !== "tool_use") continue;
      const output = await tools[block.name as "lookupCustomer" | "sendEmail"](block.input as never, { toolCallId: block.id });
      results.push({ type: "tool_result", tool_use_id: block.id, content: JSON.stringify(output) });
    }
    messages.push({ role: "user", content: results });
  }
}

function workflow(name: string, transport: Transport, world: World, failAfter?: () => boolean) {
  return defineWorkflow({
    name,
    async run(ctx) {
      const client = new Anthropic({ apiKey: "test-no-network", fetch: transport.fetch, maxRetries: 0 });
      const text = await supportLoop(ctx, client, world);
      if (failAfter?.()) throw new Error("the app failed after the agent answered");
      return text;
    },
  });
}

const shape = (keys: string[]) => keys.map((k) => (k.startsWith("tool:") ? k.replace(/[^:]+$/, "") : k));

describe("durableAnthropic + durableTools in the messages.create tool-use loop", () => {
  it("records each create as a model turn (the message, its tokens) and each tool_use as a step keyed by its id", async () => {
    const transport = messagesApi();
    const world = newWorld();
    const wf = workflow("an-run", transport, world);
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect(await engine.start(wf, undefined, { id: "a1" })).toMatchObject({ status: "completed", value: "Sent the note to ada@example.com." });
    const view = await engine.get("a1");
    expect(view.steps.map((s) => [shape([s.key])[0], s.effect, s.status])).toEqual([
      ["model", "read", "succeeded"],
      ["tool:lookupCustomer:", "read", "succeeded"],
      ["model#2", "read", "succeeded"],
      ["tool:sendEmail:", "irreversible", "succeeded"],
      ["model#3", "read", "succeeded"],
    ]);
    const first = view.steps[0]!.value as Anthropic.Message;
    expect(first).toMatchObject({ id: "msg_1", type: "message", role: "assistant", stop_reason: "tool_use" });
    expect(view.steps[1]!.key).toBe(`tool:lookupCustomer:${(first.content[1] as Anthropic.ToolUseBlock).id}`);
    expect(view.steps.filter((s) => s.name === "model").map((s) => s.usage)).toEqual([
      { inputTokens: 100, outputTokens: 10, cachedInputTokens: 7, costUsd: 0.0001 },
      { inputTokens: 101, outputTokens: 11, cachedInputTokens: 7, costUsd: 0.000101 },
      { inputTokens: 102, outputTokens: 12, cachedInputTokens: 7, costUsd: 0.000102 },
    ]);
    // The real client sent each request, with the step's abort signal.
    expect(transport.requests.map((r) => new URL(r.url).pathname)).toEqual(["/v1/messages", "/v1/messages", "/v1/messages"]);
    expect(transport.requests[0]!.signal).toBeInstanceOf(AbortSignal);
    const sendKey = view.steps[3]!.key;
    expect(world.options.sendEmail).toMatchObject({ toolCallId: sendKey.split(":")[2], idempotencyKey: `a1:${sendKey}`, step: sendKey });
    await engine.close();
  });

  it("a continue hands every recorded message and tool result back: no request is sent again, no tool runs again", async () => {
    const transport = messagesApi();
    const world = newWorld();
    let failOnce = true;
    const wf = workflow("an-replay", transport, world, () => (failOnce ? !(failOnce = false) : false));
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect((await engine.start(wf, undefined, { id: "a2" })).status).toBe("failed");
    expect(await engine.continue("a2")).toMatchObject({ status: "completed", value: "Sent the note to ada@example.com." });
    expect(transport.requests).toHaveLength(3);
    expect(world.calls).toEqual(["lookupCustomer", "sendEmail"]);
    expect(shape((await engine.get("a2")).attempts[1]!.reused)).toEqual(["model", "tool:lookupCustomer:", "model#2", "tool:sendEmail:", "model#3"]);
    await engine.close();
  });

  it("a request the API refuses is a failed turn: the attempt ends with MODEL_TURN_FAILED, and a continue asks again from that turn", async () => {
    const transport = messagesApi({ failFirst: true });
    const world = newWorld();
    const wf = workflow("an-fail", transport, world);
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    const first = await engine.start(wf, undefined, { id: "a3" });
    expect(first).toMatchObject({ status: "failed", error: { code: "MODEL_TURN_FAILED", step: "model" } });
    expect(first.error!.message).toContain("bad request");
    expect(await engine.continue("a3")).toMatchObject({ status: "completed" });
    expect(transport.requests).toHaveLength(4);
    expect(world.calls).toEqual(["lookupCustomer", "sendEmail"]);
    await engine.close();
  });

  it("messagesFromSteps reads the recorded messages and tool results", async () => {
    const transport = messagesApi();
    const wf = workflow("an-messages", transport, newWorld());
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    await engine.start(wf, undefined, { id: "a4" });
    const messages = messagesFromSteps(await engine.get("a4"));
    expect(messages.map((m) => m.role)).toEqual(["assistant", "tool", "assistant", "tool", "assistant"]);
    expect(messages[0]).toMatchObject({
      content: "Looking the customer up.",
      tool_calls: [{ function: { name: "lookupCustomer", arguments: '{"id":"c-7"}' } }],
    });
    await engine.close();
  });

  it("beta.messages.create is a model turn too; everything else is the client as it was", async () => {
    const transport = messagesApi();
    const wf = defineWorkflow({
      name: "an-beta",
      async run(ctx) {
        const client = new Anthropic({ apiKey: "test-no-network", fetch: transport.fetch, maxRetries: 0 });
        const claude = durableAnthropic(ctx, client);
        const message = await claude.beta.messages.create({ model: "claude-test", max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
        return { id: message.id, apiKey: claude.apiKey, baseURL: claude.baseURL };
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    const result = await engine.start(wf, undefined, { id: "a5" });
    expect(result.value).toEqual({ id: "msg_1", apiKey: "test-no-network", baseURL: "https://api.anthropic.com" });
    expect((await engine.get("a5")).steps.map((s) => s.key)).toEqual(["model"]);
    await engine.close();
  });

  it("refuses a streaming call (its turn would not be recorded) with INVALID_OPTION, before any request", async () => {
    const transport = messagesApi();
    const wf = defineWorkflow({
      name: "an-stream",
      async run(ctx) {
        const claude = durableAnthropic(ctx, new Anthropic({ apiKey: "test-no-network", fetch: transport.fetch }));
        const codes: unknown[] = [];
        for (const call of [
          () => claude.messages.create({ model: "m", max_tokens: 1, messages: [], stream: true }),
          () => claude.messages.stream({ model: "m", max_tokens: 1, messages: [] }),
        ]) {
          try {
            await call();
          } catch (error) {
            codes.push((error as { code?: unknown }).code);
          }
        }
        return codes;
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect((await engine.start(wf, undefined)).value).toEqual(["INVALID_OPTION", "INVALID_OPTION"]);
    expect(transport.requests).toHaveLength(0);
    await engine.close();
  });
});
