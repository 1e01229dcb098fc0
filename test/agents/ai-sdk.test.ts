// The Vercel AI SDK integration, against the real `ai` package, on each major (6 and 7: see
// ai-sdks.ts), with generateText / streamText with tools and the SDK's own mock model:
// durableModel makes each turn of the SDK's own tool loop a step, durableTools each tool call;
// a continue answers recorded turns and calls from the log.
import type { ToolExecutionOptions } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  durableModel,
  durableTools,
  messagesFromSteps,
  ModelTurnFailedError,
  pendingToolCalls,
  usageOf,
  type DurableToolCallFields,
} from "../../src/entries/agents.js";
import { createEngine, defineWorkflow, type WorkflowContext } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { testWorkflow } from "../../src/entries/testing.js";
import { loadAiSdks, responseMessagesOf } from "./ai-sdks.js";
import { scriptedModel as scriptedModelOf, usage, type ScriptedTurn } from "./mock-model.js";

const SDKS = await loadAiSdks();

/** The keys of the scripted support agent's steps, in order: four model turns and three tool calls. */
const EVERY_STEP = ["model", "tool:lookupCustomer:call-1", "model#2", "tool:saveDraft:call-2", "model#3", "tool:sendEmail:call-3", "model#4"];

const SCRIPT: ScriptedTurn[] = [
  { text: "Plan: look the customer up, save a draft, send it.", calls: [{ id: "call-1", tool: "lookupCustomer", input: { id: "c-7" } }] },
  { calls: [{ id: "call-2", tool: "saveDraft", input: { to: "ada@example.com", body: "Your order shipped." } }] },
  { calls: [{ id: "call-3", tool: "sendEmail", input: { to: "ada@example.com", draftId: "d-1" } }] },
  { text: "Sent the shipping note to ada@example.com." },
];

interface World {
  calls: string[];
  options: Record<string, any>;
  outbox: Array<{ key: string; to: string }>;
}

describe.each(SDKS)("AI SDK $major ($name)", (sdk) => {
  const { generateText, stepCountIs, streamText, tool } = sdk.ai;
  const scriptedModel = (script: ScriptedTurn[]) => scriptedModelOf(sdk, script);
  /** What a tool error's text is in the SDK's messages: the message (6), String(error) (7). */
  const errorText = (error: Error) => (sdk.major >= 7 ? String(error) : error.message);

  function makeTools(world: World) {
    return {
      lookupCustomer: tool({
        description: "Find a customer by id",
        inputSchema: z.object({ id: z.string() }),
        execute: async ({ id }, options) => {
          world.calls.push("lookupCustomer");
          world.options.lookupCustomer = options;
          return { id, name: "Ada", email: "ada@example.com" };
        },
      }),
      saveDraft: tool({
        description: "Save (upsert) an email draft",
        inputSchema: z.object({ to: z.string(), body: z.string() }),
        execute: async (_input, options) => {
          world.calls.push("saveDraft");
          world.options.saveDraft = options;
          return { draftId: "d-1" };
        },
      }),
      sendEmail: tool({
        description: "Send a saved draft",
        inputSchema: z.object({ to: z.string(), draftId: z.string() }),
        // The options typed with steplog's fields: the idempotency key reads without a cast.
        execute: async ({ to }, options: ToolExecutionOptions & DurableToolCallFields) => {
          world.calls.push("sendEmail");
          world.options.sendEmail = options;
          const key = options.idempotencyKey!;
          world.outbox.push({ key, to });
          return { messageId: `m-${world.outbox.length}` };
        },
      }),
    };
  }

  const newWorld = (): World => ({ calls: [], options: {}, outbox: [] });

  function agentWorkflow(
    name: string,
    model: ReturnType<typeof scriptedModel>,
    world: World,
    hooks: { after?: (ctx: WorkflowContext, messages: unknown) => void; withQuery?: boolean; stream?: boolean } = {},
  ) {
    return defineWorkflow({
      name,
      async run(ctx) {
        const tools = durableTools(ctx, makeTools(world), {
          effects: { lookupCustomer: "read", saveDraft: "idempotent", sendEmail: "irreversible" },
          ...(hooks.withQuery
            ? {
                query: {
                  sendEmail: ({ idempotencyKey }) => {
                    const sent = world.outbox.findIndex((m) => m.key === idempotencyKey);
                    return sent === -1 ? { done: false } : { done: true, value: { messageId: `m-${sent + 1}` } };
                  },
                },
              }
            : {}),
        });
        const request = { model: durableModel(ctx, model), tools, stopWhen: stepCountIs(8), prompt: "Tell customer c-7 their order shipped." };
        let text: string;
        let messages: unknown;
        if (hooks.stream) {
          const result = streamText(request);
          text = await result.text;
          messages = await responseMessagesOf(sdk, result);
        } else {
          const result = await generateText(request);
          text = result.text;
          messages = await responseMessagesOf(sdk, result);
        }
        hooks.after?.(ctx, messages);
        return { text, messages };
      },
    });
  }

  /** The messages as stored (a JSON round trip drops the SDK's `providerOptions: undefined`). */
  const plain = (value: unknown) => JSON.parse(JSON.stringify(value));

  describe("durableModel + durableTools with generateText", () => {
    it("records every turn and every tool call as a step, in order, with each turn's usage", async () => {
      const world = newWorld();
      const model = scriptedModel(SCRIPT);
      const wf = agentWorkflow("ai-generate", model, world);
      const engine = createEngine({ store: memoryStore(), workflows: [wf] });
      const result = await engine.start(wf, undefined, { id: "r1" });
      expect(result.status).toBe("completed");
      expect((result.value as { text: string }).text).toBe("Sent the shipping note to ada@example.com.");
      const view = await engine.get("r1");
      expect(view.steps.map((s) => [s.key, s.effect, s.status])).toEqual([
        ["model", "read", "succeeded"],
        ["tool:lookupCustomer:call-1", "read", "succeeded"],
        ["model#2", "read", "succeeded"],
        ["tool:saveDraft:call-2", "idempotent", "succeeded"],
        ["model#3", "read", "succeeded"],
        ["tool:sendEmail:call-3", "irreversible", "succeeded"],
        ["model#4", "read", "succeeded"],
      ]);
      expect(view.steps.filter((s) => s.name === "model").map((s) => s.usage)).toEqual([
        { inputTokens: 100, outputTokens: 20 },
        { inputTokens: 110, outputTokens: 21 },
        { inputTokens: 120, outputTokens: 22 },
        { inputTokens: 130, outputTokens: 23 },
      ]);
      expect(view.usage).toEqual({ inputTokens: 460, outputTokens: 86 });
      expect(model.doGenerateCalls).toHaveLength(4);
      expect(world.calls).toEqual(["lookupCustomer", "saveDraft", "sendEmail"]);
      await engine.close();
    });

    it("passes each tool the SDK's options plus the step's idempotency key; keeps every other tool field", async () => {
      const world = newWorld();
      const wf = agentWorkflow("ai-options", scriptedModel(SCRIPT), world);
      const engine = createEngine({ store: memoryStore(), workflows: [wf] });
      await engine.start(wf, undefined, { id: "r2" });
      expect(world.options.sendEmail).toMatchObject({ toolCallId: "call-3", idempotencyKey: "r2:tool:sendEmail:call-3", step: "tool:sendEmail:call-3" });
      expect(world.options.sendEmail.previous).toBeUndefined();
      expect(world.options.sendEmail.abortSignal).toBeInstanceOf(AbortSignal);
      expect(Array.isArray(world.options.sendEmail.messages)).toBe(true);

      const original = makeTools(world);
      const clientSide = { description: "answered by the user", inputSchema: z.object({}) };
      let wrapped: Record<string, any> = {};
      const probe = defineWorkflow({
        name: "ai-probe",
        async run(ctx) {
          wrapped = durableTools(ctx, { ...original, askUser: clientSide });
        },
      });
      await engine.start(probe, undefined);
      expect(wrapped.sendEmail.description).toBe(original.sendEmail.description);
      expect(wrapped.sendEmail.inputSchema).toBe(original.sendEmail.inputSchema);
      expect(wrapped.sendEmail.execute).not.toBe(original.sendEmail.execute);
      expect(wrapped.askUser).toBe(clientSide);
      await engine.close();
    });

    it("a continue answers recorded turns and tool calls from the log: the model is not asked again, no tool runs again", async () => {
      const world = newWorld();
      const model = scriptedModel(SCRIPT);
      let failOnce = true;
      let firstMessages: unknown;
      const wf = agentWorkflow("ai-replay", model, world, {
        after: (_ctx, messages) => {
          if (failOnce) {
            firstMessages = messages;
            failOnce = false;
            throw new Error("the app failed after the agent answered");
          }
        },
      });
      const engine = createEngine({ store: memoryStore(), workflows: [wf] });
      const first = await engine.start(wf, undefined, { id: "r3" });
      expect(first.status).toBe("failed");
      const second = await engine.continue("r3");
      expect(second.status).toBe("completed");
      expect(model.doGenerateCalls).toHaveLength(4);
      expect(world.calls).toEqual(["lookupCustomer", "saveDraft", "sendEmail"]);
      // The SDK rebuilt the same conversation from the recorded turns and results.
      expect(firstMessages).toBeDefined();
      expect(plain((second.value as { messages: unknown }).messages)).toEqual(plain(firstMessages));
      const view = await engine.get("r3");
      expect(view.attempts[1]!.reused).toEqual(EVERY_STEP);
      await engine.close();
    });

    it("messagesFromSteps rebuilds what generateText put in response.messages (ai-sdk format), and an OpenAI-style history", async () => {
      const world = newWorld();
      const wf = agentWorkflow("ai-messages", scriptedModel(SCRIPT), world);
      const engine = createEngine({ store: memoryStore(), workflows: [wf] });
      const result = await engine.start(wf, undefined, { id: "r4" });
      const view = await engine.get("r4");
      expect(messagesFromSteps(view, { format: "ai-sdk" })).toEqual(plain((result.value as { messages: unknown }).messages));
      const openai = messagesFromSteps(view);
      expect(openai.map((m) => m.role)).toEqual(["assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"]);
      expect(openai[0]).toEqual({
        role: "assistant",
        content: "Plan: look the customer up, save a draft, send it.",
        tool_calls: [{ id: "call-1", type: "function", function: { name: "lookupCustomer", arguments: '{"id":"c-7"}' } }],
      });
      expect(openai[5]).toEqual({ role: "tool", tool_call_id: "call-3", content: '{"messageId":"m-1"}' });
      await engine.close();
    });

    it("a tool that throws: the model is told (tool error), the error is the call's recorded outcome, and a continue replays it", async () => {
      const model = scriptedModel([{ calls: [{ id: "c1", tool: "flaky", input: {} }] }, { text: "The mailbox is full; I will not retry." }]);
      let flakyCalls = 0;
      let failOnce = true;
      const wf = defineWorkflow({
        name: "ai-tool-error",
        async run(ctx) {
          const tools = durableTools(ctx, {
            flaky: tool({
              inputSchema: z.object({}),
              execute: async (): Promise<string> => {
                flakyCalls++;
                throw new Error("mailbox full");
              },
            }),
          });
          const result = await generateText({ model: durableModel(ctx, model), tools, stopWhen: stepCountIs(4), prompt: "go" });
          if (failOnce) {
            failOnce = false;
            throw new Error("later failure");
          }
          return await responseMessagesOf(sdk, result);
        },
      });
      const engine = createEngine({ store: memoryStore(), workflows: [wf] });
      expect((await engine.start(wf, undefined, { id: "r5" })).status).toBe("failed");
      const secondPrompt = model.doGenerateCalls[1]!.prompt as Array<{ role: string; content: any[] }>;
      expect(secondPrompt.at(-1)!.content[0]).toMatchObject({
        type: "tool-result",
        toolCallId: "c1",
        output: { type: "error-text", value: errorText(new Error("mailbox full")) },
      });
      const row = (await engine.get("r5")).steps.find((s) => s.key === "tool:flaky:c1")!;
      expect(row.status).toBe("succeeded");
      expect(row.value).toEqual({ "steplog.toolError": { name: "Error", message: "mailbox full" } });

      const again = await engine.continue("r5");
      expect(again.status).toBe("completed");
      expect(flakyCalls).toBe(1);
      expect(model.doGenerateCalls).toHaveLength(2);
      expect(messagesFromSteps(await engine.get("r5"), { format: "ai-sdk", aiSdk: sdk.major as 6 | 7 })).toEqual(plain(again.value));
      await engine.close();
    });

    it("tool calls of one turn run as the SDK calls them, but an irreversible one waits for the others (no PIVOT_ORDER)", async () => {
      const order: string[] = [];
      const model = scriptedModel([
        {
          calls: [
            { id: "a", tool: "slowRead", input: {} },
            { id: "b", tool: "send", input: {} },
            { id: "c", tool: "fastRead", input: {} },
          ],
        },
        { text: "ok" },
      ]);
      const wf = defineWorkflow({
        name: "ai-parallel",
        async run(ctx) {
          const tools = durableTools(
            ctx,
            {
              slowRead: tool({
                inputSchema: z.object({}),
                execute: async () => (order.push("slow start"), await new Promise((r) => setTimeout(r, 40)), order.push("slow end"), 1),
              }),
              send: tool({ inputSchema: z.object({}), execute: async () => (order.push("send"), 2) }),
              fastRead: tool({ inputSchema: z.object({}), execute: async () => (order.push("fast"), 3) }),
            },
            { effects: { slowRead: "read", send: "irreversible", fastRead: "read" } },
          );
          return (await generateText({ model: durableModel(ctx, model), tools, stopWhen: stepCountIs(3), prompt: "go" })).text;
        },
      });
      const engine = createEngine({ store: memoryStore(), workflows: [wf] });
      const result = await engine.start(wf, undefined, { id: "r6" });
      expect(result).toMatchObject({ status: "completed", value: "ok" });
      expect(order).toEqual(["slow start", "slow end", "send", "fast"]);
      await engine.close();
    });

    it("a turn that fails ends the agent in this attempt (recorded failed); a continue asks the model again from that turn only", async () => {
      const world = newWorld();
      let broken = true;
      const scripted = scriptedModel(SCRIPT);
      const calls: number[] = [];
      const model = {
        specificationVersion: "v3" as const,
        provider: "flaky",
        modelId: "flaky",
        supportedUrls: {},
        doGenerate: async (options: any) => {
          const n = options.prompt.filter((m: { role: string }) => m.role === "assistant").length;
          calls.push(n);
          if (n === 1 && broken) throw new Error("model overloaded");
          return scripted.doGenerate(options);
        },
        doStream: scripted.doStream,
      };
      const wf = agentWorkflow("ai-model-fails", model as never, world);
      const engine = createEngine({ store: memoryStore(), workflows: [wf] });
      const first = await engine.start(wf, undefined, { id: "r7" });
      expect(first.status).toBe("failed");
      expect(first.error).toMatchObject({ name: "ModelTurnFailedError" });
      expect(first.error!.message).toContain("model overloaded");
      const view = await engine.get("r7");
      expect(view.steps.map((s) => [s.key, s.status])).toEqual([
        ["model", "succeeded"],
        ["tool:lookupCustomer:call-1", "succeeded"],
        ["model#2", "failed"],
      ]);
      broken = false;
      const second = await engine.continue("r7");
      expect(second.status).toBe("completed");
      expect(calls).toEqual([0, 1, 1, 2, 3]);
      expect(world.calls).toEqual(["lookupCustomer", "saveDraft", "sendEmail"]);
      await engine.close();
    });

    it("a retryable model error is retried inside the turn's step (same key), not by a new turn", async () => {
      const scripted = scriptedModel([{ text: "hi" }]);
      let failures = 1;
      const model = {
        specificationVersion: "v3" as const,
        provider: "p",
        modelId: "m",
        supportedUrls: {},
        doGenerate: async (options: any) => {
          if (failures-- > 0) throw Object.assign(new Error("rate limited"), { isRetryable: true });
          return scripted.doGenerate(options);
        },
      };
      const wf = defineWorkflow({
        name: "ai-retry",
        async run(ctx) {
          return (await generateText({ model: durableModel(ctx, model as never, { retry: { maxAttempts: 2, backoffMs: 1 } }), prompt: "go" })).text;
        },
      });
      const engine = createEngine({ store: memoryStore(), workflows: [wf] });
      expect(await engine.start(wf, undefined, { id: "r8" })).toMatchObject({ status: "completed", value: "hi" });
      expect((await engine.get("r8")).steps.map((s) => [s.key, s.status, s.calls])).toEqual([["model", "succeeded", 2]]);
      await engine.close();
    });

    it("usageOf reads a generateText result's usage, its cached and reasoning tokens too", async () => {
      const MockLanguageModel = sdk.test.MockLanguageModelV4 ?? sdk.test.MockLanguageModelV3;
      const model = new MockLanguageModel({
        doGenerate: async () =>
          ({
            content: [{ type: "text", text: "hi" }],
            finishReason: { unified: "stop", raw: undefined },
            usage: { inputTokens: { total: 100, noCache: 60, cacheRead: 40, cacheWrite: undefined }, outputTokens: { total: 30, text: 20, reasoning: 10 } },
            warnings: [],
          }) as never,
      });
      const result = await generateText({ model, prompt: "go" });
      expect(usageOf(result)).toEqual({ inputTokens: 100, outputTokens: 30, reasoningTokens: 10, cachedInputTokens: 40 });
    });

    // A tool's needsApproval is a step approval (tool-approvals.test.ts). generateText's own
    // toolApproval (ai 7) is not seen by durableTools: the SDK's flow runs as without steplog.
    if (sdk.major >= 7)
      it("generateText's own toolApproval (ai 7): the SDK asks, the app answers; the call runs as a step only once approved; a continue replays both calls", async () => {
        const how: string = "toolApproval";
        const model = scriptedModel([{ calls: [{ id: "call-1", tool: "sendEmail", input: { to: "ada@example.com" } }] }, { text: "Sent." }]);
        const sent: string[] = [];
        /** Emails sent before the approval, per attempt. */
        const unapproved: number[] = [];
        let failOnce = true;
        const wf = defineWorkflow({
          name: `ai-approval-${how}`,
          async run(ctx) {
            const sendEmail = tool({
              inputSchema: z.object({ to: z.string() }),
              ...(how === "needsApproval" ? { needsApproval: true } : {}),
              execute: async ({ to }) => (sent.push(to), { messageId: "m-1" }),
            });
            const tools = durableTools(ctx, { sendEmail }, { effects: { sendEmail: "irreversible" } });
            const approval = how === "toolApproval" ? { toolApproval: { sendEmail: "user-approval" } } : {};
            const prompt = [{ role: "user" as const, content: "Tell Ada." }];
            const asked = await generateText({ model: durableModel(ctx, model), tools, stopWhen: stepCountIs(4), messages: prompt, ...approval } as never);
            const request = (asked as { content: Array<{ type: string; approvalId?: string }> }).content.find((p) => p.type === "tool-approval-request");
            if (!request) throw new Error("no approval request");
            unapproved.push(sent.length);
            // A person approves (in a real app: ctx.waitFor an approval event).
            const approved = [
              ...prompt,
              ...((await responseMessagesOf(sdk, asked as never)) as never[]),
              { role: "tool" as const, content: [{ type: "tool-approval-response" as const, approvalId: request.approvalId!, approved: true }] },
            ];
            const done = await generateText({ model: durableModel(ctx, model), tools, stopWhen: stepCountIs(4), messages: approved, ...approval } as never);
            if (failOnce) {
              failOnce = false;
              throw new Error("later failure");
            }
            return (done as { text: string }).text;
          },
        });
        const engine = createEngine({ store: memoryStore(), workflows: [wf] });
        expect((await engine.start(wf, undefined, { id: "ap" })).error?.message).toBe("later failure");
        expect(await engine.continue("ap")).toMatchObject({ status: "completed", value: "Sent." });
        expect(sent).toEqual(["ada@example.com"]);
        expect(unapproved).toEqual([0, 1]);
        expect((await engine.get("ap")).steps.filter((s) => s.attempt === 1).map((s) => [s.key, s.status])).toEqual([
          ["model", "succeeded"],
          ["tool:sendEmail:call-1", "succeeded"],
          ["model#2", "succeeded"],
        ]);
        expect(model.doGenerateCalls).toHaveLength(2);
        await engine.close();
      });

    it("records a turn's cost from its token counts with costUsd", async () => {
      const wf = defineWorkflow({
        name: "ai-cost",
        async run(ctx) {
          const model = durableModel(ctx, scriptedModel([{ text: "hi" }]), { costUsd: (u) => (u.inputTokens! * 2 + u.outputTokens! * 8) / 1e6 });
          return (await generateText({ model, prompt: "go" })).text;
        },
      });
      const engine = createEngine({ store: memoryStore(), workflows: [wf] });
      await engine.start(wf, undefined, { id: "r9" });
      expect((await engine.get("r9")).usage).toEqual({ inputTokens: 100, outputTokens: 20, costUsd: 0.00036 });
      await engine.close();
    });
  });

  describe("a cut-off irreversible tool call on the next attempt (seeded with testWorkflow)", () => {
    /** The records of a full first run, to seed attempt 1 with everything up to sendEmail. */
    async function recordedRun() {
      const world = newWorld();
      const wf = agentWorkflow("ai-seed", scriptedModel(SCRIPT), world);
      const engine = createEngine({ store: memoryStore(), workflows: [wf] });
      await engine.start(wf, undefined, { id: "seed" });
      const view = await engine.get("seed");
      await engine.close();
      const value = (key: string) => view.steps.find((s) => s.key === key)!.value;
      return {
        steps: Object.fromEntries(["model", "tool:lookupCustomer:call-1", "model#2", "tool:saveDraft:call-2", "model#3"].map((k) => [k, value(k)])),
        intended: ["tool:sendEmail:call-3"],
      };
    }

    it("without a query: escalated, never sent again, the model not asked again", async () => {
      const earlier = await recordedRun();
      const world = newWorld();
      const model = scriptedModel(SCRIPT);
      const wf = agentWorkflow("ai-seed", model, world);
      const run = await testWorkflow(wf, { args: undefined, earlier });
      expect(run.status).toBe("escalated");
      expect(run.error).toMatchObject({ code: "RUN_ESCALATED" });
      expect(world.calls).toEqual([]);
      expect(model.doGenerateCalls).toHaveLength(0);
      expect(run.reused).toEqual(["model", "tool:lookupCustomer:call-1", "model#2", "tool:saveDraft:call-2", "model#3"]);
      expect(run.steps.filter((s) => s.key === "tool:sendEmail:call-3").map((s) => s.status)).toEqual(["escalated"]);
      expect(pendingToolCalls(run.run)).toEqual([
        { key: "tool:sendEmail:call-3", toolName: "sendEmail", toolCallId: "call-3", status: "escalated", turn: "model#3" },
      ]);
      expect(() => messagesFromSteps(run.run)).toThrow(/no outcome for tool call "tool:sendEmail:call-3" \(escalated\)/);
    });

    it("with a query that finds the email: recorded from the query, never sent again; only the last turn asks the model", async () => {
      const earlier = await recordedRun();
      const world = newWorld();
      world.outbox.push({ key: "test-run:tool:sendEmail:call-3", to: "ada@example.com" });
      const model = scriptedModel(SCRIPT);
      const wf = agentWorkflow("ai-seed", model, world, { withQuery: true });
      const run = await testWorkflow(wf, { args: undefined, earlier });
      expect(run.status).toBe("completed");
      expect(run.resolved).toEqual(["tool:sendEmail:call-3"]);
      expect(run.calls("tool:sendEmail:call-3", "query")).toBe(1);
      expect(world.calls).toEqual([]);
      expect(model.doGenerateCalls).toHaveLength(1);
      expect((run.value as { text: string }).text).toBe("Sent the shipping note to ada@example.com.");
    });

    it("with a query that finds nothing: sent once, with the same idempotency key, told it is a re-drive", async () => {
      const earlier = await recordedRun();
      const world = newWorld();
      const wf = agentWorkflow("ai-seed", scriptedModel(SCRIPT), world, { withQuery: true });
      const run = await testWorkflow(wf, { args: undefined, earlier });
      expect(run.status).toBe("completed");
      expect(world.calls).toEqual(["sendEmail"]);
      expect(world.outbox).toEqual([{ key: "test-run:tool:sendEmail:call-3", to: "ada@example.com" }]);
      expect(world.options.sendEmail.previous).toMatchObject({ attempt: 1, idempotencyKey: "test-run:tool:sendEmail:call-3" });
    });
  });

  describe("durableModel with streamText", () => {
    it("streams the turns, records them, and a continue replays them without calling doStream or the tools", async () => {
      const world = newWorld();
      const model = scriptedModel(SCRIPT);
      let failOnce = true;
      const wf = agentWorkflow("ai-stream", model, world, {
        stream: true,
        after: () => {
          if (failOnce) {
            failOnce = false;
            throw new Error("fail after the stream");
          }
        },
      });
      const engine = createEngine({ store: memoryStore(), workflows: [wf] });
      expect((await engine.start(wf, undefined, { id: "s1" })).status).toBe("failed");
      const view = await engine.get("s1");
      expect(view.steps.map((s) => s.key)).toEqual(EVERY_STEP);
      expect(view.usage).toEqual({ inputTokens: 460, outputTokens: 86 });
      expect(model.doStreamCalls).toHaveLength(4);
      const second = await engine.continue("s1");
      expect(second.status).toBe("completed");
      expect((second.value as { text: string }).text).toBe("Sent the shipping note to ada@example.com.");
      expect(model.doStreamCalls).toHaveLength(4);
      expect(world.calls).toEqual(["lookupCustomer", "saveDraft", "sendEmail"]);
      expect(messagesFromSteps(await engine.get("s1"), { format: "ai-sdk" })).toEqual(plain((second.value as { messages: unknown }).messages));
      await engine.close();
    });

    it("hands the text on as it streams, before the turn is recorded; tool calls only once it is", async () => {
      const seen: string[] = [];
      const model = scriptedModel([{ text: "one two three", calls: [{ id: "x", tool: "probe", input: {} }] }, { text: "done" }]);
      let recordedWhenToolRan: string | undefined;
      const engine = createEngine({ store: memoryStore() });
      const wf = defineWorkflow({
        name: "ai-stream-live",
        async run(ctx) {
          const tools = durableTools(ctx, {
            probe: tool({
              inputSchema: z.object({}),
              execute: async () => {
                recordedWhenToolRan = (await engine.get(ctx.runId)).steps.find((s) => s.key === "model")?.status;
                return "ok";
              },
            }),
          });
          const result = streamText({ model: durableModel(ctx, model), tools, stopWhen: stepCountIs(3), prompt: "go" });
          for await (const delta of result.textStream) seen.push(delta);
          return seen;
        },
      });
      const done = await engine.start(wf, undefined, { id: "s2" });
      expect(done.status).toBe("completed");
      expect(seen.join("")).toBe("one two threedone");
      expect(recordedWhenToolRan).toBe("succeeded");
      await engine.close();
    });
  });

  describe("durableModel with a named stream", () => {
    it("writes each streamed turn's text to the run's stream as it streams; engine.readStream reads it back", async () => {
      const model = scriptedModel([{ text: "one two three", calls: [{ id: "x", tool: "probe", input: {} }] }, { text: "done" }]);
      const engine = createEngine({ store: memoryStore() });
      const wf = defineWorkflow({
        name: "ai-stream-named",
        async run(ctx) {
          const tools = durableTools(ctx, { probe: tool({ inputSchema: z.object({}), execute: async () => "ok" }) });
          const result = streamText({ model: durableModel(ctx, model, { stream: "answer" }), tools, stopWhen: stepCountIs(3), prompt: "go" });
          return await result.text;
        },
      });
      expect((await engine.start(wf, undefined, { id: "s3" })).status).toBe("completed");
      const chunks: unknown[] = [];
      for await (const item of engine.readStream("s3", "answer")) if (item.type === "chunk") chunks.push(item.chunk);
      expect(chunks).toEqual(["one ", "two ", "three", "done"]);
      await engine.close();
    });
  });

  describe("steplog's own errors are not handed to the model", () => {
    it("an attempt that ends inside a tool (ctx.stop) stops the SDK's loop: the model is not asked about it", async () => {
      const model = scriptedModel(SCRIPT);
      const world = newWorld();
      let stopOnce = true;
      const wf = defineWorkflow({
        name: "ai-stop",
        async run(ctx) {
          const base = makeTools(world);
          const tools = durableTools(ctx, {
            ...base,
            saveDraft: tool({
              description: base.saveDraft.description,
              inputSchema: z.object({ to: z.string(), body: z.string() }),
              execute: async () => {
                if (stopOnce) {
                  stopOnce = false;
                  ctx.stop("a person wants to read the draft first");
                }
                world.calls.push("saveDraft");
                return { draftId: "d-1" };
              },
            }),
          });
          return (await generateText({ model: durableModel(ctx, model), tools, stopWhen: stepCountIs(8), prompt: "go" })).text;
        },
      });
      const engine = createEngine({ store: memoryStore(), workflows: [wf] });
      const first = await engine.start(wf, undefined, { id: "e1" });
      expect(first.status).toBe("stopped");
      expect(model.doGenerateCalls).toHaveLength(2);
      const second = await engine.continue("e1");
      expect(second).toMatchObject({ status: "completed", value: "Sent the shipping note to ada@example.com." });
      expect(model.doGenerateCalls).toHaveLength(4);
      expect(world.calls).toEqual(["lookupCustomer", "saveDraft", "sendEmail"]);
      await engine.close();
    });

    it("a model error is thrown as ModelTurnFailedError, not retried by the SDK", async () => {
      let calls = 0;
      const model = {
        specificationVersion: "v3",
        provider: "p",
        modelId: "m",
        supportedUrls: {},
        doGenerate: async () => {
          calls++;
          throw Object.assign(new Error("bad request"), { isRetryable: false });
        },
      };
      const wf = defineWorkflow({
        name: "ai-model-error",
        async run(ctx) {
          try {
            await generateText({ model: durableModel(ctx, model as never), prompt: "go" });
          } catch (error) {
            return { isModelTurnFailed: error instanceof ModelTurnFailedError, message: (error as Error).message };
          }
        },
      });
      const engine = createEngine({ store: memoryStore(), workflows: [wf] });
      const result = await engine.start(wf, undefined, { id: "e2" });
      expect(result.value).toMatchObject({ isModelTurnFailed: true });
      expect(calls).toBe(1);
      await engine.close();
    });
  });
});

describe("AI SDK 7: what its model interface (LanguageModelV4) adds", () => {
  const sdk = SDKS.find((s) => s.major === 7)!;
  const { generateText, streamText, Output } = sdk.ai;
  const MockLanguageModelV4 = sdk.test.MockLanguageModelV4!;
  const finish = { finishReason: { unified: "stop", raw: undefined }, usage: usage(10, 5), warnings: [] };

  /** A workflow that fails once after the agent answered, so that the continue replays the turn. */
  function failingOnce<T>(name: string, body: (ctx: WorkflowContext) => Promise<T>) {
    let failOnce = true;
    return defineWorkflow({
      name,
      async run(ctx) {
        const value = await body(ctx);
        if (failOnce) {
          failOnce = false;
          throw new Error("the app failed after the agent answered");
        }
        return value;
      },
    });
  }

  it("keeps structuredOutputText: the structured output is parsed from it, on the first attempt and on a continue", async () => {
    const model = new MockLanguageModelV4({
      doGenerate: async () =>
        ({
          content: [
            { type: "text", text: "Draft: maybe Lyon. " },
            { type: "text", text: '{"city":"Paris"}' },
          ],
          structuredOutputText: '{"city":"Paris"}',
          ...finish,
        }) as never,
    });
    const wf = failingOnce("ai7-structured", async (ctx) => {
      const result = await generateText({
        model: durableModel(ctx, model),
        output: Output.object({ schema: z.object({ city: z.string() }) }),
        prompt: "where?",
      });
      return result.output;
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    const first = await engine.start(wf, undefined, { id: "v4-structured" });
    expect(first.error?.message).toBe("the app failed after the agent answered");
    expect(await engine.continue("v4-structured")).toMatchObject({ status: "completed", value: { city: "Paris" } });
    expect(model.doGenerateCalls).toHaveLength(1);
    await engine.close();
  });

  it("records a file the model gave by URL (generate and stream), and hands it back as a URL on a continue", async () => {
    const url = "https://files.example.com/cat.png";
    const file = () => ({ type: "file", mediaType: "image/png", data: { type: "url", url: new URL(url) } });
    const model = new MockLanguageModelV4({
      doGenerate: async () => ({ content: [file(), { type: "text", text: "Here is a cat." }], ...finish }) as never,
      doStream: async () =>
        ({
          stream: new ReadableStream({
            start(controller) {
              for (const part of [
                { type: "stream-start", warnings: [] },
                file(),
                { type: "text-start", id: "t" },
                { type: "text-delta", id: "t", delta: "Here is a cat." },
                { type: "text-end", id: "t" },
                { type: "finish", finishReason: finish.finishReason, usage: finish.usage },
              ])
                controller.enqueue(part);
              controller.close();
            },
          }),
        }) as never,
    });
    const downloaded: unknown[] = [];
    const download = async (requests: Array<{ url: URL }>) =>
      requests.map((request) => (downloaded.push(request.url), { data: new Uint8Array([1, 2, 3]), mediaType: "image/png" }));
    const wf = failingOnce("ai7-file-url", async (ctx) => {
      const generated = await generateText({ model: durableModel(ctx, model), prompt: "a cat", experimental_download: download });
      const streamed = streamText({ model: durableModel(ctx, model), prompt: "a cat", experimental_download: download } as never);
      const streamedFiles = await streamed.files;
      return {
        generated: { text: generated.text, bytes: [...generated.files[0]!.uint8Array] },
        streamed: { text: await streamed.text, bytes: [...streamedFiles[0]!.uint8Array] },
      };
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    const first = await engine.start(wf, undefined, { id: "v4-file" });
    expect(first.error?.message).toBe("the app failed after the agent answered");
    const again = await engine.continue("v4-file");
    const answer = { text: "Here is a cat.", bytes: [1, 2, 3] };
    expect(again).toMatchObject({ status: "completed", value: { generated: answer, streamed: answer } });
    expect(model.doGenerateCalls).toHaveLength(1);
    expect(model.doStreamCalls).toHaveLength(1);
    expect(downloaded.length).toBeGreaterThanOrEqual(4);
    for (const requested of downloaded) expect(requested instanceof URL && requested.href).toBe(url);
    await engine.close();
  });
});
