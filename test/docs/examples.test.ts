// The runnable examples that docs/ points to, run as a user would (against dist/, built by
// `pretest`), each checked for what it says it shows.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { spawnNode } from "../helpers/child.js";
import { tmpDb, tmpDir } from "../helpers/tmp.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

describe("examples/schedules/every-second.mjs", () => {
  it("two copies on one store start each tick once between them", async () => {
    const db = tmpDb();
    // Four seconds hold at least three tick boundaries, so two ticks come due even when a loaded machine is slow to start polling.
    const run = () => spawnNode("examples/schedules/every-second.mjs", [db], { cwd: repoRoot, env: { RUN_FOR_MS: "4000" } }).done;
    const [a, b] = await Promise.all([run(), run()]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const lines = [...a.stdout.split("\n"), ...b.stdout.split("\n")].filter((l) => l.startsWith("every-second@"));
    const ids = lines.map((l) => l.split(" ")[0]);
    expect(ids.length).toBeGreaterThanOrEqual(2);
    expect(new Set(ids).size).toBe(ids.length);
    for (const line of lines) expect(line).toMatch(/^every-second@(\S+)Z completed "ran for \1\.000Z"$/);
    expect(a.stdout).toMatch(/next tick: every-second@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/);
  });
});

describe("examples/flow/per-user.mjs", () => {
  it("one attempt per user at a time, the urgent run first among those waiting, a webhook twice is one run", async () => {
    const db = tmpDb();
    const out = await spawnNode("examples/flow/per-user.mjs", [db], { cwd: repoRoot }).done;
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout.trim().split("\n");
    const started = lines.find((l) => l.startsWith("started: "))!;
    // One of ana's three ran at once, the other two waited for their turn; bo's ran beside it.
    const anaStatuses = [...started.matchAll(/(ana-\S+) (\w+)/g)].map((m) => m[2]);
    expect(anaStatuses.sort()).toEqual(["completed", "waiting", "waiting"]);
    expect(started).toContain("bo-1 completed");
    expect(started).toMatch(/cy-hook completed, cy-hook completed$/);
    const ana = lines.filter((l) => /^(start|end) +ana/.test(l)).map((l) => l.replace(/ +/g, " "));
    // Never two of ana's at once: each start follows the previous end.
    expect(ana.map((l) => l.split(" ")[0])).toEqual(["start", "end", "start", "end", "start", "end"]);
    for (let i = 0; i < ana.length; i += 2) expect(ana[i + 1]).toBe(ana[i]!.replace("start", "end"));
    // Among those that waited, the urgent one went first.
    const waited = ana.filter((l, i) => i >= 2 && l.startsWith("start")).map((l) => l.split(" ")[1]);
    if (waited.includes("ana-urgent")) expect(waited[0]).toBe("ana-urgent");
    expect(lines.filter((l) => l.startsWith("start cy"))).toHaveLength(1);
    expect(lines.at(-1)).toBe("all done");
  });
});

// docs/agents.md's whole program for each agent stack: the file is the doc's code, verbatim, and
// it runs as it is (`import "steplog"` resolves to this package by its own name, against dist/),
// offline, its model the SDK's test double (or a stubbed fetch). Run twice in a fresh directory,
// its default store there: one email, and the second start attaches to the finished run.
describe.each([
  ["ai-sdk", "call_"],
  ["openai-agents", "call_"],
  ["anthropic", "toolu_"],
  ["langchain", "call_"],
])("examples/agent/minimal/%s.mjs", (stack, callPrefix) => {
  const file = `examples/agent/minimal/${stack}.mjs`;

  it("is in docs/agents.md, verbatim", () => {
    const doc = fs.readFileSync(path.join(repoRoot, "docs/agents.md"), "utf8");
    const blocks = [...doc.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((code) => code.startsWith(`// ${file}:`));
    expect(blocks).toEqual([fs.readFileSync(path.join(repoRoot, file), "utf8")]);
  });

  it("runs offline against its stand-in model: the turns and tool calls are steps, one email, and a second run attaches", async () => {
    const dir = tmpDir(`steplog-minimal-${stack}-`);
    const answer = "completed Emailed ada@example.com: order o-17 arrives tomorrow.\n";
    const first = await spawnNode(path.join(repoRoot, file), [], { cwd: dir, env: { NO_COLOR: "1" } }).done;
    expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: "" });
    expect(first.stdout).toBe(`email to ada@example.com: Order o-17 arrives tomorrow. (key ticket-212:tool:sendEmail:${callPrefix}2)\n${answer}`);
    const second = await spawnNode(path.join(repoRoot, file), [], { cwd: dir, env: { NO_COLOR: "1" } }).done;
    expect({ code: second.code, stderr: second.stderr, stdout: second.stdout }).toEqual({ code: 0, stderr: "", stdout: answer });

    const engine = createEngine({ store: sqliteStore({ path: path.join(dir, ".steplog", "steplog.db") }) });
    try {
      const run = await engine.get("ticket-212");
      expect(run.steps.map((s) => [s.key, s.effect, s.status])).toEqual([
        ["model", "read", "succeeded"],
        [`tool:lookupOrder:${callPrefix}1`, "read", "succeeded"],
        ["model#2", "read", "succeeded"],
        [`tool:sendEmail:${callPrefix}2`, "irreversible", "succeeded"],
        ["model#3", "read", "succeeded"],
      ]);
      expect(run.attemptCount).toBe(1);
    } finally {
      await engine.close();
    }
  });
});

// docs/agents.md's whole program for MCP: the file is the doc's code, verbatim, and runs as it is
// against an MCP server (the SDK's McpServer) in its own process: two steps, one email sent under
// the step's idempotency key, and a second start that attaches to the finished run.
describe("examples/agent/minimal/mcp.mjs", () => {
  const file = "examples/agent/minimal/mcp.mjs";

  it("is in docs/agents.md, verbatim", () => {
    const doc = fs.readFileSync(path.join(repoRoot, "docs/agents.md"), "utf8");
    const blocks = [...doc.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((code) => code.startsWith(`// ${file}:`));
    expect(blocks).toEqual([fs.readFileSync(path.join(repoRoot, file), "utf8")]);
  });

  it("runs offline against its stand-in server: each call a step with the effect its annotations give, one email, and a second run attaches", async () => {
    const dir = tmpDir("steplog-minimal-mcp-");
    const answer = "completed Emailed ada@example.com: Order o-17 arrives tomorrow.\n";
    const first = await spawnNode(path.join(repoRoot, file), [], { cwd: dir, env: { NO_COLOR: "1" } }).done;
    expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: "" });
    expect(first.stdout).toBe(`email to ada@example.com: Order o-17 arrives tomorrow. (key ticket-212:tool:send_email:1)\n${answer}`);
    const second = await spawnNode(path.join(repoRoot, file), [], { cwd: dir, env: { NO_COLOR: "1" } }).done;
    expect({ code: second.code, stderr: second.stderr, stdout: second.stdout }).toEqual({ code: 0, stderr: "", stdout: answer });

    const engine = createEngine({ store: sqliteStore({ path: path.join(dir, ".steplog", "steplog.db") }) });
    try {
      const run = await engine.get("ticket-212");
      expect(run.steps.map((s) => [s.key, s.effect, s.status])).toEqual([
        ["tool:lookup_order:1", "read", "succeeded"],
        ["tool:send_email:1", "irreversible", "succeeded"],
      ]);
      expect(run.attemptCount).toBe(1);
    } finally {
      await engine.close();
    }
  });
});
