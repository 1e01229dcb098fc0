// `steplog run`: start and continue runs through the built bin, against SQLite stores in temp
// dirs: args, recorded sources, live progress, exit codes, a real SIGKILL and Ctrl-C.
import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { assertBuilt, BIN, cli, collect, example, spawnCli, TempDirs, waitForOutput, writeWorkflow } from "./helpers.js";

const dirs = new TempDirs();
beforeAll(assertBuilt);
afterEach(() => dirs.cleanup());

const COMMANDS = [
  "run",
  "runs",
  "show",
  "recover",
  "escalations",
  "resolve",
  "approve",
  "reject",
  "send",
  "compensate",
  "dead-letters",
  "cancel",
  "work",
  "prune",
];

describe("steplog --help", () => {
  it("lists every command, and each command has its own --help", async () => {
    const cwd = dirs.make();
    const top = await cli(["--help"], { cwd });
    expect(top.code, top.output).toBe(0);
    for (const name of COMMANDS) expect(top.stdout).toMatch(new RegExp(`^  ${name} `, "m"));
    expect(top.stdout).toMatch(/Exit codes: 0 ok/);
    const helps = await Promise.all(COMMANDS.map((name) => cli([name, "--help"], { cwd })));
    helps.forEach((h, i) => {
      expect(h.code, h.output).toBe(0);
      expect(h.stdout, h.output).toContain(`steplog ${COMMANDS[i]}: `);
      expect(h.stdout, h.output).toContain("Usage:");
      expect(h.stdout, h.output).toContain("--json");
    });
    // No command at all is a usage error; so is an unknown one.
    expect((await cli([], { cwd })).code).toBe(2);
    const unknown = await cli(["rnus"], { cwd });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command "rnus"/);
    expect(fs.existsSync(path.join(cwd, ".steplog")), "help and usage errors create no store").toBe(false);
  });

  it("the built bin is executable and starts with #!/usr/bin/env node", () => {
    expect(fs.readFileSync(BIN, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
    expect(fs.statSync(BIN).mode & 0o111).not.toBe(0);
    const pkg = JSON.parse(fs.readFileSync(path.join(path.dirname(BIN), "..", "package.json"), "utf8"));
    expect(pkg.bin).toEqual({ steplog: "./dist/cli.js" });
  });
});

describe("steplog run: start", () => {
  it("runs a .mjs workflow with JSON args, records its file as the source, and shows ✓ per step", async () => {
    const cwd = dirs.make();
    const r = await cli(["run", example("hello.mjs"), "--id", "h1", "--", '{"topic":"durable steps"}'], { cwd });
    expect(r.code, r.output).toBe(0);
    expect(r.stdout).toMatch(/^Run h1 · hello · attempt 1$/m);
    for (const step of ["plan", "draft", "publish"]) expect(r.stdout).toMatch(new RegExp(`^  ✓ ${step} +\\d+ms$`, "m"));
    expect(r.stdout).toMatch(/^✓ attempt 1 completed$/m);
    expect(r.stdout).toContain('Value  {"title":"Notes on durable steps","words":360,"url":"https://blog.example/durable-steps"}');
    expect(r.stdout).toMatch(/^Cost   \$0\.0115 · 3,700 in \/ 1,700 out tokens/m);
    expect(r.stdout).not.toContain("\x1b["); // not a TTY: no colour, no spinner
    expect(fs.existsSync(path.join(cwd, ".steplog", "steplog.db"))).toBe(true);

    const shown = (await cli(["show", "h1", "--json"], { cwd })).json();
    expect(shown.source).toBe(example("hello.mjs"));
    expect(shown.args).toEqual({ topic: "durable steps" });
    expect(shown.status).toBe("completed");
  });

  it("--json prints the result with each step's state, and the exit code says how the attempt ended", async () => {
    const cwd = dirs.make();
    const failed = await cli(["run", example("hello.mjs"), "--id", "h2", "--json", "--", '{"topic":"x","failFirst":"publish"}'], { cwd });
    expect(failed.code, failed.output).toBe(1);
    const result = failed.json();
    expect(result).toMatchObject({ id: "h2", status: "failed", runStatus: "failed", attempt: 1, workflow: "hello", source: example("hello.mjs") });
    expect(result.error.message).toBe("the blog API answered 503 Service Unavailable");
    expect(result.steps.map((s: { key: string; state: string }) => [s.key, s.state])).toEqual([
      ["plan", "succeeded"],
      ["draft", "succeeded"],
      ["publish", "failed"],
    ]);
    expect(result.next).toEqual(["steplog run --continue --id h2", "steplog run --continue --id h2 --from-step publish", "steplog show h2"]);
    expect(result.usage).toEqual({ inputTokens: 3700, outputTokens: 1700, costUsd: expect.closeTo(0.0115, 6) });

    const continued = await cli(["run", "--continue", "--id", "h2", "--json"], { cwd });
    expect(continued.code, continued.output).toBe(0);
    const second = continued.json();
    expect(second).toMatchObject({ id: "h2", status: "completed", attempt: 2 });
    expect(second.steps).toEqual([
      { key: "plan", state: "reused", recordedBy: 1, recordedAt: expect.any(String) },
      { key: "draft", state: "reused", recordedBy: 1, recordedAt: expect.any(String) },
      { key: "publish", state: "succeeded", durationMs: expect.any(Number) },
    ]);
  });

  it("loads a .ts workflow through tsx and hands the words after -- to its prepare(argv)", async () => {
    const cwd = dirs.make();
    const r = await cli(["run", example("greet.ts"), "--id", "g1", "--json", "--", "Ada", "Grace", "--shout"], { cwd });
    expect(r.code, r.output).toBe(0);
    expect(r.json()).toMatchObject({ status: "completed", value: "HELLO, ADA! HELLO, GRACE!" });
    expect(r.json().steps.map((s: { key: string }) => s.key)).toEqual(["greet", "greet#2", "join"]);
  });

  it("without prepare: one word that parses as JSON is that value, else the words as an array ([] for none)", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(
      cwd,
      "echo.mjs",
      `export default defineWorkflow({ name: "echo", async run(ctx, args) { return ctx.step("echo", async () => ({ args })); } });`,
    );
    const cases: Array<[string[], unknown]> = [
      [['{"a":[1,2]}'], { a: [1, 2] }],
      [["42"], 42],
      [["plain words"], ["plain words"]],
      [
        ["a", "b"],
        ["a", "b"],
      ],
      [[], []],
    ];
    for (const [i, [words, expected]] of cases.entries()) {
      const r = await cli(["run", file, "--id", `e${i}`, "--json", "--", ...words], { cwd });
      expect(r.code, r.output).toBe(0);
      expect(r.json().value, r.output).toEqual({ args: expected });
    }
  });

  it("a step that fails with no await before it: the run fails (exit 1, UNAWAITED_STEP_FAILED), as the first step or a later one", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(
      cwd,
      "forgot.mjs",
      `export default defineWorkflow({ name: "forgot", async run(ctx, args) {
        if (args.later) await ctx.step("plan", async () => 1);
        ctx.step("charge", async () => { throw new Error("declined"); }); // the await is missing
        await ctx.step("after", async () => 2);
        return "done";
      } });`,
    );
    for (const [id, later] of [
      ["first", false],
      ["later", true],
    ] as const) {
      const r = await cli(["run", file, "--id", id, "--json", "--", JSON.stringify({ later })], { cwd });
      expect(r.code, r.output).toBe(1);
      expect(r.json(), r.output).toMatchObject({ status: "failed", error: { code: "UNAWAITED_STEP_FAILED", step: "charge" } });
      expect(r.stderr, r.output).not.toContain("declined\n    at");
    }
  });

  it("loads a .mjs workflow that imports a .ts helper", async () => {
    const cwd = dirs.make();
    fs.writeFileSync(path.join(cwd, "helper.ts"), `export function twice(n: number): number { return n * 2; }\n`);
    const file = writeWorkflow(
      cwd,
      "uses-ts.mjs",
      `import { twice } from "./helper.ts";\nexport default defineWorkflow({ name: "uses-ts", async run(ctx, n) { return ctx.step("twice", async () => twice(n)); } });`,
    );
    const r = await cli(["run", file, "--json", "--", "21"], { cwd });
    expect(r.code, r.output).toBe(0);
    expect(r.json().value).toBe(42);
  });

  it("refuses what it cannot do, with the exit codes the docs give", async () => {
    const cwd = dirs.make();
    const noWorkflow = path.join(cwd, "none.mjs");
    fs.writeFileSync(noWorkflow, "export const x = 1;\n");
    const throws = path.join(cwd, "throws.mjs");
    fs.writeFileSync(throws, "throw new Error('broken at import');\n");
    const cases: Array<[string[], number, RegExp]> = [
      [["run"], 2, /give a workflow file/],
      [["run", example("hello.mjs"), "--bogus"], 2, /Unknown option '--bogus'/],
      [["run", example("hello.mjs"), "--from-step", "plan"], 2, /--from-step goes with --continue/],
      [["run", example("hello.mjs"), "--timeout", "600"], 2, /not a duration/],
      [["run", "--continue"], 2, /needs --id/],
      [["run", "--continue", "--id", "x", "--", "arg"], 2, /takes no args after --/],
      [["run", path.join(cwd, "missing.mjs")], 6, /No workflow file at/],
      [["run", noWorkflow], 6, /exports no workflow/],
      [["run", throws], 6, /broken at import/],
      [["run", "--continue", "--id", "nope"], 4, /RUN_NOT_FOUND/],
      [["run", example("hello.mjs"), "--id", " bad id", "--", '{"topic":"x"}'], 2, /INVALID_NAME|Invalid run id/],
      [["run", example("hello.mjs"), "--", '{"topic":42}'], 3, /ARGS_REJECTED/],
    ];
    for (const [args, code, pattern] of cases) {
      const r = await cli(args, { cwd });
      expect(r.code, r.output).toBe(code);
      expect(r.stderr, r.output).toMatch(pattern);
    }
    // A refusal under --json is a JSON document too, with the code.
    await cli(["run", example("hello.mjs"), "--id", "dup", "--", '{"topic":"x"}'], { cwd });
    const dup = await cli(["run", example("hello.mjs"), "--id", "dup", "--json", "--", '{"topic":"x"}'], { cwd });
    expect(dup.code, dup.output).toBe(3);
    expect(dup.json()).toMatchObject({ error: { code: "RUN_EXISTS", next: "steplog run --continue --id dup   (or start with another --id)" }, exitCode: 3 });
    expect(dup.stderr).toMatch(/^steplog run: RUN_EXISTS: /m);
    const completed = await cli(["run", "--continue", "--id", "dup"], { cwd });
    expect(completed.code).toBe(3);
    expect(completed.stderr).toMatch(/RUN_COMPLETED/);
    expect(completed.stderr).toMatch(/next: steplog run --continue --id dup --from-step <step>/);
  });

  it("--timeout ends the attempt timed-out (exit 1)", async () => {
    const cwd = dirs.make();
    const r = await cli(["run", example("slow.mjs"), "--id", "t1", "--timeout", "400ms", "--json", "--", "20000"], { cwd });
    expect(r.code, r.output).toBe(1);
    expect(r.json()).toMatchObject({ status: "timed-out", error: { code: "RUN_TIMED_OUT" } });
  });
});

describe("steplog run --continue", () => {
  it("a crash and a continue through the bin: the run dies by SIGKILL in step two; --continue without the file reuses step one (↺)", async () => {
    const cwd = dirs.make();
    const first = await cli(["run", example("crash.mjs"), "--id", "c1"], { cwd });
    expect(first.signal, first.output).toBe("SIGKILL");
    expect(first.stdout).toMatch(/^  ✓ one +\d+ms$/m);
    expect(first.stdout).not.toMatch(/two/);

    const interrupted = await cli(["runs", "--status", "interrupted", "--json"], { cwd });
    expect(interrupted.json()).toMatchObject([
      { id: "c1", workflow: "crash-demo", status: "interrupted", attempts: 1, step: { key: "two", status: "intended", attempt: 1 } },
    ]);

    const second = await cli(["run", "--continue", "--id", "c1"], { cwd });
    expect(second.code, second.output).toBe(0);
    expect(second.stdout).toMatch(/^Run c1 · crash-demo · attempt 2$/m);
    expect(second.stdout).toMatch(/^  ↺ one +reused from attempt 1$/m);
    expect(second.stdout).toMatch(/^  ✓ two +\d+ms, re-driven \(cut off earlier\)$/m);
    expect(second.stdout).toMatch(/^  ✓ three +\d+ms$/m);
    expect(second.stdout).not.toMatch(/✓ one/);
    expect(second.stdout).toContain('Value  {"processed":6,"redriven":true,"saved":6}');

    const shown = (await cli(["show", "c1", "--json"], { cwd })).json();
    expect(shown.source).toBe(example("crash.mjs"));
    expect(shown.attempts.map((a: { ending: string }) => a.ending)).toEqual(["interrupted", "completed"]);
    expect(shown.attempts[0].entries.map((e: { key: string; status: string; cutOff?: boolean }) => [e.key, e.status, e.cutOff ?? false])).toEqual([
      ["one", "succeeded", false],
      ["two", "failed", true],
    ]);
    expect(shown.attempts[1].entries.map((e: { key: string; kind: string }) => [e.key, e.kind])).toEqual([
      ["one", "reused"],
      ["two", "ran"],
      ["three", "ran"],
    ]);
    expect(shown.saved).toMatchObject({ steps: 1, usage: { costUsd: 0.004 } });
  });

  it("keeps the source recorded at the start when a continue is given another file", async () => {
    const cwd = dirs.make();
    await cli(["run", example("hello.mjs"), "--id", "s1", "--", '{"topic":"x","failFirst":"publish"}'], { cwd });
    const copy = path.join(cwd, "moved.mjs");
    fs.writeFileSync(copy, `export { default } from ${JSON.stringify(example("hello.mjs"))};\n`);
    const r = await cli(["run", copy, "--continue", "--id", "s1"], { cwd });
    expect(r.code, r.output).toBe(0);
    expect(r.stderr).toContain(`the run's recorded source stays ${example("hello.mjs")}`);
    expect((await cli(["show", "s1", "--json"], { cwd })).json().source).toBe(example("hello.mjs"));
    // A file of another workflow is refused before anything runs.
    const wrong = await cli(["run", example("crash.mjs"), "--continue", "--id", "s1"], { cwd });
    expect(wrong.code).toBe(6);
    expect(wrong.stderr).toMatch(/defines workflow "crash-demo", but run "s1" belongs to "hello"/);
  });

  it("a run started by an app records no source: the continue asks for the file, then works with it", async () => {
    const cwd = dirs.make();
    const db = path.join(cwd, "app.db");
    const { default: hello } = (await import(example("hello.mjs"))) as { default: Parameters<ReturnType<typeof createEngine>["start"]>[0] };
    const engine = createEngine({ store: sqliteStore({ path: db }) });
    await engine.start(hello, { topic: "app", failFirst: "publish" } as never, { id: "app-1" });
    await engine.close();

    const without = await cli(["run", "--continue", "--id", "app-1", "--db", db], { cwd });
    expect(without.code, without.output).toBe(6);
    expect(without.stderr).toMatch(/has no recorded source/);
    expect(without.stderr).toMatch(/next: steplog run <workflow-file> --continue --id app-1/);
    const withFile = await cli(["run", example("hello.mjs"), "--continue", "--id", "app-1", "--db", db, "--json"], { cwd });
    expect(withFile.code, withFile.output).toBe(0);
    expect(withFile.json().source).toBeNull();
  });

  it("a continue that would run a succeeded irreversible step again stops before it; --redo and --reuse go on", async () => {
    const cwd = dirs.make();
    await cli(["run", example("charge.mjs"), "--id", "c1"], { cwd }); // dies inside charge
    await cli(["run", "--continue", "--id", "c1"], { cwd }); // escalated
    await cli(["resolve", "c1", "charge", "--value", '{"id":"ch_1"}'], { cwd });
    expect((await cli(["run", "--continue", "--id", "c1", "--json"], { cwd })).json()).toMatchObject({ status: "completed" });
    const stopped = await cli(["run", "--continue", "--id", "c1", "--from-step", "cart", "--json"], { cwd });
    expect(stopped.code, stopped.output).toBe(1);
    expect(stopped.json()).toMatchObject({ status: "stopped", error: { code: "REDO_IRREVERSIBLE", step: "charge" } });
    expect(stopped.json().next.slice(0, 2)).toEqual(["steplog run --continue --id c1 --redo charge", "steplog run --continue --id c1 --reuse charge"]);
    const reused = await cli(["run", "--continue", "--id", "c1", "--from-step", "cart", "--reuse", "charge", "--json"], { cwd });
    expect(reused.json()).toMatchObject({ status: "completed", value: { charge: "ch_1" } });
    const redone = await cli(["run", "--continue", "--id", "c1", "--redo", "charge", "--json"], { cwd });
    expect(redone.json()).toMatchObject({ status: "completed", value: { charge: "ch_6" } });
    const stray = await cli(["run", example("charge.mjs"), "--redo", "charge"], { cwd });
    expect(stray.code).toBe(2);
    expect(stray.stderr).toMatch(/--redo goes with --continue/);
  });

  it("--from-step redoes that step and everything after it; --force takes back a dead-lettered run", async () => {
    const cwd = dirs.make();
    await cli(["run", example("hello.mjs"), "--id", "f1", "--", '{"topic":"x"}'], { cwd });
    const redo = await cli(["run", "--continue", "--id", "f1", "--from-step", "draft", "--json"], { cwd });
    expect(redo.code, redo.output).toBe(0);
    expect(redo.json().steps.map((s: { key: string; state: string }) => [s.key, s.state])).toEqual([
      ["plan", "reused"],
      ["draft", "succeeded"],
      ["publish", "succeeded"],
    ]);
    const missing = await cli(["run", "--continue", "--id", "f1", "--from-step", "nope"], { cwd });
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/STEP_NOT_FOUND/);

    await cli(["run", example("flaky.mjs"), "--id", "d1"], { cwd });
    const last = await cli(["run", "--continue", "--id", "d1", "--json"], { cwd });
    expect(last.json()).toMatchObject({ status: "failed", runStatus: "dead-lettered" });
    expect(last.json().next[0]).toBe("steplog run --continue --id d1 --force");
    const refused = await cli(["run", "--continue", "--id", "d1"], { cwd });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/DEAD_LETTERED/);
    expect(refused.stderr).toMatch(/next: steplog run --continue --id d1 --force/);
    const forced = await cli(["run", "--continue", "--id", "d1", "--force", "--json"], { cwd });
    expect(forced.code).toBe(1);
    expect(forced.json()).toMatchObject({ status: "failed", runStatus: "failed", attempt: 3 });
  });
});

describe("Ctrl-C", () => {
  it("the first cancels the attempt cleanly (exit 130, the run reads cancelled and can be continued)", async () => {
    const cwd = dirs.make();
    const child = spawnCli(["run", example("slow.mjs"), "--id", "k1", "--", "30000"], { cwd });
    const done = collect(child, 20_000);
    await waitForOutput(child, (t) => /✓ warm-up/.test(t));
    await untilIntended(cwd, "k1", "long");
    child.kill("SIGINT");
    const r = await done;
    expect(r.code, r.output).toBe(130);
    expect(r.stderr).toMatch(/SIGINT: cancelling the attempt cleanly; press Ctrl-C again to exit at once/);
    expect(r.stdout).toMatch(/^  ✗ long +\S+ +RUN_CANCELLED: /m);
    expect(r.stdout).toMatch(/^Next   steplog run --continue --id k1$/m);
    const shown = (await cli(["show", "k1", "--json"], { cwd })).json();
    expect(shown.status).toBe("cancelled");
    expect(shown.attempts[0].entries.at(-1)).toMatchObject({ key: "long", status: "failed", error: { code: "RUN_CANCELLED" } });
  });

  it("a second exits at once while a step ignores its signal (exit 130, the run reads interrupted)", async () => {
    const cwd = dirs.make();
    const child = spawnCli(["run", example("slow.mjs"), "--id", "k2", "--", '{"ms":30000,"stubborn":true}'], { cwd });
    const done = collect(child, 20_000);
    await waitForOutput(child, (t) => /✓ warm-up/.test(t));
    await untilIntended(cwd, "k2", "long");
    child.kill("SIGINT");
    // The second only once the first was handled (two sent close together can merge into one).
    await waitForStderr(child, (t) => /SIGINT: cancelling the attempt cleanly; press Ctrl-C again/.test(t));
    child.kill("SIGINT");
    const r = await done;
    expect(r.code, r.output).toBe(130);
    expect(r.stderr).toMatch(/second interrupt: exiting at once/);
    const runs = (await cli(["runs", "--json"], { cwd })).json();
    expect(runs).toMatchObject([{ id: "k2", status: "interrupted", step: { key: "long", status: "intended" } }]);
  });
});

/** Poll `steplog show <id> --json` until step `key` of the run's latest attempt is intended (its function called). */
async function untilIntended(cwd: string, id: string, key: string, limitMs = 20_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  let last = "";
  for (;;) {
    const shown = await cli(["show", id, "--json"], { cwd });
    last = shown.output;
    if (shown.code === 0) {
      const entries: { key: string; status: string }[] = shown.json().attempts.at(-1)?.entries ?? [];
      if (entries.some((e) => e.key === key && e.status === "intended")) return;
    }
    if (Date.now() > deadline) throw new Error(`step "${key}" of run ${id} was not intended within ${limitMs} ms; last show:\n${last}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Wait until `predicate(stderr)` holds for a running child (stderr from now on). */
function waitForStderr(child: ChildProcess, predicate: (text: string) => boolean, limitMs = 20_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = "";
    const timer = setTimeout(() => {
      child.stderr!.off("data", onData);
      reject(new Error(`stderr never matched within ${limitMs} ms:\n${text}`));
    }, limitMs);
    const onData = (chunk: Buffer | string) => {
      text += chunk.toString();
      if (predicate(text)) {
        clearTimeout(timer);
        child.stderr!.off("data", onData);
        resolve();
      }
    };
    child.stderr!.on("data", onData);
  });
}
