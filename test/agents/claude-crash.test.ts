// durableClaudeQuery against real crashes, with the real Claude Agent SDK and its Claude Code
// binary (the linux-x64 platform package, a dev dependency) against a fake Messages API on
// 127.0.0.1 (fixtures/fake-anthropic.mjs, in this process). A workflow process
// (fixtures/claude-attempt.mjs running examples/claude/stages.mjs: planner, builder, reviewer)
// is SIGKILLed mid-session, inside a Bash tool's effect, and between stages; a new process
// continues. The fake's model asks again for a call whose result it has not seen, as a model
// does, with the same input; the Bash command appends a line to outbox.txt, its effect.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { spawnNode } from "../helpers/child.js";
import { tmpDir } from "../helpers/tmp.js";
import { until } from "../helpers/until.js";
// @ts-expect-error -- a plain .mjs fixture
import { promptOf, startFakeAnthropic, text, toolUse } from "./fixtures/fake-anthropic.mjs";

const fixture = fileURLToPath(new URL("./fixtures/claude-attempt.mjs", import.meta.url));
const binary = fileURLToPath(new URL(`../../node_modules/@anthropic-ai/claude-agent-sdk-${process.platform}-${process.arch}/claude`, import.meta.url));

type Stage = "planner" | "builder" | "reviewer";
interface Request {
  path: string;
  headers: Record<string, string>;
  body: { messages?: Array<{ role: string; content: unknown }>; tools?: unknown[] };
  stage?: Stage;
  attempt?: number;
}

/** True when the conversation's last tool result is a refusal (a hook that got no answer). */
function toolRefused(body: Request["body"]): boolean {
  const last = body.messages?.at(-1);
  return (
    Array.isArray(last?.content) &&
    (last.content as Array<Record<string, any>>).some(
      (b) => b.type === "tool_result" && b.is_error === true && !JSON.stringify(b.content).includes("already ran"),
    )
  );
}

const stageOf = (prompt: string): Stage => (/Plan this change/.test(prompt) ? "planner" : /Carry out this plan/.test(prompt) ? "builder" : "reviewer");

/**
 * The names of the tools whose calls have a result in the conversation: a refusal by a hook
 * or an interrupted call is no result (the model asks again), steplog's "already ran" is one.
 */
function answered(body: Request["body"]): string[] {
  const names = new Map<string, string>();
  const done: string[] = [];
  for (const message of body.messages ?? []) {
    if (!Array.isArray(message.content)) continue;
    for (const block of message.content as Array<Record<string, any>>) {
      if (block.type === "tool_use") names.set(block.id, block.name);
      const refused = block.is_error === true && !JSON.stringify(block.content).includes("already ran");
      if (block.type === "tool_result" && names.has(block.tool_use_id) && !refused) done.push(names.get(block.tool_use_id)!);
    }
  }
  return done;
}

/**
 * A store, a checkout, a fake model that plays the three stages, and a way to run attempts.
 * `onRequest` sees each main-loop request (with the running attempt's child) before it is answered.
 */
async function setUp(
  options: {
    killInBash?: boolean;
    onRequest?: (request: Request, kill: () => void) => void | Promise<void>;
    /** An answer of the test's own instead of the model's script. */
    override?: (request: Request) => { content: unknown[] } | undefined;
  } = {},
) {
  const dir = tmpDir("steplog-claude-crash-");
  fs.mkdirSync(path.join(dir, "work"));
  fs.mkdirSync(path.join(dir, "home"));
  fs.writeFileSync(path.join(dir, "work", "README.md"), "# demo\n");
  let child: { pid: number; kill: () => void } | undefined;
  let firstPid: number | undefined;
  let attemptNumber = 0;
  const bash = () => `echo built >> outbox.txt${options.killInBash ? `; kill -9 ${firstPid}; sleep 2` : ""}`;
  const fake = await startFakeAnthropic(async (body: Request["body"], request: Request) => {
    const stage = stageOf(promptOf(body));
    request.stage = stage;
    request.attempt = attemptNumber;
    await options.onRequest?.(request, () => child?.kill());
    const own = options.override?.(request);
    if (own) return own;
    const done = answered(body);
    if (stage === "planner") {
      if (!done.includes("Read")) return { content: [toolUse("Read", { file_path: path.join(dir, "work", "README.md") })] };
      return { content: [text("PLAN: 1. write hello.txt 2. run the build")] };
    }
    if (stage === "builder") {
      if (!done.includes("Write")) return { content: [toolUse("Write", { file_path: path.join(dir, "work", "hello.txt"), content: "hello\n" })] };
      if (!done.includes("Bash")) return { content: [text("Now the build."), toolUse("Bash", { command: bash(), description: "build" })] };
      return { content: [text("BUILT: wrote hello.txt and ran the build")] };
    }
    return { content: [text("APPROVED")] };
  });
  const attempt = async (mode: "start" | "continue", env: Record<string, string> = {}) => {
    attemptNumber += 1;
    const run = spawnNode(fixture, [mode], { env: { CLAUDE_DIR: dir, CLAUDE_URL: fake.url, STEPLOG_FAULT: "", NO_COLOR: "1", ...env } });
    const pid = run.child.pid!;
    firstPid ??= pid;
    child = { pid, kill: () => run.child.kill("SIGKILL") };
    const { code, signal, stdout, stderr, report } = await run.done;
    return { code, signal, pid, output: `--- stdout\n${stdout}\n--- stderr\n${stderr}`, result: report?.result, refused: report?.refused };
  };
  const main = () => (fake.requests as Request[]).filter((r) => r.path === "/v1/messages" && Array.isArray(r.body.tools) && r.body.tools.length > 0);
  const sessionOf = (r: Request) => r.headers["x-claude-code-session-id"];
  const outbox = () => (fs.existsSync(path.join(dir, "work", "outbox.txt")) ? fs.readFileSync(path.join(dir, "work", "outbox.txt"), "utf8") : "");
  const inspect = async <T>(fn: (engine: ReturnType<typeof createEngine>) => Promise<T>): Promise<T> => {
    const engine = createEngine({ store: sqliteStore({ path: path.join(dir, "steplog.db") }) });
    try {
      return await fn(engine);
    } finally {
      await engine.close();
    }
  };
  const projects = path.join(dir, "home", ".claude", "projects");
  /** The text of a session's transcript (~/.claude/projects/<cwd>/<session id>.jsonl), "" while there is none. */
  const transcript = (sessionId: string) => {
    const dirs = fs.existsSync(projects) ? fs.readdirSync(projects) : [];
    const file = dirs.map((d) => path.join(projects, d, `${sessionId}.jsonl`)).find((f) => fs.existsSync(f));
    return file ? fs.readFileSync(file, "utf8") : "";
  };
  const removeTranscripts = () => fs.rmSync(projects, { recursive: true, force: true });
  return { dir, fake, attempt, main, sessionOf, outbox, inspect, transcript, removeTranscripts };
}

/** Each stage's session id as recorded (the latest step `claude:<stage>/session:<attempt>`). */
async function sessionIds(engine: ReturnType<typeof createEngine>): Promise<Record<string, string>> {
  const view = await engine.get("r");
  const out: Record<string, string> = {};
  for (const step of view.steps) {
    const m = /^claude:(\w+)\/session:\d+$/.exec(step.key);
    if (m && step.status === "succeeded") out[m[1]!] = (step.value as { sessionId: string }).sessionId;
  }
  return out;
}

// Each test runs Claude Code two or three times (its start-up takes seconds on a loaded machine).
describe("durableClaudeQuery with the real Claude Code binary, the workflow process SIGKILLed", { timeout: 120_000 }, () => {
  it("the Claude Code binary is installed (a dev dependency): without it this suite fails, never skips", () => {
    expect(fs.existsSync(binary), `${binary} is missing: run npm ci (the SDK's linux-x64 platform package carries it)`).toBe(true);
  });

  it("inside a Bash call's effect: Claude Code dies with its owner; the continue escalates the cut-off call before any model turn; resolved, the resumed session is told its result and nothing runs twice", async () => {
    const { attempt, main, sessionOf, outbox, inspect, fake } = await setUp({ killInBash: true });
    const first = await attempt("start");
    expect(first.signal, first.output).toBe("SIGKILL");
    expect(outbox()).toBe("built\n");
    // Claude Code died with its owner: no request after the kill (the orphan would ask for the next turn).
    const sent = fake.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(fake.requests.length).toBe(sent);
    const builder = await inspect(async (engine) => (await sessionIds(engine)).builder!);
    expect(builder).toMatch(/^[0-9a-f-]{36}$/);

    // The continue settles the cut-off Bash call before the session goes on: irreversible, no
    // query: escalated at once, no model turn spent, the command not run again.
    const sentBefore = main().length;
    const second = await attempt("continue");
    expect(second.result, second.output).toMatchObject({ status: "escalated", attempt: 2, error: { code: "RUN_ESCALATED" } });
    expect(main().length).toBe(sentBefore);
    expect(outbox()).toBe("built\n");
    const bashKey = await inspect(async (engine) => {
      const escalations = await engine.escalations();
      expect(escalations.map((e) => e.step)).toEqual([expect.stringMatching(/^claude:builder\/tool:Bash:toolu_/)]);
      const view = await engine.get("r");
      expect(view.steps.filter((s) => s.key === "claude:planner").map((s) => s.status)).toEqual(["succeeded"]);
      expect(view.steps.filter((s) => s.key.startsWith("claude:builder/tool:Write:")).map((s) => s.status)).toEqual(["succeeded"]);
      const key = escalations[0]!.step;
      // A person checks the outbox and records what the command did.
      await engine.resolve("r", key, { value: { stdout: "", stderr: "", interrupted: false, note: "the build ran once" } });
      return key;
    });

    const third = await attempt("continue");
    expect(third.result, third.output).toMatchObject({ status: "completed", attempt: 3 });
    expect(third.result.value).toMatchObject({ plan: expect.stringContaining("PLAN"), build: expect.stringContaining("BUILT"), review: "APPROVED" });
    expect(outbox()).toBe("built\n");
    // The continue resumed the builder's session (its requests carry the session id recorded in
    // attempt 1) and told the model the call already ran, with the resolved result.
    const resumed = main().filter((r) => r.attempt === 3);
    expect(resumed.filter((r) => r.stage === "builder").length).toBeGreaterThan(0);
    expect(resumed.filter((r) => r.stage === "builder").every((r) => sessionOf(r) === builder)).toBe(true);
    expect(resumed.filter((r) => r.stage === "planner")).toEqual([]);
    const told = resumed.some(
      (r) =>
        JSON.stringify(r.body.messages).includes("already ran before the session was interrupted") &&
        JSON.stringify(r.body.messages).includes("the build ran once"),
    );
    expect(told).toBe(true);
    await inspect(async (engine) => {
      const view = await engine.get("r");
      expect(view.steps.filter((s) => s.key === bashKey).map((s) => s.status)).toEqual(["succeeded"]);
      // engine.resolve kept the input the call was recorded with: the repeat was matched by it.
      expect(view.steps.find((s) => s.key === bashKey)!.inputDigest).toMatch(/^sha256:/);
    });
  });

  it("mid-session before any tool call: the continue resumes the session under its recorded id, and the stage finishes once", async () => {
    let killed = false;
    const { attempt, main, sessionOf, outbox, inspect, transcript } = await setUp({
      onRequest: async (request, kill) => {
        if (request.stage === "builder" && !killed) {
          killed = true;
          // The model's first turn is under way and Claude Code has written the session's transcript.
          await until("the session transcript, the prompt in it", () =>
            transcript(request.headers["x-claude-code-session-id"]!).includes("Carry out this plan"),
          );
          kill();
          await new Promise((resolve) => setTimeout(resolve, 300));
        }
      },
    });
    const first = await attempt("start");
    expect(first.signal, first.output).toBe("SIGKILL");
    const before = await inspect(async (engine) => {
      const view = await engine.get("r");
      expect(view.steps.filter((s) => s.key.startsWith("claude:builder/tool:"))).toEqual([]);
      return sessionIds(engine);
    });
    expect(before.builder).toMatch(/^[0-9a-f-]{36}$/);

    const second = await attempt("continue");
    expect(second.result, second.output).toMatchObject({ status: "completed", attempt: 2 });
    expect(outbox()).toBe("built\n");
    const builderRequests = main().filter((r) => r.attempt === 2 && r.stage === "builder");
    expect(builderRequests.length).toBeGreaterThan(0);
    expect(builderRequests.every((r) => sessionOf(r) === before.builder)).toBe(true);
    // The planner's session was not run again.
    expect(main().filter((r) => r.attempt === 2 && r.stage === "planner")).toEqual([]);
  });

  it("a session whose transcript was never written (cut off first): the continue starts it anew, records the new id before any tool, and finishes once", async () => {
    const { attempt, main, sessionOf, outbox, inspect, removeTranscripts } = await setUp();
    const first = await attempt("start", { STEPLOG_FAULT: "after-outcome@claude:builder/session:1" });
    expect(first.signal, first.output).toBe("SIGKILL");
    const before = await inspect(sessionIds);
    removeTranscripts();
    const second = await attempt("continue");
    expect(second.result, second.output).toMatchObject({ status: "completed", attempt: 2 });
    expect(outbox()).toBe("built\n");
    const after = await inspect(sessionIds);
    expect(after.builder).not.toBe(before.builder);
    const builderRequests = main().filter((r) => r.attempt === 2 && r.stage === "builder");
    expect(builderRequests.length).toBeGreaterThan(0);
    expect(builderRequests.every((r) => sessionOf(r) === after.builder)).toBe(true);
  });

  it("Claude Code spawned so that it outlives its SIGKILLed owner: its PreToolUse hook cannot reach the owner, so the Bash call is refused, never run without its intent", async () => {
    let killed = false;
    const { attempt, fake, main, outbox, inspect } = await setUp({
      onRequest: async (request, kill) => {
        // The builder's Write is done: the answer to this request is the Bash call. The owner dies first.
        if (!killed && request.stage === "builder" && answered(request.body).includes("Write")) {
          killed = true;
          kill();
          await new Promise((resolve) => setTimeout(resolve, 300));
        }
      },
      // The orphan's next turn (after its refused call) is answered without a tool, so it ends.
      override: (request) =>
        killed && request.attempt === 1 && answered(request.body).includes("Write") && toolRefused(request.body)
          ? { content: [text("Waiting for the user.")] }
          : undefined,
    });
    const first = await attempt("start", { CLAUDE_PLAIN_SPAWN: "1" });
    expect(first.signal, first.output).toBe("SIGKILL");
    // The orphan got the Bash call, asked its hook, got no answer, and told the model it was refused.
    await until("the orphan's next request", () => main().some((r) => r.attempt === 1 && toolRefused(r.body)));
    expect(outbox()).toBe("");
    await inspect(async (engine) => {
      const view = await engine.get("r");
      expect(view.steps.filter((s) => s.key.startsWith("claude:builder/tool:Bash:"))).toEqual([]);
    });
    const sent = fake.requests.length;
    const second = await attempt("continue", { CLAUDE_PLAIN_SPAWN: "1" });
    expect(second.result, second.output).toMatchObject({ status: "completed", attempt: 2 });
    expect(fake.requests.length).toBeGreaterThan(sent);
    expect(outbox()).toBe("built\n");
  });

  it("between stages: the finished planner is handed back (no request of its session), the builder starts once", async () => {
    const { attempt, main, outbox, inspect } = await setUp();
    const first = await attempt("start", { STEPLOG_FAULT: "after-outcome@claude:planner" });
    expect(first.signal, first.output).toBe("SIGKILL");
    expect(main().filter((r) => r.stage !== "planner")).toEqual([]);
    const second = await attempt("continue");
    expect(second.result, second.output).toMatchObject({ status: "completed", attempt: 2 });
    expect(main().filter((r) => r.attempt === 2 && r.stage === "planner")).toEqual([]);
    expect(outbox()).toBe("built\n");
    await inspect(async (engine) => {
      const view = await engine.get("r");
      expect(view.attempts[1]!.reused).toContain("claude:planner");
      const usage = view.steps.find((s) => s.key === "claude:builder")!.usage;
      expect(usage).toMatchObject({ inputTokens: expect.any(Number), outputTokens: expect.any(Number), costUsd: expect.any(Number) });
    });
  });
});
