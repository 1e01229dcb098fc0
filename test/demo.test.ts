// The demo a new user runs first (`npm run demo`): a real SIGKILL inside step two, then a
// continue. Runs examples/demo/main.mjs against dist/ (built by `pretest`), with its store
// and its call log in a temp dir so the repo's own .steplog is left alone.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createEngine } from "../src/entries/index.js";
import { sqliteStore } from "../src/entries/sqlite.js";
import { spawnNode } from "./helpers/child.js";
import { needRuntime, skipWithout } from "./helpers/runtimes.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

interface Call {
  step: string;
  attempt: number;
  pid: number;
  key: string;
  redrive: boolean;
}

function runDemo(env: Record<string, string>, runtime: "bun" | "deno" | undefined) {
  return spawnNode("examples/demo/main.mjs", [], { cwd: repoRoot, env, ...(runtime ? { runtime: needRuntime(runtime) } : {}) }).done;
}

describe("npm run demo", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  // Also under Bun and Deno (their built-in SQLite drivers): the step log is then read back here,
  // on Node.js, through better-sqlite3: one file format.
  for (const runtime of [undefined, "bun", "deno"] as const) {
    it.skipIf(runtime !== undefined && skipWithout(runtime))(
      `survives a real SIGKILL inside step two: plan is reused, draft and publish run in the continue${runtime ? ` (on ${runtime})` : ""}`,
      async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "steplog-demo-test-"));
        dirs.push(dir);
        const tally = path.join(dir, "calls.jsonl");
        const { code, signal, stdout, stderr } = await runDemo({ STEPLOG_DEMO_DIR: dir, STEPLOG_DEMO_TALLY: tally, NO_COLOR: "1" }, runtime);
        const output = `--- stdout\n${stdout}\n--- stderr\n${stderr}`;

        expect({ code, signal }, output).toEqual({ code: 0, signal: null });
        expect(stdout, output).not.toContain("\x1b["); // no colour codes when stdout is not a TTY
        expect(stdout).toContain(`store ${path.join(dir, "steplog.db")}`);
        const runId = /run (demo-\d+)/.exec(stdout)?.[1];
        expect(runId, output).toBeDefined();

        const [first = "", second = ""] = stdout.split(/^Attempt 2\b/m);
        expect(first, output).toMatch(/^\s*✓ plan\b/m);
        expect(first, output).toMatch(/killed by SIGKILL/);
        expect(first, output).not.toMatch(/✓ draft/);
        expect(second, output).toMatch(/^\s*↺ plan\s+\(reused from attempt 1\)/m);
        expect(second, output).not.toMatch(/✓ plan/);
        expect(second, output).toMatch(/^\s*✓ draft\b/m);
        expect(second, output).toMatch(/^\s*✓ publish\b/m);
        expect(second, output).toContain(`run ${runId}: completed in attempt 2`);
        expect(second, output).toContain('value: {"title":"Notes on durable steps","url":"https://blog.example/notes-on-durable-steps","words":255}');
        expect(stdout, output).toContain("All checks passed.");

        // The call log, written by the step functions themselves in both processes.
        const calls = fs
          .readFileSync(tally, "utf8")
          .split("\n")
          .filter(Boolean)
          .map((line) => JSON.parse(line) as Call);
        const of = (step: string) => calls.filter((c) => c.step === step);
        expect(of("plan"), output).toHaveLength(1);
        expect(of("plan")[0]).toMatchObject({ attempt: 1, redrive: false });
        const [cutOff, redriven] = of("draft");
        expect(of("draft")).toHaveLength(2);
        expect(cutOff).toMatchObject({ attempt: 1, key: `${runId}:draft`, redrive: false, pid: of("plan")[0]!.pid });
        expect(redriven).toMatchObject({ attempt: 2, key: `${runId}:draft`, redrive: true });
        expect(redriven!.pid).not.toBe(cutOff!.pid);
        expect(of("publish")).toHaveLength(1);
        expect(of("publish")[0]).toMatchObject({ attempt: 2, pid: redriven!.pid });

        // The step log agrees: one plan row, the cut-off draft row settled by a re-drive, then a new one.
        const engine = createEngine({ store: sqliteStore({ path: path.join(dir, "steplog.db") }) });
        try {
          const view = await engine.get(runId!);
          expect(view.status).toBe("completed");
          expect(view.attempts.map((a) => a.ending)).toEqual(["interrupted", "completed"]);
          expect(view.steps.map((s) => [s.key, s.attempt, s.status])).toEqual([
            ["plan", 1, "succeeded"],
            ["draft", 1, "failed"],
            ["draft", 2, "succeeded"],
            ["publish", 2, "succeeded"],
          ]);
          expect(view.steps.filter((s) => s.key === "plan").map((s) => s.calls)).toEqual([1]);
          expect(view.steps[1]!.resolution).toMatchObject({ policy: "redrive", found: "unknown" });
          expect(new Set(view.steps.filter((s) => s.key === "draft").map((s) => s.idempotencyKey))).toEqual(new Set([`${runId}:draft`]));
        } finally {
          await engine.close();
        }
      },
    );
  }
});
