// Approved tool calls against real crashes, on every stack: the example support agent
// (examples/agent/attempt.mjs, against dist/) with STEPLOG_AGENT_APPROVAL=1, where sendEmail needs a
// person's approval the stack's own way (the AI SDK's and the OpenAI Agents SDK's needsApproval
// flag; durableTools', durableLangChainTools' and durableMcp's `approval` elsewhere). The run
// parks before the call; a continue without the approval parks again and the tool never runs;
// once approved, the attempt is SIGKILLed inside sendEmail (the email left, its outcome not
// recorded) or right after its outcome is durable, and a new process continues: the approved
// call is never made twice, and the step's input is the call's arguments.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { tmpDir } from "../helpers/tmp.js";
import { aiSdkEnv } from "./ai-sdks.js";
import { attempt as attemptOf, BEFORE_SEND, inspect, ledgers, output, shape, type Outcome } from "./attempt-helpers.js";

const APPROVAL = { STEPLOG_AGENT_APPROVAL: "1" };

describe.each([
  ["ai-sdk", "ai"],
  ["ai-sdk", "ai7"],
  ["plain", "ai"],
  ["openai-agents", "ai"],
  ["anthropic", "ai"],
  ["langchain", "ai"],
  ["mcp", "ai"],
])("the %s agent (%s) with an approval on sendEmail, SIGKILLed", (agent, sdk) => {
  async function attempt(dir: string, mode: "start" | "continue", env: Record<string, string> = {}): Promise<Outcome> {
    const outcome = await attemptOf(dir, agent, "r", mode, { ...APPROVAL, ...env, ...aiSdkEnv(agent === "ai-sdk" ? sdk : "ai") });
    if (sdk === "ai7") expect(outcome.stderr, output(outcome)).toContain("resolve-ai7: ai -> ai7");
    return outcome;
  }

  /** Start: the run parks before sendEmail; a continue without the approval parks again; sendEmail never ran. Returns its step key. */
  async function parkedTwice(dir: string): Promise<string> {
    const first = await attempt(dir, "start");
    expect(first.result, output(first)).toMatchObject({ status: "waiting", waitingFor: { kind: "approval" } });
    const key = (first.result as unknown as { waitingFor: { step: string } }).waitingFor.step;
    expect(key).toMatch(/^tool:sendEmail:/);
    // Not approved: even an attempt set to crash inside sendEmail does not reach it.
    const again = await attempt(dir, "continue", { STEPLOG_AGENT_CRASH: "in-effect" });
    expect(again.signal, output(again)).toBe(null);
    expect(again.result, output(again)).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: key } });
    const l = ledgers(dir);
    expect(l.tool("sendEmail")).toHaveLength(0);
    expect(l.outbox).toHaveLength(0);
    expect(l.modelTurns).toEqual([1, 2, 3]);
    await inspect(dir, (engine) => engine.approve("r", key, { by: "ana" }));
    return key;
  }

  /** The approved call ran once, under its step's key, and its step records the call's arguments. */
  async function expectSentOnce(dir: string, key: string, status: string) {
    const l = ledgers(dir);
    expect(l.tool("sendEmail")).toHaveLength(1);
    expect(l.outbox).toHaveLength(1);
    expect(l.outbox[0].key).toBe(`r:${key}`);
    expect(l.tool("lookupOrder")).toHaveLength(1);
    expect(l.tool("saveDraft")).toHaveLength(1);
    await inspect(dir, async (engine) => {
      const run = await engine.get("r");
      const send = run.steps.filter((s) => s.key === key);
      expect(send.map((s) => s.status)).toEqual([status]);
      // The draft's id, as the world makes it from saveDraft's idempotency key.
      const draftId = `d-${createHash("sha256").update(l.tool("saveDraft")[0].key).digest("hex").slice(0, 6)}`;
      expect(send[0]!.input).toEqual({ draftId });
      expect(shape(run.steps.slice(0, 5).map((s) => s.key))).toEqual(BEFORE_SEND);
    });
  }

  it("approved, then killed inside sendEmail after the email left: escalated, never sent twice", async () => {
    const dir = tmpDir("steplog-approval-crash-");
    const key = await parkedTwice(dir);
    const killed = await attempt(dir, "continue", { STEPLOG_AGENT_CRASH: "in-effect" });
    expect(killed.signal, output(killed)).toBe("SIGKILL");
    expect(ledgers(dir).outbox).toHaveLength(1);
    const after = await attempt(dir, "continue");
    expect(after.result, output(after)).toMatchObject({ status: "escalated", error: { code: "RUN_ESCALATED" } });
    await expectSentOnce(dir, key, "escalated");
  });

  it("approved, then killed right after sendEmail's outcome is durable: the continue completes, sent once", async () => {
    const dir = tmpDir("steplog-approval-crash-");
    const key = await parkedTwice(dir);
    const killed = await attempt(dir, "continue", { STEPLOG_AGENT_CRASH: "after-outcome" });
    expect(killed.signal, output(killed)).toBe("SIGKILL");
    const after = await attempt(dir, "continue");
    expect(after.result, output(after)).toMatchObject({ status: "completed" });
    expect(after.result!.value!.answer).toBe("Emailed ada@example.com (message m-1): order o-17 arrives tomorrow.");
    await expectSentOnce(dir, key, "succeeded");
  });
});
