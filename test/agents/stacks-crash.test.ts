// The agent stacks people use, against real crashes: the same support agent written with the
// OpenAI Agents SDK (run() over an Agent, the SDK's ScriptedModel), the Anthropic SDK (the
// messages.create tool-use loop, the real client over a stubbed fetch) and LangChain (tool(),
// bindTools and the tool-calling loop), each made durable by steplog/agents. One attempt runs
// in a child process (examples/agent/attempt.mjs, against dist/) and is SIGKILLed inside
// sendEmail (the email left, its outcome not recorded), right after sendEmail's outcome is
// durable, or at steplog's own fault point after a model turn answered (STEPLOG_FAULT). A new
// process continues. The world's ledgers count, across processes, every time the model was
// asked and every time a tool ran.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { tmpDir } from "../helpers/tmp.js";
import { spawnNode } from "../helpers/child.js";

const ATTEMPT = fileURLToPath(new URL("../../examples/agent/attempt.mjs", import.meta.url));

interface Outcome {
  signal: NodeJS.Signals | null;
  code: number | null;
  stdout: string;
  stderr: string;
  result?: { id: string; status: string; attempt: number; value?: { answer: string; turns: number }; error?: { code?: string; message: string } };
}

async function attempt(dir: string, agent: string, runId: string, mode: "start" | "continue", env: Record<string, string> = {}): Promise<Outcome> {
  const { code, signal, stdout, stderr, report } = await spawnNode(ATTEMPT, [agent, runId, mode], {
    env: { NO_COLOR: "1", STEPLOG_FAULT: "", STEPLOG_AGENT_DIR: dir, STEPLOG_AGENT_WORLD: path.join(dir, "world"), ...env },
  }).done;
  return { code, signal, stdout, stderr, result: report?.result };
}

const lines = (file: string): any[] =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

function ledgers(dir: string) {
  const world = path.join(dir, "world");
  const model = lines(path.join(world, "model-calls.jsonl"));
  const tools = lines(path.join(world, "tool-calls.jsonl"));
  return {
    modelTurns: model.map((c) => c.turn as number),
    modelPids: model.map((c) => c.pid as number),
    tool: (name: string) => tools.filter((t) => t.tool === name),
    outbox: lines(path.join(world, "outbox.jsonl")),
  };
}

async function inspect<T>(dir: string, fn: (engine: ReturnType<typeof createEngine>) => Promise<T>): Promise<T> {
  const engine = createEngine({ store: sqliteStore({ path: path.join(dir, "steplog.db") }) });
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

const BEFORE_SEND = ["model", "tool:lookupOrder:", "model#2", "tool:saveDraft:", "model#3"];
/** Step keys with the random call ids taken off, to compare with BEFORE_SEND. */
const shape = (keys: string[]) => keys.map((k) => (k.startsWith("tool:") ? k.replace(/[^:]+$/, "") : k));

const output = (o: Outcome) => `--- stdout\n${o.stdout}\n--- stderr\n${o.stderr}`;

/** Each tool ran once, and the outbox holds one email, sent under the step's idempotency key. */
function expectOnce(dir: string) {
  const l = ledgers(dir);
  expect(l.tool("lookupOrder")).toHaveLength(1);
  expect(l.tool("saveDraft")).toHaveLength(1);
  expect(l.tool("sendEmail")).toHaveLength(1);
  expect(l.outbox).toHaveLength(1);
  return l;
}

describe.each(["openai-agents", "anthropic", "langchain"])("the %s agent, SIGKILLed", (agent) => {
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
    await inspect(dir, (engine) => engine.resolve("r", sendKey, { value: { messageId: l.outbox[0].messageId, to: l.outbox[0].to } }));
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
      expect(send[0]!.value).toEqual({ messageId: "m-1", to: "ada@example.com" });
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
