// The agent stacks people use, against real crashes: the same support agent written with the
// OpenAI Agents SDK (run() over an Agent, the SDK's ScriptedModel), the Anthropic SDK (the
// messages.create tool-use loop, the real client over a stubbed fetch) and LangChain (tool(),
// bindTools and the tool-calling loop) and MCP (a hand-written loop whose tools are on an MCP
// server, the attempt's child over stdio), each made durable by steplog/agents. One attempt runs
// in a child process (examples/agent/attempt.mjs, against dist/) and is SIGKILLed inside
// sendEmail (the email left, its outcome not recorded), right after sendEmail's outcome is
// durable, or at steplog's own fault point after a model turn answered (STEPLOG_FAULT). A new
// process continues. The world's ledgers count, across processes, every time the model was
// asked and every time a tool ran.
import { describe, expect, it } from "vitest";
import { messagesFromSteps } from "../../src/entries/agents.js";
import { tmpDir } from "../helpers/tmp.js";
import { attempt, BEFORE_SEND, inspect, ledgers, output, shape } from "./attempt-helpers.js";

/** Each tool ran once, and the outbox holds one email, sent under the step's idempotency key. */
function expectOnce(dir: string) {
  const l = ledgers(dir);
  expect(l.tool("lookupOrder")).toHaveLength(1);
  expect(l.tool("saveDraft")).toHaveLength(1);
  expect(l.tool("sendEmail")).toHaveLength(1);
  expect(l.outbox).toHaveLength(1);
  return l;
}

describe.each(["openai-agents", "anthropic", "langchain", "mcp"])("the %s agent, SIGKILLed", (agent) => {
  /** sendEmail's result as the agent's tool returns it: an MCP tool's is a CallToolResult. */
  const sendResult = (sent: { messageId: string; to: string }) =>
    agent === "mcp" ? { content: [{ type: "text", text: JSON.stringify(sent) }], structuredContent: sent } : sent;

  it("inside sendEmail, after the email left; no query: escalated, never sent twice, no recorded turn or call made again", async () => {
    const dir = tmpDir("steplog-stack-crash-");
    const first = await attempt(dir, agent, "r", "start", { STEPLOG_AGENT_CRASH: "in-effect" });
    expect(first.signal, output(first)).toBe("SIGKILL");
    expect(ledgers(dir).outbox).toHaveLength(1);

    const second = await attempt(dir, agent, "r", "continue");
    expect(second.result, output(second)).toMatchObject({ status: "escalated", attempt: 2, error: { code: "RUN_ESCALATED" } });
    let l = expectOnce(dir);
    // The model was asked for turns 1-3 by the first process only; the continue asked it nothing.
    expect(l.modelTurns).toEqual([1, 2, 3]);
    expect(new Set(l.modelPids).size).toBe(1);

    const { sendKey } = await inspect(dir, async (engine) => {
      const run = await engine.get("r");
      expect(run.status).toBe("escalated");
      expect(shape(run.attempts[1]!.reused)).toEqual(BEFORE_SEND);
      const send = run.steps.filter((s) => s.name.startsWith("tool:sendEmail:"));
      expect(send.map((s) => [s.attempt, s.status, s.effect])).toEqual([[1, "escalated", "irreversible"]]);
      expect((await engine.escalations()).map((e) => [e.runId, e.step])).toEqual([["r", send[0]!.key]]);
      return { sendKey: send[0]!.key };
    });
    // The email went out under the step's idempotency key: the tool was handed it by the adapter.
    expect(l.outbox[0].key).toBe(`r:${sendKey}`);

    // A person sees the email in the provider's log and says so; the continue goes on from there.
    await inspect(dir, (engine) => engine.resolve("r", sendKey, { value: sendResult({ messageId: l.outbox[0].messageId, to: l.outbox[0].to }) }));
    const third = await attempt(dir, agent, "r", "continue");
    expect(third.result, output(third)).toMatchObject({ status: "completed", attempt: 3 });
    expect(third.result!.value!.answer).toBe("Emailed ada@example.com (message m-1): order o-17 arrives tomorrow.");
    l = expectOnce(dir);
    expect(l.modelTurns).toEqual([1, 2, 3, 4]);
  });

  it("inside sendEmail, after the email left; with a query: settled by the query, not sent again", async () => {
    const dir = tmpDir("steplog-stack-crash-");
    const env = { STEPLOG_AGENT_QUERY: "1" };
    const first = await attempt(dir, agent, "r", "start", { ...env, STEPLOG_AGENT_CRASH: "in-effect" });
    expect(first.signal, output(first)).toBe("SIGKILL");
    const second = await attempt(dir, agent, "r", "continue", env);
    expect(second.result, output(second)).toMatchObject({ status: "completed", attempt: 2 });
    const l = expectOnce(dir);
    expect(l.modelTurns).toEqual([1, 2, 3, 4]);
    expect(new Set(l.modelPids.slice(0, 3)).size).toBe(1);
    expect(l.modelPids[3]).not.toBe(l.modelPids[0]);
    await inspect(dir, async (engine) => {
      const run = await engine.get("r");
      expect(shape(run.attempts[1]!.reused)).toEqual(BEFORE_SEND);
      const send = run.steps.filter((s) => s.name.startsWith("tool:sendEmail:"));
      expect(send.map((s) => [s.attempt, s.status])).toEqual([[1, "succeeded"]]);
      expect(send[0]!.resolution).toMatchObject({ policy: "query", found: "done", attempt: 2 });
      expect(send[0]!.value).toEqual(sendResult({ messageId: "m-1", to: "ada@example.com" }));
    });
  });

  it("right after sendEmail's outcome: the continue reuses every turn and call, and asks the model only for the last turn", async () => {
    const dir = tmpDir("steplog-stack-crash-");
    const first = await attempt(dir, agent, "r", "start", { STEPLOG_AGENT_CRASH: "after-outcome" });
    expect(first.signal, output(first)).toBe("SIGKILL");
    const second = await attempt(dir, agent, "r", "continue");
    expect(second.result, output(second)).toMatchObject({ status: "completed", attempt: 2 });
    const l = expectOnce(dir);
    expect(l.modelTurns).toEqual([1, 2, 3, 4]);
    expect(l.modelPids[3]).not.toBe(l.modelPids[2]);
    await inspect(dir, async (engine) => {
      const run = await engine.get("r");
      expect(shape(run.attempts[1]!.reused)).toEqual([...BEFORE_SEND, "tool:sendEmail:"]);
      expect(run.steps.map((s) => [s.attempt, s.status])).toEqual([...Array(6).fill([1, "succeeded"]), [2, "succeeded"]]);
      // Each turn's tokens and cost were recorded from the stack's own answer.
      expect(run.usage.inputTokens).toBeGreaterThan(0);
      expect(run.usage.outputTokens).toBeGreaterThan(0);
      expect(run.usage.costUsd).toBeGreaterThan(0);
    });
  });

  it("at STEPLOG_FAULT=after-fn@model#2 (the turn answered, its outcome not recorded): only that turn is asked again, under new call ids", async () => {
    const dir = tmpDir("steplog-stack-crash-");
    const first = await attempt(dir, agent, "r", "start", { STEPLOG_FAULT: "after-fn@model#2" });
    expect(first.signal, output(first)).toBe("SIGKILL");
    expect(ledgers(dir).modelTurns).toEqual([1, 2]);
    const cut = await inspect(dir, async (engine) => (await engine.get("r")).steps.map((s) => [s.key.replace(/:[^:]+$/, ":"), s.status]));
    expect(cut).toEqual([
      ["model", "succeeded"],
      ["tool:lookupOrder:", "succeeded"],
      ["model#2", "intended"],
    ]);

    const second = await attempt(dir, agent, "r", "continue");
    expect(second.result, output(second)).toMatchObject({ status: "completed", attempt: 2 });
    const l = expectOnce(dir);
    // Turn 1 (its outcome recorded) was not asked again; turn 2 (none) was, by the new process.
    expect(l.modelTurns).toEqual([1, 2, 2, 3, 4]);
    expect(l.modelPids[2]).not.toBe(l.modelPids[1]);
    await inspect(dir, async (engine) => {
      const run = await engine.get("r");
      expect(shape(run.attempts[1]!.reused)).toEqual(["model", "tool:lookupOrder:"]);
      // The cut-off row is closed, and the turn asked again is a row of attempt 2.
      const model2 = run.steps.filter((s) => s.key === "model#2");
      expect(model2.map((s) => [s.attempt, s.status])).toEqual([
        [1, "failed"],
        [2, "succeeded"],
      ]);
      expect(model2[0]!.resolution).toMatchObject({ policy: "redrive", found: "unknown", attempt: 2 });
      // The saveDraft call comes from the turn asked again, so its id is the new turn's.
      const draft = run.steps.find((s) => s.name.startsWith("tool:saveDraft:"))!;
      expect(draft.attempt).toBe(2);
      expect(JSON.stringify(model2[1]!.value)).toContain(draft.key.split(":")[2]);
    });
  });
});

// The OpenAI Agents SDK agent behind a triage agent: the triage turn hands off to Support (a call
// to the SDK's handoff tool transfer_to_Support), which then does the work. The handoff is a step,
// so a continue hands it back, and the conversation read from the log has its result.
describe("the openai-agents agent behind a handoff, SIGKILLed", () => {
  const AFTER_HANDOFF = ["model", "tool:transfer_to_Support:"];

  /** The conversation from the log: the handoff call and its result first, then Support's turns and calls, the answer last. */
  async function expectConversation(dir: string) {
    await inspect(dir, async (engine) => {
      const run = await engine.get("r");
      const handoff = run.steps.find((s) => s.name.startsWith("tool:transfer_to_Support:"))!;
      const callId = handoff.key.split(":")[2];
      const messages = messagesFromSteps(run);
      expect(messages.slice(0, 2)).toEqual([
        { role: "assistant", content: null, tool_calls: [{ id: callId, type: "function", function: { name: "transfer_to_Support", arguments: "{}" } }] },
        { role: "tool", tool_call_id: callId, content: '{"assistant":"Support"}' },
      ]);
      expect(messages.map((m) => m.role)).toEqual(["assistant", "tool", ...Array(3).fill(["assistant", "tool"]).flat(), "assistant"]);
      expect(messages.at(-1)).toEqual({ role: "assistant", content: "Emailed ada@example.com (message m-1): order o-17 arrives tomorrow." });
    });
  }

  it("right after the handoff (Support's first turn intended, not asked): the handoff is handed back, no tool repeated, the run completes", async () => {
    const dir = tmpDir("steplog-stack-crash-");
    const first = await attempt(dir, "openai-agents-handoff", "r", "start", { STEPLOG_FAULT: "after-intent@model#2" });
    expect(first.signal, output(first)).toBe("SIGKILL");
    expect(ledgers(dir).modelTurns).toEqual(["triage"]);
    const cut = await inspect(dir, async (engine) => (await engine.get("r")).steps.map((s) => [shape([s.key])[0], s.status, s.value]));
    expect(cut).toEqual([
      ["model", "succeeded", expect.anything()],
      ["tool:transfer_to_Support:", "succeeded", { assistant: "Support" }],
      ["model#2", "intended", undefined],
    ]);

    const second = await attempt(dir, "openai-agents-handoff", "r", "continue");
    expect(second.result, output(second)).toMatchObject({ status: "completed", attempt: 2 });
    expect(second.result!.value!.answer).toBe("Emailed ada@example.com (message m-1): order o-17 arrives tomorrow.");
    const l = expectOnce(dir);
    // The triage model was asked by the first process only; Support's turns by the second.
    expect(l.modelTurns).toEqual(["triage", 1, 2, 3, 4]);
    expect(new Set(l.modelPids.slice(1)).size).toBe(1);
    expect(l.modelPids[1]).not.toBe(l.modelPids[0]);
    await inspect(dir, async (engine) => {
      const run = await engine.get("r");
      expect(shape(run.attempts[1]!.reused)).toEqual(AFTER_HANDOFF);
    });
    await expectConversation(dir);
  });

  it("inside sendEmail after the handoff, with a query: settled by the query, the triage turn and the handoff handed back, the run completes", async () => {
    const dir = tmpDir("steplog-stack-crash-");
    const env = { STEPLOG_AGENT_QUERY: "1" };
    const first = await attempt(dir, "openai-agents-handoff", "r", "start", { ...env, STEPLOG_AGENT_CRASH: "in-effect" });
    expect(first.signal, output(first)).toBe("SIGKILL");
    const second = await attempt(dir, "openai-agents-handoff", "r", "continue", env);
    expect(second.result, output(second)).toMatchObject({ status: "completed", attempt: 2 });
    const l = expectOnce(dir);
    expect(l.modelTurns).toEqual(["triage", 1, 2, 3, 4]);
    expect(new Set(l.modelPids.slice(0, 4)).size).toBe(1);
    expect(l.modelPids[4]).not.toBe(l.modelPids[0]);
    await inspect(dir, async (engine) => {
      const run = await engine.get("r");
      expect(shape(run.attempts[1]!.reused)).toEqual([...AFTER_HANDOFF, "model#2", "tool:lookupOrder:", "model#3", "tool:saveDraft:", "model#4"]);
      const send = run.steps.filter((s) => s.name.startsWith("tool:sendEmail:"));
      expect(send[0]!.resolution).toMatchObject({ policy: "query", found: "done", attempt: 2 });
    });
    await expectConversation(dir);
  });
});
