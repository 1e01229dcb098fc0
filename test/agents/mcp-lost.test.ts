// durableMcp when the MCP server dies inside a call (its effect done, its answer never sent): the
// workflow process lives and its client sees the connection lost. MCP cannot tell "never arrived"
// from "done, reply lost", so a destructive tool's call is an unknown outcome (left intended,
// STEP_OUTCOME_UNKNOWN), settled by its policy on the next continue: never sent twice. Over stdio
// (the server is the workflow process's child) and Streamable HTTP on 127.0.0.1.
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

function setUp(transport: "stdio" | "http") {
  const dir = tmpDir("steplog-mcp-lost-");
  const world = path.join(dir, "world");
  /** http: a server process of its own (dying inside `diesIn`), its URL for the attempt. */
  const server = async (diesIn: string): Promise<Record<string, string>> => {
    if (transport === "stdio") return { MCP_SERVER_DIES_IN: diesIn };
    const child = spawnNode(fixture("mcp-server.mjs"), ["http", world, diesIn]);
    await child.ready;
    const { port } = JSON.parse(child.output().split("\n")[0]!) as { port: number };
    return { MCP_URL: `http://127.0.0.1:${port}/mcp` };
  };
  const attempt = async (mode: "start" | "continue", diesIn = "", extra: Record<string, string> = {}) => {
    const env = { MCP_DIR: dir, STEPLOG_FAULT: "", NO_COLOR: "1", ...(await server(diesIn)), ...extra };
    const { code, signal, stdout, stderr, report } = await spawnNode(fixture("mcp-attempt.mjs"), [transport, "r", mode], { env }).done;
    return { code, signal, output: `--- stdout\n${stdout}\n--- stderr\n${stderr}`, result: report?.result };
  };
  const sends = () => (ledger(world) as Array<{ tool: string }>).filter((c) => c.tool === "send_email");
  const emails = () => outbox(world) as unknown[];
  const inspect = async <T>(fn: (engine: ReturnType<typeof createEngine>) => Promise<T>): Promise<T> => {
    const engine = createEngine({ store: sqliteStore({ path: path.join(dir, "steplog.db") }) });
    try {
      return await fn(engine);
    } finally {
      await engine.close();
    }
  };
  return { attempt, sends, emails, inspect };
}

describe.each(["stdio", "http"] as const)("durableMcp over %s, the server dies inside send_email (destructive)", (transport) => {
  it("no query: the attempt fails STEP_OUTCOME_UNKNOWN with the step intended; a continue escalates it, never sending it again", async () => {
    const { attempt, sends, emails, inspect } = setUp(transport);
    const first = await attempt("start", "send_email");
    expect(first.result, first.output).toMatchObject({ status: "failed", error: { code: "STEP_OUTCOME_UNKNOWN", step: "tool:send_email:1" } });
    expect(emails()).toHaveLength(1);
    await inspect(async (engine) => {
      const steps = (await engine.get("r")).steps;
      expect(steps.map((s) => [s.key, s.status])).toEqual([
        ["tool:lookup_order:1", "succeeded"],
        ["tool:save_draft:1", "succeeded"],
        ["tool:send_email:1", "intended"],
      ]);
    });
    const second = await attempt("continue");
    expect(second.result, second.output).toMatchObject({ status: "escalated", error: { code: "RUN_ESCALATED", step: "tool:send_email:1" } });
    expect(sends()).toHaveLength(1);
    expect(emails()).toHaveLength(1);
  });

  it("with a query: a continue asks the server by idempotency key and hands back the email sent", async () => {
    const { attempt, sends, emails } = setUp(transport);
    const first = await attempt("start", "send_email", { MCP_QUERY: "1" });
    expect(first.result, first.output).toMatchObject({ status: "failed", error: { code: "STEP_OUTCOME_UNKNOWN" } });
    const second = await attempt("continue", "", { MCP_QUERY: "1" });
    expect(second.result, second.output).toMatchObject({ status: "completed", value: { draftId: "d-o-17", messageId: "m-1" } });
    expect(sends()).toHaveLength(1);
    expect(emails()).toHaveLength(1);
  });
});
