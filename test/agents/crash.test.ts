// Durable agents against real crashes: examples/agent/attempt.mjs runs one attempt of the example
// support agent (the Vercel AI SDK one, or the plain OpenAI-style loop) in a child process against
// dist/, and SIGKILLs itself inside sendEmail (the email left, its outcome not recorded) or right
// after sendEmail's outcome is durable. A new process continues. The world's ledgers count, across
// processes, every time the model was asked and every time a tool ran. The AI SDK agent runs on
// each major of the SDK (ai 7 through the resolve hook of ai-sdks.ts).
import { describe, expect, it } from "vitest";
import { tmpDir } from "../helpers/tmp.js";
import { aiSdkEnv } from "./ai-sdks.js";
import { attempt as attemptOf, BEFORE_SEND, inspect, ledgers, output, shape, type Outcome } from "./attempt-helpers.js";

describe.each([
  ["ai-sdk", "ai"],
  ["ai-sdk", "ai7"],
  ["plain", "ai"],
])("the %s agent (on %s), SIGKILLed around sendEmail", (agent, sdk) => {
  /** One attempt in a child process, on the SDK this block is about (checked: an ai 7 child says it loaded ai7). */
  async function attempt(dir: string, name: string, runId: string, mode: "start" | "continue", env: Record<string, string> = {}): Promise<Outcome> {
    const outcome = await attemptOf(dir, name, runId, mode, { ...env, ...aiSdkEnv(sdk) });
    if (sdk === "ai7" && agent === "ai-sdk") expect(outcome.stderr, output(outcome)).toContain("resolve-ai7: ai -> ai7");
    return outcome;
  }

  it("killed after the email left, before its outcome; no query: escalated, never sent twice, no recorded turn asked again", async () => {
    const dir = tmpDir("steplog-agent-crash-");
    const first = await attempt(dir, agent, "r", "start", { STEPLOG_AGENT_CRASH: "in-effect" });
    expect(first.signal, output(first)).toBe("SIGKILL");
    expect(ledgers(dir).outbox).toHaveLength(1);

    const second = await attempt(dir, agent, "r", "continue");
    expect(second.result, output(second)).toMatchObject({ status: "escalated", attempt: 2, error: { code: "RUN_ESCALATED" } });
    let l = ledgers(dir);
    // The model was asked for turns 1-3 by the first process only; the continue asked it nothing.
    expect(l.modelTurns).toEqual([1, 2, 3]);
    expect(new Set(l.modelPids).size).toBe(1);
    expect(l.tool("lookupOrder")).toHaveLength(1);
    expect(l.tool("saveDraft")).toHaveLength(1);
    expect(l.tool("sendEmail")).toHaveLength(1);
    expect(l.outbox).toHaveLength(1);

    const { sendKey, escalations } = await inspect(dir, async (engine) => {
      const run = await engine.get("r");
      expect(run.status).toBe("escalated");
      expect(shape(run.attempts[1]!.reused)).toEqual(BEFORE_SEND);
      const send = run.steps.filter((s) => s.name.startsWith("tool:sendEmail:"));
      expect(send.map((s) => [s.attempt, s.status, s.effect])).toEqual([[1, "escalated", "irreversible"]]);
      return { sendKey: send[0]!.key, escalations: await engine.escalations() };
    });
    expect(escalations.map((e) => [e.runId, e.step])).toEqual([["r", sendKey]]);
    expect(l.outbox[0].key).toBe(`r:${sendKey}`);

    // A person sees the email in the provider's log and says so; the continue goes on from there.
    await inspect(dir, (engine) => engine.resolve("r", sendKey, { value: { messageId: l.outbox[0].messageId, to: l.outbox[0].to } }));
    const third = await attempt(dir, agent, "r", "continue");
    expect(third.result, output(third)).toMatchObject({ status: "completed", attempt: 3 });
    expect(third.result!.value!.answer).toBe("Emailed ada@example.com (message m-1): order o-17 arrives tomorrow.");
    l = ledgers(dir);
    expect(l.modelTurns).toEqual([1, 2, 3, 4]);
    expect(l.tool("sendEmail")).toHaveLength(1);
    expect(l.outbox).toHaveLength(1);
  });

  it("killed after the email left, before its outcome; with a query: resolved by the query, not sent again", async () => {
    const dir = tmpDir("steplog-agent-crash-");
    const env = { STEPLOG_AGENT_QUERY: "1" };
    const first = await attempt(dir, agent, "r", "start", { ...env, STEPLOG_AGENT_CRASH: "in-effect" });
    expect(first.signal, output(first)).toBe("SIGKILL");
    const second = await attempt(dir, agent, "r", "continue", env);
    expect(second.result, output(second)).toMatchObject({ status: "completed", attempt: 2 });
    const l = ledgers(dir);
    expect(l.modelTurns).toEqual([1, 2, 3, 4]);
    expect(new Set(l.modelPids.slice(0, 3)).size).toBe(1);
    expect(l.modelPids[3]).not.toBe(l.modelPids[0]);
    expect(l.tool("lookupOrder")).toHaveLength(1);
    expect(l.tool("saveDraft")).toHaveLength(1);
    expect(l.tool("sendEmail")).toHaveLength(1);
    expect(l.outbox).toHaveLength(1);
    await inspect(dir, async (engine) => {
      const run = await engine.get("r");
      expect(shape(run.attempts[1]!.reused)).toEqual(BEFORE_SEND);
      const send = run.steps.filter((s) => s.name.startsWith("tool:sendEmail:"));
      expect(send.map((s) => [s.attempt, s.status])).toEqual([[1, "succeeded"]]);
      expect(send[0]!.resolution).toMatchObject({ policy: "query", found: "done", attempt: 2 });
      expect(send[0]!.value).toEqual({ messageId: "m-1", to: "ada@example.com" });
    });
  });

  it("killed right after sendEmail's outcome: the continue reuses every turn and call, and asks the model only for the last turn", async () => {
    const dir = tmpDir("steplog-agent-crash-");
    const first = await attempt(dir, agent, "r", "start", { STEPLOG_AGENT_CRASH: "after-outcome" });
    expect(first.signal, output(first)).toBe("SIGKILL");
    const second = await attempt(dir, agent, "r", "continue");
    expect(second.result, output(second)).toMatchObject({ status: "completed", attempt: 2 });
    const l = ledgers(dir);
    expect(l.modelTurns).toEqual([1, 2, 3, 4]);
    expect(l.modelPids[3]).not.toBe(l.modelPids[2]);
    expect(l.tool("lookupOrder")).toHaveLength(1);
    expect(l.tool("saveDraft")).toHaveLength(1);
    expect(l.tool("sendEmail")).toHaveLength(1);
    expect(l.outbox).toHaveLength(1);
    await inspect(dir, async (engine) => {
      const run = await engine.get("r");
      expect(shape(run.attempts[1]!.reused)).toEqual([...BEFORE_SEND, "tool:sendEmail:"]);
      expect(run.steps.map((s) => [s.attempt, s.status])).toEqual([
        [1, "succeeded"],
        [1, "succeeded"],
        [1, "succeeded"],
        [1, "succeeded"],
        [1, "succeeded"],
        [1, "succeeded"],
        [2, "succeeded"],
      ]);
      expect(run.usage.inputTokens).toBeGreaterThan(0);
      expect(run.usage.costUsd).toBeGreaterThan(0);
    });
  });
});
