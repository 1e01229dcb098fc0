// `npm run example:agent`: examples/agent/main.mjs end to end against dist/ (built by `pretest`),
// with its store and the agent's world in a temp dir so the repo's own .steplog is left alone;
// the AI SDK examples on each major of the SDK (ai 7 through the resolve hook of ai-sdks.ts).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { tmpDir } from "../helpers/tmp.js";
import { spawnNode } from "../helpers/child.js";
import { aiSdkEnv } from "./ai-sdks.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

function runExample(env: Record<string, string>) {
  return spawnNode("examples/agent/main.mjs", [], { cwd: repoRoot, env }).done;
}

/** An ai 7 child says (on stderr) that it loaded ai7 where the example imports "ai": the check that it ran on 7. */
function expectSdk(sdk: string, stderr: string, output: string) {
  if (sdk === "ai7") expect(stderr, output).toContain("resolve-ai7: ai -> ai7");
  else expect(stderr, output).not.toContain("resolve-ai7");
}

describe.each(["ai", "ai7"])("npm run example:agent (AI SDK from %s)", (sdk) => {
  it("runs the three crash stories to the end and passes its own checks", async () => {
    const dir = tmpDir("steplog-agent-example-");
    const { code, signal, stdout, stderr } = await runExample({ STEPLOG_AGENT_DIR: dir, NO_COLOR: "1", ...aiSdkEnv(sdk) });
    const output = `--- stdout\n${stdout}\n--- stderr\n${stderr}`;
    expect({ code, signal }, output).toEqual({ code: 0, signal: null });
    expectSdk(sdk, stderr, output);
    expect(stdout, output).not.toContain("\x1b[");
    expect(stdout, output).toContain(`store ${path.join(dir, "steplog.db")}`);
    expect(stdout.match(/killed by SIGKILL/g), output).toHaveLength(3);
    expect(stdout, output).toMatch(/→ query: done/);
    expect(stdout, output).toMatch(/escalated in attempt 2/);
    expect(stdout, output).toMatch(/engine\.resolve\(/);
    expect(stdout, output).toContain("All checks passed.");

    // The store agrees: three runs, completed, each email step with exactly one succeeded row.
    const engine = createEngine({ store: sqliteStore({ path: path.join(dir, "steplog.db") }) });
    try {
      const runs = await engine.list();
      expect(runs.map((r) => r.status).sort()).toEqual(["completed", "completed", "completed"]);
      for (const { id } of runs) {
        const view = await engine.get(id);
        const sends = view.steps.filter((s) => s.name.startsWith("tool:sendEmail:"));
        expect(
          sends.filter((s) => s.status === "succeeded"),
          id,
        ).toHaveLength(1);
        expect(
          view.steps.filter((s) => s.name === "model" && s.status === "succeeded"),
          id,
        ).toHaveLength(4);
      }
    } finally {
      await engine.close();
    }
    // Each world's outbox holds one email.
    for (const n of [1, 2, 3]) {
      const outbox = fs
        .readFileSync(path.join(dir, `world-${n}`, "outbox.jsonl"), "utf8")
        .trim()
        .split("\n");
      expect(outbox, `world-${n}`).toHaveLength(1);
    }
  });
});

describe.each(["ai", "ai7"])("node examples/agent/minimal/ai-sdk.mjs (AI SDK from %s)", (sdk) => {
  it("runs offline against the SDK's mock model; a second run attaches to the finished run", async () => {
    const dir = tmpDir("steplog-minimal-ai-sdk-");
    const answer = "completed Emailed ada@example.com: order o-17 arrives tomorrow.\n";
    const run = () => spawnNode(path.join(repoRoot, "examples/agent/minimal/ai-sdk.mjs"), [], { cwd: dir, env: { NO_COLOR: "1", ...aiSdkEnv(sdk) } }).done;
    const first = await run();
    const output = `--- stdout\n${first.stdout}\n--- stderr\n${first.stderr}`;
    expect(first.code, output).toBe(0);
    expectSdk(sdk, first.stderr, output);
    expect(first.stdout, output).toMatch(/^email to ada@example\.com: Order o-17 arrives tomorrow\. \(key ticket-212:tool:sendEmail:call_2\)\n/);
    expect(first.stdout.endsWith(answer), output).toBe(true);
    const second = await run();
    expect({ code: second.code, stdout: second.stdout }).toEqual({ code: 0, stdout: answer });
  });
});

describe.each([
  ["openai-agents.mjs", [], "openai-agents"],
  ["anthropic.mjs", [], "anthropic"],
  ["langchain.mjs", [], "langchain"],
  // `npm run example:agent -- mcp`: the MCP variant (mcp.mjs, its tools on mcp-server.mjs over stdio).
  ["main.mjs", ["mcp"], "mcp"],
])("node examples/agent/%s %j", (file, args, agent) => {
  it("tells its crash story to the end and passes its own checks: one email, each recorded turn and call made once", async () => {
    const dir = tmpDir(`steplog-${agent}-example-`);
    const { code, signal, stdout, stderr } = await spawnNode(`examples/agent/${file}`, args, { cwd: repoRoot, env: { STEPLOG_AGENT_DIR: dir, NO_COLOR: "1" } })
      .done;
    const output = `--- stdout\n${stdout}\n--- stderr\n${stderr}`;
    expect({ code, signal }, output).toEqual({ code: 0, signal: null });
    expect(stdout.match(/killed by SIGKILL/g), output).toHaveLength(2);
    expect(stdout, output).toMatch(/→ query: done/);
    expect(stdout, output).toMatch(/escalated in attempt 2/);
    expect(
      stdout.match(/model asked 4× \(turns 1, 2, 3, 4\); tools ran: lookupOrder 1×, saveDraft 1×, sendEmail 1×; emails in the outbox: 1/g),
      output,
    ).toHaveLength(2);
    expect(stdout, output).toContain("All checks passed.");
    for (const n of [1, 2]) {
      const outbox = fs
        .readFileSync(path.join(dir, `${agent}-world-${n}`, "outbox.jsonl"), "utf8")
        .trim()
        .split("\n");
      expect(outbox, `world ${n}`).toHaveLength(1);
    }
  });
});
