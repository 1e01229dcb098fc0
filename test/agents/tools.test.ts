// durableTools, modelTurn and the step names, without any framework: plain functions and
// objects with execute(input, { toolCallId }) as a hand-written loop uses them.
import { describe, expect, it } from "vitest";
import {
  durableTools,
  messagesFromSteps,
  modelStepName,
  modelTurn,
  ModelTurnFailedError,
  parseToolStepName,
  toolStepName,
  usageOf,
} from "../../src/entries/agents.js";
import { createEngine, defineWorkflow, isSteplogError, type WorkflowContext } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { testWorkflow } from "../../src/entries/testing.js";
import { untilAborted } from "../helpers/abort.js";

async function runOnce<T>(body: (ctx: WorkflowContext) => Promise<T>) {
  const wf = defineWorkflow({ name: `probe-${Math.random()}`, run: (ctx) => body(ctx) });
  const engine = createEngine({ store: memoryStore(), workflows: [wf] });
  const result = await engine.start(wf, undefined, { id: "run" });
  const view = await engine.get("run");
  await engine.close();
  return { result, view };
}

describe("step names", () => {
  it("tool:<name>:<call id>, with the characters a step name may not hold percent-encoded, reversibly", () => {
    expect(toolStepName("sendEmail", "call_abc123")).toBe("tool:sendEmail:call_abc123");
    expect(toolStepName("mcp:github#search", "id 1\n")).toBe("tool:mcp%3Agithub%23search:id%201%0A");
    expect(toolStepName("a%b", "\u202eevil")).toBe("tool:a%25b:%E2%80%AEevil");
    for (const [name, id] of [
      ["mcp:github#search", "id 1\n"],
      ["a%b", "\u202eevil"],
      ["plain", "x:y:z"],
      ["ünï", "ç#"],
    ] as const) {
      expect(parseToolStepName(toolStepName(name, id))).toEqual({ toolName: name, callId: id });
    }
    expect(parseToolStepName("model#2")).toBeUndefined();
    expect(modelStepName()).toBe("model");
    expect(modelStepName("planner")).toBe("model:planner");
  });

  it("refuses a name longer than a step name may be, with INVALID_OPTION naming what to shorten", () => {
    let caught: unknown;
    try {
      toolStepName("t", "x".repeat(250));
    } catch (error) {
      caught = error;
    }
    expect(isSteplogError(caught, "INVALID_OPTION")).toBe(true);
    expect((caught as Error).message).toMatch(/at most 200.*shorter/);
    expect(() => toolStepName("", "1")).toThrow(/non-empty/);
  });

  it("every name it makes is one ctx.step accepts", async () => {
    const names = [toolStepName("a b", " lead"), toolStepName("x#y", "z\u0000"), toolStepName("t", "x".repeat(190)), modelStepName("a#b")];
    const { result, view } = await runOnce(async (ctx) => {
      for (const name of names) await ctx.step(name, () => 1);
      return "ok";
    });
    expect(result.status).toBe("completed");
    expect(view.steps.map((s) => s.name)).toEqual(names);
  });
});

describe("durableTools", () => {
  it("plain functions without a call id are numbered per tool name in call order; with one, keyed by it", async () => {
    const seen: unknown[] = [];
    const { view } = await runOnce(async (ctx) => {
      const tools = durableTools(ctx, {
        add: (input: { a: number; b: number }) => input.a + input.b,
        echo: (input: string, options?: unknown) => (seen.push(options), input),
      });
      return [
        await tools.add({ a: 1, b: 2 }),
        await tools.add({ a: 3, b: 4 }),
        await tools.echo("hi"),
        await tools.echo("there", { toolCallId: "call_9" }),
        await tools.add({ a: 0, b: 0 }),
      ];
    });
    expect(view.value).toEqual([3, 7, "hi", "there", 0]);
    expect(view.steps.map((s) => [s.key, s.effect])).toEqual([
      ["tool:add:1", "idempotent"],
      ["tool:add:2", "idempotent"],
      ["tool:echo:1", "idempotent"],
      ["tool:echo:call_9", "idempotent"],
      ["tool:add:3", "idempotent"],
    ]);
    expect(seen[0]).toMatchObject({ toolCallId: "1", idempotencyKey: "run:tool:echo:1", step: "tool:echo:1" });
    expect(seen[1]).toMatchObject({ toolCallId: "call_9", idempotencyKey: "run:tool:echo:call_9" });
  });

  it("keeps the tool's `this` and every field; a call id used twice is numbered by steplog (#2)", async () => {
    const api = {
      prefix: "hello ",
      description: "greets",
      execute(this: { prefix: string }, input: string, _options?: unknown) {
        return this.prefix + input;
      },
    };
    const { view } = await runOnce(async (ctx) => {
      const tools = durableTools(ctx, { greet: api });
      expect(tools.greet.description).toBe("greets");
      expect(tools.greet.prefix).toBe("hello ");
      return [await tools.greet.execute("ada", { toolCallId: "same" }), await tools.greet.execute("bob", { toolCallId: "same" })];
    });
    expect(view.value).toEqual(["hello ada", "hello bob"]);
    expect(view.steps.map((s) => s.key)).toEqual(["tool:greet:same", "tool:greet:same#2"]);
  });

  it("refuses options that name no tool", async () => {
    const { result } = await runOnce(async (ctx) => {
      durableTools(ctx, { a: () => 1 }, { effects: { b: "irreversible" } as never });
    });
    expect(result.error).toMatchObject({ code: "INVALID_OPTION" });
    expect(result.error!.message).toContain('options.effects names "b"');
  });

  it("a call whose step name would be too long fails the call with INVALID_OPTION, and the agent stops there", async () => {
    const { result, view } = await runOnce(async (ctx) => {
      const tools = durableTools(ctx, { t: () => 1 });
      await tools.t({}, { toolCallId: "x".repeat(300) }).catch(() => undefined);
      await tools.t({});
    });
    expect(result.error).toMatchObject({ code: "INVALID_OPTION" });
    expect(view.steps).toEqual([]);
  });

  it("re-drives a cut-off idempotent call with the same key and tells the tool (previous)", async () => {
    const got: any[] = [];
    const wf = defineWorkflow({
      name: "redrive-tool",
      async run(ctx) {
        const tools = durableTools(ctx, { save: (input: string, options?: any) => (got.push(options), `saved ${input}`) });
        return tools.save("draft", { toolCallId: "c1" });
      },
    });
    const run = await testWorkflow(wf, { args: undefined, earlier: { intended: ["tool:save:c1"] } });
    expect(run.status).toBe("completed");
    expect(got[0]).toMatchObject({
      toolCallId: "c1",
      idempotencyKey: "test-run:tool:save:c1",
      previous: { attempt: 1, idempotencyKey: "test-run:tool:save:c1" },
    });
  });

  it("passes the tool's input and call id to its query and compensation", async () => {
    const queried: any[] = [];
    const wf = defineWorkflow({
      name: "query-tool",
      async run(ctx) {
        const tools = durableTools(
          ctx,
          { charge: (input: { cents: number }) => ({ charged: input.cents }) },
          {
            effects: { charge: "compensatable" },
            query: { charge: (info) => (queried.push(info), { done: true, value: { charged: 5, found: true } }) },
            compensate: { charge: () => undefined },
          },
        );
        return tools.charge({ cents: 5 }, { toolCallId: "k" });
      },
    });
    const run = await testWorkflow(wf, { args: undefined, earlier: { intended: ["tool:charge:k"] } });
    expect(run).toMatchObject({ status: "completed", value: { charged: 5, found: true } });
    expect(queried).toEqual([
      { runId: "test-run", step: "tool:charge:k", idempotencyKey: "test-run:tool:charge:k", toolName: "charge", toolCallId: "k", input: { cents: 5 } },
    ]);
  });

  it("retries a failing tool inside its step when asked, then records the last error as its outcome", async () => {
    let calls = 0;
    const { view, result } = await runOnce(async (ctx) => {
      const tools = durableTools(
        ctx,
        {
          fetchIt: () => {
            calls++;
            throw new TypeError(`down ${calls}`);
          },
        },
        { retry: { fetchIt: { maxAttempts: 3, backoffMs: 1 } } },
      );
      try {
        await tools.fetchIt({});
      } catch (error) {
        return `${(error as Error).name}: ${(error as Error).message}`;
      }
    });
    expect(result.value).toBe("TypeError: down 3");
    expect(view.steps.map((s) => [s.key, s.status, s.calls])).toEqual([["tool:fetchIt:1", "succeeded", 3]]);
  });

  it("a tool that streams preliminary results (async iterable) records its last one", async () => {
    const { result } = await runOnce(async (ctx) => {
      const tools = durableTools(ctx, {
        progress: {
          async *execute(_input: unknown, _options?: unknown) {
            yield { done: 1 };
            yield { done: 2 };
          },
        },
      });
      return tools.progress.execute({}, { toolCallId: "p" });
    });
    expect(result.value).toEqual({ done: 2 });
  });
});

describe("modelTurn", () => {
  it("records an OpenAI-style answer as the step `model`, with its usage and cost; a label names it model:<label>", async () => {
    const answer = {
      choices: [{ message: { role: "assistant", content: "hi", tool_calls: undefined } }],
      usage: { prompt_tokens: 12, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 4 } },
    };
    const { view } = await runOnce(async (ctx) => {
      await modelTurn(ctx, () => answer, { costUsd: (u) => u.inputTokens! / 1000 });
      await modelTurn(ctx, "planner", () => ({ content: [{ type: "text", text: "p" }], usage: { input_tokens: 5, output_tokens: 1 } }));
    });
    expect(view.steps.map((s) => [s.key, s.effect, s.usage])).toEqual([
      ["model", "read", { inputTokens: 12, outputTokens: 3, cachedInputTokens: 4, costUsd: 0.012 }],
      ["model:planner", "read", { inputTokens: 5, outputTokens: 1 }],
    ]);
  });

  it("reads usage from the APIs' shapes", () => {
    expect(usageOf({ usage: { inputTokens: 3, outputTokens: 4, reasoningTokens: 1 } })).toEqual({ inputTokens: 3, outputTokens: 4, reasoningTokens: 1 });
    expect(usageOf({ usage: { inputTokens: { total: 3, cacheRead: 2 }, outputTokens: { total: 4, reasoning: 1 } } })).toEqual({
      inputTokens: 3,
      outputTokens: 4,
      reasoningTokens: 1,
      cachedInputTokens: 2,
    });
    expect(usageOf({ usage: { input_tokens: 3, output_tokens: 4, cache_read_input_tokens: 2 } })).toEqual({
      inputTokens: 3,
      outputTokens: 4,
      cachedInputTokens: 2,
    });
    expect(usageOf({ text: "no usage" })).toBeUndefined();
  });

  it("a failed turn is recorded failed and ends the agent in this attempt: later turns and tool calls throw the same error", async () => {
    const { result, view } = await runOnce(async (ctx) => {
      const tools = durableTools(ctx, { t: () => 1 });
      const first = await modelTurn(ctx, () => Promise.reject(new Error("503"))).catch((e: unknown) => e);
      const second = await modelTurn(ctx, () => "never").catch((e: unknown) => e);
      const third = await tools.t({}).catch((e: unknown) => e);
      return { same: first === second && second === third, isFailed: first instanceof ModelTurnFailedError, message: (first as Error).message };
    });
    expect(result.value).toMatchObject({ same: true, isFailed: true });
    expect((result.value as { message: string }).message).toMatch(/Model turn "model" failed: 503.*a continue asks the model again from this turn/);
    expect(view.steps.map((s) => [s.key, s.status])).toEqual([["model", "failed"]]);
  });

  it("a continue hands recorded turns back without calling the model; the messages come out the same", async () => {
    let modelCalls = 0;
    let failOnce = true;
    const fakeModel = (messages: unknown[]) => {
      modelCalls++;
      const n = messages.filter((m: any) => m.role === "assistant").length;
      return n === 0
        ? {
            choices: [
              {
                message: {
                  role: "assistant",
                  content: null,
                  tool_calls: [{ id: "call_a", type: "function", function: { name: "add", arguments: '{"a":2,"b":3}' } }],
                },
              },
            ],
          }
        : { choices: [{ message: { role: "assistant", content: "5" } }] };
    };
    const seenMessages: unknown[][] = [];
    const wf = defineWorkflow({
      name: "plain-replay",
      async run(ctx) {
        const tools = durableTools(ctx, { add: ({ a, b }: { a: number; b: number }) => a + b });
        const messages: any[] = [{ role: "user", content: "2+3?" }];
        for (;;) {
          const response = await modelTurn(ctx, () => fakeModel(messages));
          const message = response.choices[0]!.message as any;
          messages.push(message);
          if (!message.tool_calls?.length) break;
          for (const call of message.tool_calls) {
            const out = await tools[call.function.name as "add"](JSON.parse(call.function.arguments), { toolCallId: call.id });
            messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify(out) });
          }
        }
        seenMessages.push(messages);
        if (failOnce) {
          failOnce = false;
          throw new Error("after the loop");
        }
        return messages.at(-1).content;
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect((await engine.start(wf, undefined, { id: "p" })).status).toBe("failed");
    expect(await engine.continue("p")).toMatchObject({ status: "completed", value: "5" });
    expect(modelCalls).toBe(2);
    expect(seenMessages[1]).toEqual(seenMessages[0]);
    expect([{ role: "user", content: "2+3?" }, ...messagesFromSteps(await engine.get("p"))]).toEqual(seenMessages[0]);
    await engine.close();
  });
});

describe("parallel tool calls on a continue", () => {
  it("an irreversible call that finished beside a call that failed is handed back, not made again, though it waits its turn", async () => {
    const bookings: string[] = [];
    let slow = true;
    const delay = (ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, ms);
        signal?.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)));
      });
    const workflow = defineWorkflow({
      name: "agent-parallel",
      async run(ctx) {
        const tools = durableTools(
          ctx,
          {
            lookup: {
              execute: async (input: { item: string }, { abortSignal }: { abortSignal?: AbortSignal; toolCallId?: string; messages?: unknown[] }) => (
                slow && (await delay(200, abortSignal)),
                `price of ${input.item}`
              ),
            },
            book: {
              execute: async (input: { item: string }, _options: { toolCallId?: string; messages?: unknown[] }) => (
                bookings.push(input.item),
                `booked ${input.item}`
              ),
            },
          },
          { effects: { lookup: "read", book: "irreversible" }, timeoutMs: { lookup: 50 } },
        );
        // What an agent framework does with a turn's two tool calls: run both, then look at each.
        const results = await Promise.allSettled([
          tools.lookup.execute!({ item: "hotel" }, { toolCallId: "call_1", messages: [] }),
          tools.book.execute!({ item: "flight" }, { toolCallId: "call_2", messages: [] }),
        ]);
        const failed = results.find((r) => r.status === "rejected");
        if (failed) throw (failed as PromiseRejectedResult).reason;
        return results.map((r) => (r as PromiseFulfilledResult<unknown>).value);
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "a" })).toMatchObject({ status: "failed" });
    expect(bookings).toEqual(["flight"]);
    slow = false;
    expect(await engine.continue("a")).toMatchObject({ status: "completed", value: ["price of hotel", "booked flight"] });
    expect(bookings).toEqual(["flight"]);
  });

  it("a waiting tool call is not handed the record of an older call made from another model answer", async () => {
    const bookings: string[] = [];
    let plan = "A";
    let cut: AbortController | undefined;
    const workflow = defineWorkflow({
      name: "agent-stale",
      async run(ctx) {
        // Plain function tools called without a call id: ids are 1, 2, … per tool, whatever the input.
        const tools = durableTools(
          ctx,
          {
            lookup: async (item: string, { abortSignal }: { abortSignal?: AbortSignal }) => {
              if (cut) {
                cut.abort();
                await untilAborted(abortSignal!);
              }
              return `price of ${item}`;
            },
            book: async (item: string) => (bookings.push(item), `booked ${item}`),
          },
          { effects: { lookup: "read", book: "irreversible" } },
        );
        const turn = await ctx.step("model", async () => ({ item: plan })); // stands for a model turn
        return Promise.all([tools.lookup(turn.item), tools.book(turn.item)]);
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "completed" });
    // The model turn is redone with a new answer (B); the attempt is cut off while lookup runs, before book's turn.
    plan = "B";
    cut = new AbortController();
    expect(await engine.continue("r", { fromStep: "model", signal: cut.signal })).toMatchObject({ status: "cancelled" });
    cut = undefined;
    // Nor is it run again on its own: its record was made for other arguments (A), so the continue stops before it.
    const stopped = await engine.continue("r");
    expect(stopped).toMatchObject({ status: "stopped", error: { code: "STEP_INPUT_CHANGED", step: "tool:book:1" } });
    expect(bookings).toEqual(["A"]);
    expect(await engine.continue("r", { redo: [stopped.error!.step!] })).toMatchObject({ status: "completed", value: ["price of B", "booked B"] });
    expect(bookings).toEqual(["A", "B"]);
  });
});
