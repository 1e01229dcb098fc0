// The OpenAI Agents SDK integration, against the real `@openai/agents` package: an Agent with
// function tools run by the SDK's own loop (run, Runner, streamed or not), its model the SDK's
// ScriptedModel test double. durableAgent makes each model turn and each tool call a step; a
// continue answers recorded turns and calls from the log.
import { Agent, handoff, Runner, run, setTracingDisabled, tool, Usage, type ModelProvider, type ModelRequest, type StreamEvent } from "@openai/agents";
import { assistantMessage, functionCall, modelResponder, modelStreamResponder, ScriptedModel } from "@openai/agents/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { durableAgent, durableAgentModel, durableModelProvider, messagesFromSteps } from "../../src/entries/agents.js";
import { createEngine, defineWorkflow, isSteplogError } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { testWorkflow } from "../../src/entries/testing.js";

beforeAll(() => setTracingDisabled(true));

interface World {
  calls: string[];
  details: Record<string, any>;
  outbox: Array<{ key: string; to: string }>;
  modelCalls: number;
}
const newWorld = (): World => ({ calls: [], details: {}, outbox: [], modelCalls: 0 });

function makeTools(world: World) {
  return [
    tool({
      name: "lookupCustomer",
      description: "Find a customer by id",
      parameters: z.object({ id: z.string() }),
      execute: async ({ id }, _runContext, details) => {
        world.calls.push("lookupCustomer");
        world.details.lookupCustomer = details;
        return { id, name: "Ada", email: "ada@example.com" };
      },
    }),
    tool({
      name: "sendEmail",
      description: "Send an email",
      parameters: z.object({ to: z.string() }),
      execute: async ({ to }, _runContext, details) => {
        world.calls.push("sendEmail");
        world.details.sendEmail = details;
        const key = (details as { idempotencyKey: string }).idempotencyKey;
        world.outbox.push({ key, to });
        return { messageId: `m-${world.outbox.length}` };
      },
    }),
  ];
}

const usage = (n: number) => new Usage({ requests: 1, inputTokens: 100 + n, outputTokens: 10 + n, totalTokens: 110 + 2 * n });

/**
 * The SDK's ScriptedModel, answering from the conversation: look the customer up, send the
 * email, then say so. Each answer gets fresh call ids (as real models give), so only a
 * recorded turn gives a continue the same ids.
 */
function scriptedModel(world: World, streamed = false) {
  let fresh = 0;
  const answer = (request: ModelRequest) => {
    world.modelCalls++;
    const input = Array.isArray(request.input) ? request.input : [];
    const done = input.filter((i) => i.type === "function_call_result").length;
    const id = () => `call_${++fresh}_${Math.random().toString(36).slice(2, 6)}`;
    if (done === 0)
      return { output: [assistantMessage("Looking the customer up."), functionCall("lookupCustomer", { id: "c-7" }, { callId: id() })], usage: usage(0) };
    if (done === 1) return { output: [functionCall("sendEmail", { to: "ada@example.com" }, { callId: id() })], usage: usage(1) };
    return { output: [assistantMessage("Sent the note to ada@example.com.")], usage: usage(2) };
  };
  // A streamed call streams the answer's text word by word, then the whole response.
  const stream = (request: ModelRequest): StreamEvent[] => {
    const { output, usage } = answer(request);
    const text = output.flatMap((o) => (o.type === "message" ? o.content.map((c) => (c.type === "output_text" ? c.text : "")) : [])).join("");
    return [
      { type: "response_started" },
      ...(text === "" ? [] : text.split(/(?<= )/)).map((delta): StreamEvent => ({ type: "output_text_delta", delta })),
      { type: "response_done", response: { id: `resp-${world.modelCalls}`, usage: { ...usage, requests: 1 }, output } },
    ];
  };
  return new ScriptedModel(
    Array.from({ length: 12 }, () => (streamed ? modelStreamResponder(({ request }) => stream(request)) : modelResponder(({ request }) => answer(request)))),
  );
}

function agentWorkflow(name: string, world: World, options: { stream?: boolean; failAfter?: () => boolean; withQuery?: boolean; deltas?: string[][] } = {}) {
  const agent = new Agent({ name: "Support", instructions: "Help.", tools: makeTools(world), model: scriptedModel(world, options.stream) });
  return defineWorkflow({
    name,
    async run(ctx) {
      const durable = durableAgent(ctx, agent, {
        effects: { lookupCustomer: "read", sendEmail: "irreversible" },
        ...(options.withQuery
          ? {
              query: {
                sendEmail: ({ idempotencyKey }) => {
                  const sent = world.outbox.findIndex((m) => m.key === idempotencyKey);
                  return sent === -1 ? { done: false } : { done: true, value: { messageId: `m-${sent + 1}` } };
                },
              },
            }
          : {}),
        model: { costUsd: ({ inputTokens = 0 }) => inputTokens / 1e6 },
      });
      let text: unknown;
      if (options.stream) {
        const result = await run(durable, "Tell customer c-7 their order shipped.", { stream: true });
        const deltas: string[] = [];
        for await (const event of result) if (event.type === "raw_model_stream_event" && event.data.type === "output_text_delta") deltas.push(event.data.delta);
        await result.completed;
        options.deltas?.push(deltas);
        text = result.finalOutput;
      } else {
        text = (await run(durable, "Tell customer c-7 their order shipped.")).finalOutput;
      }
      if (options.failAfter?.()) throw new Error("the app failed after the agent answered");
      return text;
    },
  });
}

const EVERY_STEP = ["model", "tool:lookupCustomer:", "model#2", "tool:sendEmail:", "model#3"];
const shape = (keys: string[]) => keys.map((k) => (k.startsWith("tool:") ? k.replace(/[^:]+$/, "") : k));

describe("durableAgent with run()", () => {
  it("records every turn and every tool call as a step, keyed by the model's call ids, with each turn's usage", async () => {
    const world = newWorld();
    const wf = agentWorkflow("oa-run", world);
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    const result = await engine.start(wf, undefined, { id: "r1" });
    expect(result).toMatchObject({ status: "completed", value: "Sent the note to ada@example.com." });
    const view = await engine.get("r1");
    expect(view.steps.map((s) => [shape([s.key])[0], s.effect, s.status])).toEqual([
      ["model", "read", "succeeded"],
      ["tool:lookupCustomer:", "read", "succeeded"],
      ["model#2", "read", "succeeded"],
      ["tool:sendEmail:", "irreversible", "succeeded"],
      ["model#3", "read", "succeeded"],
    ]);
    // The call id in the step key is the one in the model's answer.
    const firstTurn = view.steps[0]!.value as { output: Array<{ type: string; callId?: string }> };
    expect(view.steps[1]!.key).toBe(`tool:lookupCustomer:${firstTurn.output.find((o) => o.type === "function_call")!.callId}`);
    expect(view.steps.filter((s) => s.name === "model").map((s) => s.usage)).toEqual([
      { inputTokens: 100, outputTokens: 10, costUsd: 0.0001 },
      { inputTokens: 101, outputTokens: 11, costUsd: 0.000101 },
      { inputTokens: 102, outputTokens: 12, costUsd: 0.000102 },
    ]);
    expect(world.modelCalls).toBe(3);
    expect(world.calls).toEqual(["lookupCustomer", "sendEmail"]);
    // The tool's details: the SDK's (the call) plus the step's idempotency key and key.
    const sendKey = view.steps[3]!.key;
    expect(world.details.sendEmail).toMatchObject({ idempotencyKey: `r1:${sendKey}`, step: sendKey, toolCall: { name: "sendEmail" } });
    expect(world.details.sendEmail.previous).toBeUndefined();
    expect(world.outbox).toEqual([{ key: `r1:${sendKey}`, to: "ada@example.com" }]);
    await engine.close();
  });

  it("keeps the agent and its tools as they were: a clone, every other field kept, the original untouched", async () => {
    const world = newWorld();
    const tools = makeTools(world);
    const hosted = { type: "hosted_tool", name: "web_search", providerData: {} };
    const agent = new Agent({ name: "Support", instructions: "Help.", tools: [...tools, hosted as never], model: scriptedModel(world) });
    let durable: Agent | undefined;
    const wf = defineWorkflow({
      name: "oa-shape",
      async run(ctx) {
        durable = durableAgent(ctx, agent);
        // Wrapping again changes nothing (a turn inside a turn would be a step inside a step).
        expect(durableAgent(ctx, durable)).toBe(durable);
        expect(durableAgentModel(ctx, durable.model as ScriptedModel)).toBe(durable.model);
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    const result = await engine.start(wf, undefined);
    expect(result.status, JSON.stringify(result.error)).toBe("completed");
    expect(durable).toBeInstanceOf(Agent);
    expect(durable).not.toBe(agent);
    expect(durable!.name).toBe("Support");
    expect(durable!.instructions).toBe("Help.");
    expect(agent.tools[0]).toBe(tools[0]);
    const wrapped = durable!.tools[0] as (typeof tools)[0];
    expect(wrapped).not.toBe(tools[0]);
    expect([wrapped.name, wrapped.description, wrapped.parameters, wrapped.strict]).toEqual([
      tools[0]!.name,
      tools[0]!.description,
      tools[0]!.parameters,
      tools[0]!.strict,
    ]);
    expect(wrapped.invoke).not.toBe(tools[0]!.invoke);
    expect(durable!.tools[2]).toBe(hosted);
    await engine.close();
  });

  it("a continue answers recorded turns and tool calls from the log: the model is not asked again, no tool runs again", async () => {
    const world = newWorld();
    let failOnce = true;
    const wf = agentWorkflow("oa-replay", world, { failAfter: () => (failOnce ? !(failOnce = false) : false) });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect((await engine.start(wf, undefined, { id: "r2" })).status).toBe("failed");
    const second = await engine.continue("r2");
    expect(second).toMatchObject({ status: "completed", value: "Sent the note to ada@example.com." });
    expect(world.modelCalls).toBe(3);
    expect(world.calls).toEqual(["lookupCustomer", "sendEmail"]);
    const view = await engine.get("r2");
    expect(shape(view.attempts[1]!.reused)).toEqual(EVERY_STEP);
    await engine.close();
  });

  it("a streamed run (run(agent, input, { stream: true })): each turn recorded, the text streamed, and a continue replays the stream", async () => {
    const world = newWorld();
    let failOnce = true;
    const deltas: string[][] = [];
    const wf = agentWorkflow("oa-stream", world, { stream: true, deltas, failAfter: () => (failOnce ? !(failOnce = false) : false) });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect((await engine.start(wf, undefined, { id: "r3" })).status).toBe("failed");
    const view = await engine.get("r3");
    expect(shape(view.steps.map((s) => s.key))).toEqual(EVERY_STEP);
    const recorded = view.steps[0]!.value as { events: Array<{ type: string }> };
    expect(recorded.events.map((e) => e.type)).toContain("response_done");
    expect(view.steps[0]!.usage).toMatchObject({ inputTokens: 100, outputTokens: 10 });
    const again = await engine.continue("r3");
    expect(again).toMatchObject({ status: "completed", value: "Sent the note to ada@example.com." });
    expect(world.modelCalls).toBe(3);
    expect(world.calls).toEqual(["lookupCustomer", "sendEmail"]);
    expect(shape((await engine.get("r3")).attempts[1]!.reused)).toEqual(EVERY_STEP);
    // The app saw the text stream in both attempts: live from the model, then from the log.
    const streamed = ["Looking ", "the ", "customer ", "up.", "Sent ", "the ", "note ", "to ", "ada@example.com."];
    expect(deltas).toEqual([streamed, streamed]);
    await engine.close();
  });

  it("an irreversible call cut off (its intent recorded, no outcome) is settled by its query on the continue, not made again", async () => {
    // A first run gives the turns (with their call ids) that the seeded attempt 1 recorded.
    const world = newWorld();
    const wf = agentWorkflow("oa-query", world, { withQuery: true });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    await engine.start(wf, undefined, { id: "r4" });
    const view = await engine.get("r4");
    await engine.close();
    const [turn1, lookup, turn2, send] = view.steps;

    // Attempt 1 was cut off inside sendEmail after the email left: the outbox holds it.
    const world2: World = { ...newWorld(), outbox: [{ key: `r4:${send!.key}`, to: "ada@example.com" }] };
    const out = await testWorkflow(agentWorkflow("oa-query", world2, { withQuery: true }), {
      runId: "r4",
      args: undefined,
      earlier: { steps: { [turn1!.key]: turn1!.value, [lookup!.key]: lookup!.value, [turn2!.key]: turn2!.value }, intended: [send!.key] },
    });
    expect(out.status).toBe("completed");
    expect(out.value).toBe("Sent the note to ada@example.com.");
    expect(out.resolved).toEqual([send!.key]);
    expect(out.reused).toEqual([turn1!.key, lookup!.key, turn2!.key]);
    expect(world2.calls).toEqual([]);
    expect(world2.outbox).toHaveLength(1);
    // Only the last turn asked the model.
    expect(world2.modelCalls).toBe(1);
  });

  it("hands off to another agent: that agent's tools and model are durable too", async () => {
    const world = newWorld();
    const mailer = new Agent({ name: "Mailer", instructions: "Send.", tools: makeTools(world).slice(1), model: scriptedModel(world) });
    let turn = 0;
    const triageModel = new ScriptedModel([
      modelResponder(() => {
        turn++;
        return { output: [functionCall("transfer_to_Mailer", {}, { callId: "h-1" })], usage: usage(0) };
      }),
    ]);
    const triage = new Agent({ name: "Triage", instructions: "Route.", handoffs: [mailer], model: triageModel });
    const wf = defineWorkflow({
      name: "oa-handoff",
      async run(ctx) {
        return (await run(durableAgent(ctx, triage, { effects: { sendEmail: "irreversible" } }), "Send Ada a note.")).finalOutput;
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    const result = await engine.start(wf, undefined, { id: "r5" });
    expect(result.status, JSON.stringify(result.error)).toBe("completed");
    const view = await engine.get("r5");
    expect(turn).toBe(1);
    // The triage turn, its handoff (keyed by the call id), then the mailer's turns and its sendEmail call, each a step.
    expect(shape(view.steps.map((s) => s.key))).toEqual(["model", "tool:transfer_to_Mailer:", "model#2", "tool:sendEmail:", "model#3"]);
    expect(view.steps[1]!.key).toBe("tool:transfer_to_Mailer:h-1");
    expect(view.steps[3]!.effect).toBe("irreversible");
    // The conversation has the handoff's result, as the SDK gave it to the model.
    const messages = messagesFromSteps(view);
    expect(messages.slice(0, 2)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "h-1", type: "function", function: { name: "transfer_to_Mailer", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "h-1", content: '{"assistant":"Mailer"}' },
    ]);
    expect(messages.map((m) => m.role)).toEqual(["assistant", "tool", "assistant", "tool", "assistant"]);
    await engine.close();
  });

  it("a streamed run that hands off: the handoff is a step keyed by the call id in the recorded stream", async () => {
    const world = newWorld();
    const mailer = new Agent({ name: "Mailer", instructions: "Send.", tools: makeTools(world).slice(1), model: scriptedModel(world, true) });
    const triageModel = new ScriptedModel([
      modelStreamResponder(() => [
        { type: "response_started" },
        {
          type: "response_done",
          response: { id: "resp-t", usage: { ...usage(0), requests: 1 }, output: [functionCall("transfer_to_Mailer", {}, { callId: "h-s" })] },
        },
      ]),
    ]);
    const triage = new Agent({ name: "Triage", instructions: "Route.", handoffs: [mailer], model: triageModel });
    const wf = defineWorkflow({
      name: "oa-handoff-stream",
      async run(ctx) {
        const result = await run(durableAgent(ctx, triage, { effects: { sendEmail: "irreversible" } }), "Send Ada a note.", { stream: true });
        await result.completed;
        return result.finalOutput;
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    const result = await engine.start(wf, undefined, { id: "r7" });
    expect(result.status, JSON.stringify(result.error)).toBe("completed");
    const view = await engine.get("r7");
    expect(view.steps.map((s) => shape([s.key])[0])).toEqual(["model", "tool:transfer_to_Mailer:", "model#2", "tool:sendEmail:", "model#3"]);
    expect(view.steps[1]).toMatchObject({ key: "tool:transfer_to_Mailer:h-s", value: { assistant: "Mailer" } });
    expect(messagesFromSteps(view)[1]).toEqual({ role: "tool", tool_call_id: "h-s", content: '{"assistant":"Mailer"}' });
    await engine.close();
  });

  it("a handoff(...) with onHandoff: the call is a step, so a continue hands it back without running onHandoff again; options may name it", async () => {
    const world = newWorld();
    const mailer = new Agent({ name: "Mailer", instructions: "Send.", tools: makeTools(world).slice(1), model: scriptedModel(world) });
    const handedOff: string[] = [];
    const toMailer = handoff(mailer, { onHandoff: () => void handedOff.push("Mailer") });
    const triageModel = new ScriptedModel([
      modelResponder(() => ({ output: [functionCall("transfer_to_Mailer", {}, { callId: `h-${++world.modelCalls}` })], usage: usage(0) })),
    ]);
    const triage = new Agent({ name: "Triage", instructions: "Route.", handoffs: [toMailer], model: triageModel });
    let failOnce = true;
    const wf = defineWorkflow({
      name: "oa-handoff-object",
      async run(ctx) {
        const out = (await run(durableAgent(ctx, triage, { effects: { sendEmail: "irreversible", transfer_to_Mailer: "read" } }), "Send Ada a note."))
          .finalOutput;
        if (failOnce) {
          failOnce = false;
          throw new Error("the app failed after the agent answered");
        }
        return out;
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect((await engine.start(wf, undefined, { id: "r6" })).status).toBe("failed");
    expect(await engine.continue("r6")).toMatchObject({ status: "completed", value: "Sent the note to ada@example.com." });
    const view = await engine.get("r6");
    expect(view.steps[1]).toMatchObject({ key: "tool:transfer_to_Mailer:h-1", effect: "read", value: { assistant: "Mailer" } });
    expect(shape(view.attempts[1]!.reused)).toEqual(["model", "tool:transfer_to_Mailer:", "model#2", "tool:sendEmail:", "model#3"]);
    expect(handedOff).toEqual(["Mailer"]);
    expect(world.calls).toEqual(["sendEmail"]);
    expect(messagesFromSteps(view)).toHaveLength(5);
    await engine.close();
  });

  it("refuses options naming a tool the agent (and its handoffs) do not have", async () => {
    const world = newWorld();
    const agent = new Agent({ name: "Support", tools: makeTools(world), model: scriptedModel(world) });
    const wf = defineWorkflow({
      name: "oa-options",
      async run(ctx) {
        durableAgent(ctx, agent, { effects: { sendMail: "irreversible" } });
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    const result = await engine.start(wf, undefined);
    expect(result.error).toMatchObject({ code: "INVALID_OPTION" });
    expect(result.error!.message).toContain('names "sendMail", which is not one of the tools (lookupCustomer, sendEmail)');
    await engine.close();
  });
});

describe("models the Runner resolves by name", () => {
  const provider = (world: World): ModelProvider => ({ getModel: () => scriptedModel(world) });

  it("durableModelProvider wraps every model the Runner gets from the provider", async () => {
    const world = newWorld();
    const agent = new Agent({ name: "Support", tools: makeTools(world), model: "gpt-example" });
    let failOnce = true;
    const wf = defineWorkflow({
      name: "oa-provider",
      async run(ctx) {
        const runner = new Runner({ modelProvider: durableModelProvider(ctx, provider(world)) });
        const out = (await runner.run(durableAgent(ctx, agent), "Tell customer c-7 their order shipped.")).finalOutput;
        if (failOnce) {
          failOnce = false;
          throw new Error("later failure");
        }
        return out;
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect((await engine.start(wf, undefined, { id: "p1" })).status).toBe("failed");
    expect(await engine.continue("p1")).toMatchObject({ status: "completed", value: "Sent the note to ada@example.com." });
    expect(world.modelCalls).toBe(3);
    expect(world.calls).toEqual(["lookupCustomer", "sendEmail"]);
    await engine.close();
  });

  it("a tool call after a model turn steplog did not record is refused before the tool runs (INVALID_OPTION)", async () => {
    const world = newWorld();
    const agent = new Agent({ name: "Support", tools: makeTools(world), model: "gpt-example" });
    const wf = defineWorkflow({
      name: "oa-unrecorded",
      async run(ctx) {
        const runner = new Runner({ modelProvider: provider(world) });
        return (await runner.run(durableAgent(ctx, agent), "go")).finalOutput;
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    const result = await engine.start(wf, undefined, { id: "p2" });
    expect(result.status).toBe("failed");
    // The SDK reports a tool's failure wrapped in its own ToolCallError; steplog's message is in it.
    expect(result.error!.message).toMatch(
      /InvalidOptionError: steplog\/agents: agent "Support" called tool "lookupCustomer" after a model turn steplog did not record.*durableModelProvider/,
    );
    expect(world.calls).toEqual([]);
    await engine.close();
  });

  it("durableAgentModel refuses what is not a Model", async () => {
    const wf = defineWorkflow({
      name: "oa-not-model",
      async run(ctx) {
        try {
          durableAgentModel(ctx, {} as never);
        } catch (error) {
          return isSteplogError(error, "INVALID_OPTION");
        }
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect((await engine.start(wf, undefined)).value).toBe(true);
    await engine.close();
  });
});

describe("messagesFromSteps on an Agents SDK run", () => {
  it("reads each turn's output items and each call's result", async () => {
    const world = newWorld();
    const wf = agentWorkflow("oa-messages", world);
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    await engine.start(wf, undefined, { id: "m1" });
    const view = await engine.get("m1");
    const messages = messagesFromSteps(view);
    expect(messages.map((m) => m.role)).toEqual(["assistant", "tool", "assistant", "tool", "assistant"]);
    expect(messages[0]).toMatchObject({
      role: "assistant",
      content: "Looking the customer up.",
      tool_calls: [{ id: view.steps[1]!.key.split(":")[2], type: "function", function: { name: "lookupCustomer", arguments: '{"id":"c-7"}' } }],
    });
    expect(messages[3]).toMatchObject({ role: "tool", content: '{"messageId":"m-1"}' });
    expect(messages[4]).toEqual({ role: "assistant", content: "Sent the note to ada@example.com." });
    await engine.close();
  });
});
