// The OpenAI Agents SDK's own MCP servers (MCPServerStdio), given to an agent through durableMcp:
// the SDK calls the server's tools inside its run, and each call is a durable step (its
// idempotency key in the request's _meta), against a real MCP server built with the SDK
// (fixtures/mcp-server.mjs), in processes SIGKILLed inside a call (fixtures/openai-mcp-attempt.mjs,
// against dist/). The server's ledger counts every call it received, across processes.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { spawnNode } from "../helpers/child.js";
import { tmpDir } from "../helpers/tmp.js";
// @ts-expect-error -- a plain .mjs fixture (it is also run as a process of its own)
import { ledger, outbox } from "./fixtures/mcp-server.mjs";

const fixture = fileURLToPath(new URL("./fixtures/openai-mcp-attempt.mjs", import.meta.url));

function setUp() {
  const dir = tmpDir("steplog-openai-mcp-");
  const world = path.join(dir, "world");
  const attempt = async (mode: "start" | "continue", env: Record<string, string> = {}) => {
    const { code, signal, stdout, stderr, report } = await spawnNode(fixture, ["r", mode], { env: { MCP_DIR: dir, STEPLOG_FAULT: "", NO_COLOR: "1", ...env } })
      .done;
    return { code, signal, output: `--- stdout\n${stdout}\n--- stderr\n${stderr}`, result: report?.result };
  };
  const calls = (tool: string) => (ledger(world) as Array<{ tool: string; key: string | null }>).filter((c) => c.tool === tool);
  const emails = () => outbox(world) as unknown[];
  const steps = async () => {
    const engine = createEngine({ store: sqliteStore({ path: path.join(dir, "steplog.db") }) });
    try {
      return (await engine.get("r")).steps.map((s) => [s.key, s.effect, s.status]);
    } finally {
      await engine.close();
    }
  };
  return { attempt, calls, emails, steps };
}

describe("the OpenAI Agents SDK's MCPServerStdio through durableMcp", () => {
  it("each call the SDK makes is a step with its effect from the annotations and steplog's key in _meta", async () => {
    const { attempt, calls, emails, steps } = setUp();
    const first = await attempt("start");
    expect(first.result, first.output).toMatchObject({ status: "completed", value: expect.stringContaining("m-1") });
    expect(calls("send_email").map((c) => c.key)).toEqual(["r:tool:send_email:1"]);
    expect(calls("save_draft").map((c) => c.key)).toEqual(["r:tool:save_draft:1"]);
    expect(emails()).toHaveLength(1);
    expect(await steps()).toEqual([
      ["model", "read", "succeeded"],
      ["tool:lookup_order:1", "read", "succeeded"],
      ["model#2", "read", "succeeded"],
      ["tool:save_draft:1", "idempotent", "succeeded"],
      ["model#3", "read", "succeeded"],
      ["tool:send_email:1", "irreversible", "succeeded"],
      ["model#4", "read", "succeeded"],
    ]);
  });

  it("SIGKILLed inside send_email: the continue escalates it (no query), never sending it twice; the calls before are handed back", async () => {
    const { attempt, calls, emails, steps } = setUp();
    const first = await attempt("start", { MCP_SERVER_DIES_IN: "parent:send_email" });
    expect(first.signal, first.output).toBe("SIGKILL");
    expect(emails()).toHaveLength(1);
    const second = await attempt("continue");
    expect(second.result, second.output).toMatchObject({ status: "escalated", error: { code: "RUN_ESCALATED", step: "tool:send_email:1" } });
    expect(calls("send_email")).toHaveLength(1);
    expect(calls("lookup_order")).toHaveLength(1);
    expect(calls("save_draft")).toHaveLength(1);
    expect((await steps()).at(-1)).toEqual(["tool:send_email:1", "irreversible", "escalated"]);
  });

  it("SIGKILLed inside send_email, with a query: settled by asking the server by key, and the agent goes on", async () => {
    const { attempt, calls, emails } = setUp();
    const first = await attempt("start", { MCP_SERVER_DIES_IN: "parent:send_email", MCP_QUERY: "1" });
    expect(first.signal, first.output).toBe("SIGKILL");
    const second = await attempt("continue", { MCP_QUERY: "1" });
    expect(second.result, second.output).toMatchObject({ status: "completed", value: expect.stringContaining("m-1") });
    expect(calls("send_email")).toHaveLength(1);
    expect(calls("find_email")).toHaveLength(1);
    expect(emails()).toHaveLength(1);
  });

  it("SIGKILLed inside save_draft (idempotent): sent again with the same key", async () => {
    const { attempt, calls, emails } = setUp();
    const first = await attempt("start", { MCP_SERVER_DIES_IN: "parent:save_draft" });
    expect(first.signal, first.output).toBe("SIGKILL");
    const second = await attempt("continue");
    expect(second.result, second.output).toMatchObject({ status: "completed" });
    expect(calls("save_draft").map((c) => c.key)).toEqual(["r:tool:save_draft:1", "r:tool:save_draft:1"]);
    expect(calls("lookup_order")).toHaveLength(1);
    expect(emails()).toHaveLength(1);
  });

  it("the server dies inside send_email: its answer lost, the attempt fails STEP_OUTCOME_UNKNOWN, and the continue escalates it", async () => {
    const { attempt, calls, emails } = setUp();
    const first = await attempt("start", { MCP_SERVER_DIES_IN: "send_email" });
    expect(first.result, first.output).toMatchObject({ status: "failed", error: { code: "STEP_OUTCOME_UNKNOWN", step: "tool:send_email:1" } });
    const second = await attempt("continue");
    expect(second.result, second.output).toMatchObject({ status: "escalated" });
    expect(calls("send_email")).toHaveLength(1);
    expect(emails()).toHaveLength(1);
  });
});
