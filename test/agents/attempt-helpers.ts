// What the agent crash tests share (crash.test.ts, stacks-crash.test.ts): one attempt of an
// example agent in a child process (examples/agent/attempt.mjs, against dist/), the world's
// ledgers of model turns, tool calls and sent emails, and a look at the store afterwards.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createEngine } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { spawnNode } from "../helpers/child.js";

const ATTEMPT = fileURLToPath(new URL("../../examples/agent/attempt.mjs", import.meta.url));

export interface Outcome {
  signal: NodeJS.Signals | null;
  code: number | null;
  stdout: string;
  stderr: string;
  result?: { id: string; status: string; attempt: number; value?: { answer: string; turns: number }; error?: { code?: string; message: string } };
}

export async function attempt(dir: string, agent: string, runId: string, mode: "start" | "continue", env: Record<string, string> = {}): Promise<Outcome> {
  const { code, signal, stdout, stderr, report } = await spawnNode(ATTEMPT, [agent, runId, mode], {
    env: { NO_COLOR: "1", STEPLOG_FAULT: "", STEPLOG_AGENT_DIR: dir, STEPLOG_AGENT_WORLD: path.join(dir, "world"), ...env },
  }).done;
  return { code, signal, stdout, stderr, result: report?.result };
}

export const lines = (file: string): any[] =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

export function ledgers(dir: string) {
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

export async function inspect<T>(dir: string, fn: (engine: ReturnType<typeof createEngine>) => Promise<T>): Promise<T> {
  const engine = createEngine({ store: sqliteStore({ path: path.join(dir, "steplog.db") }) });
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

export const BEFORE_SEND = ["model", "tool:lookupOrder:", "model#2", "tool:saveDraft:", "model#3"];
/** Step keys with the random call ids taken off, to compare with BEFORE_SEND. */
export const shape = (keys: string[]) => keys.map((k) => (k.startsWith("tool:") ? k.replace(/[^:]+$/, "") : k));

export const output = (o: Outcome) => `--- stdout\n${o.stdout}\n--- stderr\n${o.stderr}`;
