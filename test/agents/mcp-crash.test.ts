// durableMcp against real crashes: a workflow process (fixtures/mcp-attempt.mjs, against dist/)
// calls a real MCP server (fixtures/mcp-server.mjs, built with @modelcontextprotocol/sdk) over
// stdio (the server is the workflow process's child) and over Streamable HTTP on 127.0.0.1 (a
// server process of its own), and is SIGKILLed inside one tool call: the server has done the
// call's effect and reported it, its answer has not arrived. A new process continues. The
// server's ledger counts, across processes, every call it received and its idempotency key.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { spawnNode } from "../helpers/child.js";
import { tmpDir } from "../helpers/tmp.js";
// @ts-expect-error -- a plain .mjs fixture (it is also run as a process of its own)
import { ledger, outbox } from "./fixtures/mcp-server.mjs";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

interface Call {
  tool: string;
  key: string;
  pid: number;
}

/** A store and a world, and (for http) a server process on a free port of 127.0.0.1 serving that world. */
async function setUp(transport: "stdio" | "http") {
  const dir = tmpDir("steplog-mcp-crash-");
  const env: Record<string, string> = { MCP_DIR: dir, STEPLOG_FAULT: "", NO_COLOR: "1" };
  if (transport === "http") {
    const server = spawnNode(fixture("mcp-server.mjs"), ["http", path.join(dir, "world")]);
    await server.ready;
    const { port } = JSON.parse(server.output().split("\n")[0]!) as { port: number };
    env.MCP_URL = `http://127.0.0.1:${port}/mcp`;
  }
  const attempt = async (mode: "start" | "continue", extra: Record<string, string> = {}) => {
    const { code, signal, stdout, stderr, report } = await spawnNode(fixture("mcp-attempt.mjs"), [transport, "r", mode], { env: { ...env, ...extra } }).done;
    return { code, signal, output: `--- stdout\n${stdout}\n--- stderr\n${stderr}`, result: report?.result, refused: report?.refused };
  };
  const calls = (tool: string): Call[] => (ledger(path.join(dir, "world")) as Call[]).filter((c) => c.tool === tool);
  const emails = () => outbox(path.join(dir, "world")) as Array<{ messageId: string; to: string; key: string }>;
  const inspect = async <T>(fn: (engine: ReturnType<typeof createEngine>) => Promise<T>): Promise<T> => {
    const engine = createEngine({ store: sqliteStore({ path: path.join(dir, "steplog.db") }) });
    try {
      return await fn(engine);
    } finally {
      await engine.close();
    }
  };
  return { attempt, calls, emails, inspect };
}

const KEYS = { lookup: "r:tool:lookup_order:1", draft: "r:tool:save_draft:1", send: "r:tool:send_email:1" };

describe.each(["stdio", "http"] as const)("durableMcp over %s, the workflow process SIGKILLed inside a tool call", (transport) => {
  it("inside send_email (destructive), no query: escalated, never sent twice; the calls before it handed back", async () => {
    const { attempt, calls, emails, inspect } = await setUp(transport);
    const first = await attempt("start", { MCP_CRASH_IN: "send_email" });
    expect(first.signal, first.output).toBe("SIGKILL");
    expect(emails()).toHaveLength(1);

    const second = await attempt("continue");
    expect(second.result, second.output).toMatchObject({ status: "escalated", attempt: 2, error: { code: "RUN_ESCALATED" } });
    expect(calls("send_email").map((c) => c.key)).toEqual([KEYS.send]);
    expect(calls("lookup_order")).toHaveLength(1);
    expect(calls("save_draft")).toHaveLength(1);
    await inspect(async (engine) => {
      const run = await engine.get("r");
      expect(run.attempts[1]!.reused).toEqual(["tool:lookup_order:1", "tool:save_draft:1"]);
      expect(run.steps.filter((s) => s.key === "tool:send_email:1").map((s) => [s.attempt, s.status, s.effect])).toEqual([[1, "escalated", "irreversible"]]);
      expect((await engine.escalations()).map((e) => [e.runId, e.step])).toEqual([["r", "tool:send_email:1"]]);
      // A person finds the email in the server's outbox and says so.
      const sent = emails()[0]!;
      const value = { messageId: sent.messageId, to: sent.to };
      await engine.resolve("r", "tool:send_email:1", { value: { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value } });
    });

    const third = await attempt("continue");
    expect(third.result, third.output).toMatchObject({ status: "completed", attempt: 3, value: { draftId: "d-o-17", messageId: "m-1" } });
    expect(calls("send_email")).toHaveLength(1);
    expect(calls("lookup_order")).toHaveLength(1);
    expect(calls("save_draft")).toHaveLength(1);
    expect(emails()).toHaveLength(1);
  });

  it("inside send_email, with a query: settled by asking the server by idempotency key, not sent again", async () => {
    const { attempt, calls, emails, inspect } = await setUp(transport);
    const first = await attempt("start", { MCP_CRASH_IN: "send_email", MCP_QUERY: "1" });
    expect(first.signal, first.output).toBe("SIGKILL");
    const second = await attempt("continue", { MCP_QUERY: "1" });
    expect(second.result, second.output).toMatchObject({ status: "completed", attempt: 2, value: { draftId: "d-o-17", messageId: "m-1" } });
    expect(calls("send_email").map((c) => c.key)).toEqual([KEYS.send]);
    expect(calls("find_email")).toHaveLength(1);
    expect(emails()).toHaveLength(1);
    await inspect(async (engine) => {
      const send = (await engine.get("r")).steps.filter((s) => s.key === "tool:send_email:1");
      expect(send.map((s) => [s.attempt, s.status])).toEqual([[1, "succeeded"]]);
      expect(send[0]!.resolution).toMatchObject({ policy: "query", found: "done", attempt: 2 });
    });
  });

  it("inside save_draft (idempotent): sent again with the same idempotency key; lookup_order handed back", async () => {
    const { attempt, calls, emails, inspect } = await setUp(transport);
    const first = await attempt("start", { MCP_CRASH_IN: "save_draft" });
    expect(first.signal, first.output).toBe("SIGKILL");
    expect(calls("send_email")).toHaveLength(0);
    const second = await attempt("continue");
    expect(second.result, second.output).toMatchObject({ status: "completed", attempt: 2, value: { draftId: "d-o-17", messageId: "m-1" } });
    const drafts = calls("save_draft");
    expect(drafts.map((c) => c.key)).toEqual([KEYS.draft, KEYS.draft]);
    expect(calls("lookup_order").map((c) => c.key)).toEqual([KEYS.lookup]);
    expect(calls("send_email").map((c) => c.key)).toEqual([KEYS.send]);
    expect(emails()).toHaveLength(1);
    await inspect(async (engine) => {
      const run = await engine.get("r");
      expect(run.attempts[1]!.reused).toEqual(["tool:lookup_order:1"]);
      const draft = run.steps.filter((s) => s.key === "tool:save_draft:1");
      expect(draft.map((s) => [s.attempt, s.status, s.effect])).toEqual([
        [1, "failed", "idempotent"],
        [2, "succeeded", "idempotent"],
      ]);
      expect(draft[0]!.resolution).toMatchObject({ policy: "redrive", found: "unknown", attempt: 2 });
    });
  });

  it("inside lookup_order (read): asked again; nothing after it was sent before", async () => {
    const { attempt, calls, emails, inspect } = await setUp(transport);
    const first = await attempt("start", { MCP_CRASH_IN: "lookup_order" });
    expect(first.signal, first.output).toBe("SIGKILL");
    const second = await attempt("continue");
    expect(second.result, second.output).toMatchObject({ status: "completed", attempt: 2, value: { draftId: "d-o-17", messageId: "m-1" } });
    const lookups = calls("lookup_order");
    expect(lookups.map((c) => c.key)).toEqual([KEYS.lookup, KEYS.lookup]);
    expect(calls("save_draft")).toHaveLength(1);
    expect(calls("send_email")).toHaveLength(1);
    expect(emails()).toHaveLength(1);
    await inspect(async (engine) => {
      const run = await engine.get("r");
      expect(run.steps.filter((s) => s.key === "tool:lookup_order:1").map((s) => [s.attempt, s.status, s.effect])).toEqual([
        [1, "failed", "read"],
        [2, "succeeded", "read"],
      ]);
    });
  });
});
