// Tool inputs and approvals on the other stacks: the OpenAI Agents SDK (a tool's needsApproval,
// the SDK's interruption replaced by a step approval), the Anthropic SDK's tool-use loop and
// LangChain (durableTools' / durableLangChainTools' `approval`), each against the real package.
// A tool call's step records the call's arguments as its input; a continue that reaches the
// call's record with other arguments stops (STEP_INPUT_CHANGED); an approval parks the run
// before the call, `approve` lets exactly that call run once, and a rejection stops the run.
import Anthropic from "@anthropic-ai/sdk";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { tool as langChainTool } from "@langchain/core/tools";
import { Agent, run, setTracingDisabled, tool as agentsTool, Usage } from "@openai/agents";
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from "@openai/agents/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { durableAgent, durableAnthropic, durableChatModel, durableLangChainTools, durableTools } from "../../src/entries/agents.js";
import { createEngine, defineWorkflow, type WorkflowContext } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { testWorkflow } from "../../src/entries/testing.js";

beforeAll(() => setTracingDisabled(true));

/** What the model asks for, changed by a test between attempts. Call ids are fixed: a redone turn gives the same ids. */
interface Script {
  to: string;
}

type Gate = boolean | "rule";
const atExample = (input: { to: string }) => input.to.endsWith("@example.com");

/** One agent of a stack: `run(ctx)` makes the model ask for sendEmail({ to }) under the call id "call_send", then answers. */
interface Stack {
  name: string;
  /**
   * The agent's loop in a workflow; `gate` makes sendEmail need approval the stack's way: always
   * (true), or by a function of the arguments that asks for addresses at example.com ("rule").
   */
  agent(ctx: WorkflowContext, script: Script, sent: string[], gate: Gate): Promise<string>;
}

const STACKS: Stack[] = [
  {
    name: "openai-agents (tool needsApproval)",
    async agent(ctx, script, sent, gate) {
      const respond = ({ request }: { request: { input: unknown } }) => {
        const done = (Array.isArray(request.input) ? request.input : []).filter((i: { type: string }) => i.type === "function_call_result").length;
        const output = done === 0 ? [functionCall("sendEmail", { to: script.to }, { callId: "call_send" })] : [assistantMessage(`Sent to ${script.to}.`)];
        return { output, usage: new Usage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }) };
      };
      const agent = new Agent({
        name: "Support",
        instructions: "Send the email.",
        tools: [
          agentsTool({
            name: "sendEmail",
            description: "Send an email",
            parameters: z.object({ to: z.string() }),
            needsApproval: gate === "rule" ? async (_runContext, input) => atExample(input) : gate,
            execute: async ({ to }) => (sent.push(to), { messageId: `m-${sent.length}` }),
          }),
        ],
        model: new ScriptedModel(Array.from({ length: 6 }, () => modelResponder(respond as never))),
      });
      const result = await run(durableAgent(ctx, agent, { effects: { sendEmail: "irreversible" } }), "Tell Ada.", { maxTurns: 4 });
      // The SDK's own approval (an interruption to resolve and resume) did not happen.
      if (result.interruptions.length > 0) throw new Error("the SDK interrupted the run for an approval");
      return String(result.finalOutput);
    },
  },
  {
    name: "anthropic (durableTools approval)",
    async agent(ctx, script, sent, gate) {
      const fetch = async (_url: unknown, init?: RequestInit) => {
        const body = JSON.parse(String(init!.body));
        const done = body.messages.some(
          (m: { content: unknown }) => Array.isArray(m.content) && m.content.some((b: { type: string }) => b.type === "tool_result"),
        );
        const content = done
          ? [{ type: "text", text: `Sent to ${script.to}.` }]
          : [{ type: "tool_use", id: "call_send", name: "sendEmail", input: { to: script.to } }];
        const message = {
          id: "msg",
          type: "message",
          role: "assistant",
          model: body.model,
          content,
          stop_reason: done ? "end_turn" : "tool_use",
          stop_sequence: null,
          usage: { input_tokens: 10, output_tokens: 5 },
        };
        return new Response(JSON.stringify(message), { status: 200, headers: { "content-type": "application/json" } });
      };
      const claude = durableAnthropic(ctx, new Anthropic({ apiKey: "test", fetch: fetch as never, maxRetries: 0 }));
      const tools = durableTools(
        ctx,
        { sendEmail: async ({ to }: { to: string }) => (sent.push(to), { messageId: `m-${sent.length}` }) },
        { effects: { sendEmail: "irreversible" }, ...(gate ? { approval: gate === "rule" ? { sendEmail: atExample } : (["sendEmail"] as const) } : {}) },
      );
      const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Tell Ada." }];
      for (;;) {
        const message = await claude.messages.create({ model: "claude-test", max_tokens: 100, messages });
        messages.push({ role: "assistant", content: message.content });
        if (message.stop_reason !== "tool_use") return message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
        const results: Anthropic.ToolResultBlockParam[] = [];
        for (const block of message.content) {
          if (block.type !== "tool_use") continue;
          try {
            results.push({
              type: "tool_result",
              tool_use_id: block.id,
              content: JSON.stringify(await tools.sendEmail(block.input as { to: string }, { toolCallId: block.id })),
            });
          } catch (error) {
            results.push({ type: "tool_result", tool_use_id: block.id, content: (error as Error).message, is_error: true });
          }
        }
        messages.push({ role: "user", content: results });
      }
    },
  },
  {
    name: "langchain (durableLangChainTools approval)",
    async agent(ctx, script, sent, gate) {
      class Chat extends BaseChatModel {
        _llmType() {
          return "scripted";
        }
        override bindTools() {
          return this as never;
        }
        async _generate(messages: BaseMessage[]): Promise<ChatResult> {
          const done = messages.some((m) => m.getType() === "tool");
          const message = done
            ? new AIMessage({ content: `Sent to ${script.to}.` })
            : new AIMessage({ content: "", tool_calls: [{ id: "call_send", name: "sendEmail", args: { to: script.to }, type: "tool_call" }] });
          return { generations: [{ text: String(message.content), message }] };
        }
      }
      const sendEmail = langChainTool(async ({ to }: { to: string }) => (sent.push(to), JSON.stringify({ messageId: `m-${sent.length}` })), {
        name: "sendEmail",
        description: "Send an email",
        schema: z.object({ to: z.string() }),
      });
      const [tool] = durableLangChainTools(ctx, [sendEmail], {
        effects: { sendEmail: "irreversible" },
        ...(gate ? { approval: gate === "rule" ? { sendEmail: atExample } : ["sendEmail"] } : {}),
      });
      const model = durableChatModel(ctx, new Chat({}));
      const messages: BaseMessage[] = [new HumanMessage("Tell Ada.")];
      for (;;) {
        const ai = (await model.invoke(messages)) as AIMessage;
        messages.push(ai);
        if (!ai.tool_calls?.length) return String(ai.content);
        for (const call of ai.tool_calls) messages.push((await tool!.invoke({ ...call, type: "tool_call" })) as BaseMessage);
      }
    },
  },
];

describe.each(STACKS)("$name", (stack) => {
  function setup(gate: Gate) {
    const script: Script = { to: "ada@example.com" };
    const sent: string[] = [];
    const workflow = defineWorkflow({ name: "stack-agent", run: (ctx) => stack.agent(ctx, script, sent, gate) });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    return { script, sent, workflow, engine };
  }

  it("the call's step records its arguments as its input", async () => {
    const { workflow, engine } = setup(false);
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "completed", value: "Sent to ada@example.com." });
    expect((await engine.get("r")).steps.find((s) => s.key === "tool:sendEmail:call_send")).toMatchObject({ input: { to: "ada@example.com" } });
    await engine.close();
  });

  it("a continue reaching the call's record with other arguments under the same call id stops (STEP_INPUT_CHANGED), the tool not run", async () => {
    // The model's first turn as the stack records it, asking for bob under call_send.
    const bob = setup(false);
    bob.script.to = "bob@example.com";
    await bob.engine.start(bob.workflow, undefined, { id: "r" });
    const turn = (await bob.engine.get("r")).steps.find((s) => s.key === "model")!.value;
    await bob.engine.close();
    // Attempt 1 recorded that turn, but the call's record was made for ada (a turn redone since, a code change…).
    const { script, sent, workflow } = setup(false);
    script.to = "bob@example.com";
    const earlier = {
      steps: { model: turn, "tool:sendEmail:call_send": { messageId: "m-1" } },
      inputs: { "tool:sendEmail:call_send": { to: "ada@example.com" } },
      effects: { "tool:sendEmail:call_send": "irreversible" as const },
    };
    const stopped = await testWorkflow(workflow, { args: undefined as never, earlier });
    expect(stopped).toMatchObject({ status: "stopped", error: { code: "STEP_INPUT_CHANGED", step: "tool:sendEmail:call_send" } });
    expect(stopped.error!.message).toContain("ada@example.com");
    expect(stopped.error!.message).toContain("bob@example.com");
    expect(sent).toEqual([]);
    // Told to redo it, the call is made with the new arguments; told to reuse it, the old result is handed back.
    expect(await testWorkflow(workflow, { args: undefined as never, earlier, redo: ["tool:sendEmail:call_send"] })).toMatchObject({
      status: "completed",
      value: "Sent to bob@example.com.",
    });
    expect(sent).toEqual(["bob@example.com"]);
    expect(await testWorkflow(workflow, { args: undefined as never, earlier, reuse: ["tool:sendEmail:call_send"] })).toMatchObject({ status: "completed" });
    expect(sent).toEqual(["bob@example.com"]);
  });

  it("an approval-gated tool parks the run before the call; approve lets exactly that call run once", async () => {
    const { sent, workflow, engine } = setup(true);
    const waiting = { status: "waiting", waitingFor: { kind: "approval", step: "tool:sendEmail:call_send" } };
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject(waiting);
    expect(await engine.continue("r")).toMatchObject(waiting);
    expect(sent).toEqual([]);
    await engine.approve("r", "tool:sendEmail:call_send", { by: "ana" });
    expect(await engine.continue("r")).toMatchObject({ status: "completed", value: "Sent to ada@example.com." });
    expect(sent).toEqual(["ada@example.com"]);
    expect((await engine.get("r")).steps.find((s) => s.key === "tool:sendEmail:call_send")).toMatchObject({
      status: "succeeded",
      input: { to: "ada@example.com" },
    });
    expect(await engine.continue("r").catch((error: { code: string }) => error.code)).toBe("RUN_COMPLETED");
    expect(sent).toEqual(["ada@example.com"]);
    await engine.close();
  });

  it("a rule (a function of the arguments) parks only the calls it says need approval", async () => {
    const parked = setup("rule");
    expect(await parked.engine.start(parked.workflow, undefined, { id: "r" })).toMatchObject({
      status: "waiting",
      waitingFor: { kind: "approval", step: "tool:sendEmail:call_send" },
    });
    expect(parked.sent).toEqual([]);
    await parked.engine.approve("r", "tool:sendEmail:call_send");
    expect(await parked.engine.continue("r")).toMatchObject({ status: "completed" });
    expect(parked.sent).toEqual(["ada@example.com"]);
    await parked.engine.close();
    const free = setup("rule");
    free.script.to = "ada@elsewhere.org";
    expect(await free.engine.start(free.workflow, undefined, { id: "r" })).toMatchObject({ status: "completed", value: "Sent to ada@elsewhere.org." });
    expect(free.sent).toEqual(["ada@elsewhere.org"]);
    await free.engine.close();
  });

  it("a rejected call never runs: the run ends stopped", async () => {
    const { sent, workflow, engine } = setup(true);
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "waiting" });
    await engine.reject("r", "tool:sendEmail:call_send", { by: "ana" });
    expect(await engine.get("r")).toMatchObject({ status: "stopped" });
    expect(sent).toEqual([]);
    await engine.close();
  });
});
