// Seeing runs: `steplog runs` and `steplog show` (text, --json), the store options, and what
// happens on an empty or missing store.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { assertBuilt, cli, example, ROOT, TempDirs } from "./helpers.js";

const dirs = new TempDirs();
beforeAll(assertBuilt);
afterEach(() => dirs.cleanup());

/** A store with a completed run, a failed one, and one cut off by a crash. */
async function seeded(): Promise<string> {
  const cwd = dirs.make();
  await cli(["run", example("hello.mjs"), "--id", "done-1", "--", '{"topic":"a"}'], { cwd });
  await cli(["run", example("hello.mjs"), "--id", "failed-1", "--", '{"topic":"b","failFirst":"publish"}'], { cwd });
  await cli(["run", example("crash.mjs"), "--id", "crashed-1"], { cwd });
  return cwd;
}

describe("steplog runs", () => {
  it("one line a run: id, workflow, status, attempts, current or last step, age; filters by status and workflow", async () => {
    const cwd = await seeded();
    const all = await cli(["runs", "--json"], { cwd });
    expect(all.code, all.output).toBe(0);
    const byId = Object.fromEntries(all.json().map((r: { id: string }) => [r.id, r]));
    expect(Object.keys(byId).sort()).toEqual(["crashed-1", "done-1", "failed-1"]);
    expect(byId["done-1"]).toMatchObject({
      workflow: "hello",
      status: "completed",
      attempts: 1,
      step: { key: "publish", status: "succeeded" },
      source: example("hello.mjs"),
    });
    expect(byId["failed-1"]).toMatchObject({ status: "failed", step: { key: "publish", status: "failed", attempt: 1 } });
    expect(byId["crashed-1"]).toMatchObject({ workflow: "crash-demo", status: "interrupted", step: { key: "two", status: "intended" } });
    expect(byId["done-1"].usage.costUsd).toBeCloseTo(0.0115, 6);

    const text = await cli(["runs"], { cwd });
    expect(text.stdout.split("\n")[0]).toMatch(/^ID +WORKFLOW +STATUS +ATTEMPTS +STEP +AGE$/);
    expect(text.stdout).toMatch(/^crashed-1 +crash-demo +interrupted +1 +two \(intended\) +(just now|\d+(ms|\.\d+s|s))$/m);
    expect(text.stdout).not.toContain("\x1b[");

    const filtered = await cli(["runs", "--status", "failed,interrupted", "--json"], { cwd });
    expect(
      filtered
        .json()
        .map((r: { id: string }) => r.id)
        .sort(),
    ).toEqual(["crashed-1", "failed-1"]);
    expect((await cli(["runs", "--status", "failed", "--status", "completed", "--json"], { cwd })).json()).toHaveLength(2);
    expect((await cli(["runs", "--workflow", "crash-demo", "--json"], { cwd })).json().map((r: { id: string }) => r.id)).toEqual(["crashed-1"]);
    const limited = await cli(["runs", "--limit", "1"], { cwd });
    expect(limited.stdout).toMatch(/\(more than 1; --limit 0 shows all\)/);
    const bad = await cli(["runs", "--status", "broken"], { cwd });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/unknown status "broken"/);
    expect((await cli(["runs", "--limit", "-3"], { cwd })).code).toBe(2);
  });

  it("an empty or missing store lists nothing and creates nothing", async () => {
    const cwd = dirs.make();
    const r = await cli(["runs"], { cwd });
    expect(r.code, r.output).toBe(0);
    expect(r.stdout).toMatch(/^No runs in .*\.steplog\/steplog\.db\.$/m);
    expect((await cli(["runs", "--json"], { cwd })).json()).toEqual([]);
    expect((await cli(["escalations", "--json"], { cwd })).json()).toEqual([]);
    expect(fs.existsSync(path.join(cwd, ".steplog"))).toBe(false);
    const missing = await cli(["show", "nope"], { cwd });
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/RUN_NOT_FOUND/);
    expect(missing.stderr).toMatch(/next: steplog runs/);
  });

  it("--db picks another SQLite file; STEPLOG_DB too; --store takes a URL and refuses both at once", async () => {
    const cwd = dirs.make();
    const db = path.join(cwd, "elsewhere", "runs.db");
    await cli(["run", example("hello.mjs"), "--id", "x1", "--db", db, "--", '{"topic":"a"}'], { cwd });
    expect(fs.existsSync(db)).toBe(true);
    expect(fs.readFileSync(path.join(path.dirname(db), ".gitignore"), "utf8")).toBe("*\n");
    expect((await cli(["runs", "--json"], { cwd })).json()).toEqual([]);
    expect((await cli(["runs", "--json", "--db", db], { cwd })).json().map((r: { id: string }) => r.id)).toEqual(["x1"]);
    expect((await cli(["runs", "--json"], { cwd, env: { STEPLOG_DB: db } })).json().map((r: { id: string }) => r.id)).toEqual(["x1"]);
    expect((await cli(["runs", "--json", "--store", `sqlite:${db}`], { cwd })).json().map((r: { id: string }) => r.id)).toEqual(["x1"]);
    const both = await cli(["runs", "--db", db, "--store", "postgres://localhost/x"], { cwd });
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--db FILE or --store URL, not both/);
    const bogus = await cli(["runs", "--store", "mysql://x"], { cwd });
    expect(bogus.code).toBe(2);
    expect(bogus.stderr).toMatch(/not a store URL/);
    const unreadable = path.join(cwd, "not-a-db");
    fs.writeFileSync(unreadable, "hello, I am not SQLite ".repeat(100));
    const refused = await cli(["runs", "--db", unreadable], { cwd });
    expect(refused.code, refused.output).toBe(5);
    expect(refused.stderr).toMatch(/STORE_UNREADABLE/);
  });

  it("--store postgres://… says clearly when this build has no Postgres store", async () => {
    // A copy of the built package without dist/postgres.js.
    const pkg = dirs.make();
    fs.cpSync(path.join(ROOT, "dist"), path.join(pkg, "dist"), { recursive: true });
    fs.rmSync(path.join(pkg, "dist", "postgres.js"), { force: true });
    fs.writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ name: "steplog-copy", type: "module" }));
    fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(pkg, "node_modules"));
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      import("node:child_process").then(({ execFile }) =>
        execFile(
          process.execPath,
          [path.join(pkg, "dist", "cli.js"), "runs", "--store", "postgres://user:secret@127.0.0.1:1/none"],
          { cwd: pkg },
          (error, _stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stderr }),
        ),
      );
    });
    expect(r.code, r.stderr).toBe(5);
    expect(r.stderr).toMatch(/The Postgres store is not available in this steplog build/);
    expect(r.stderr).not.toContain("secret");
  });
});

describe("stores named on the command line", () => {
  it("a --db path with no store: refused for every reading command (exit 5), nothing created; --create makes an empty one", async () => {
    const cwd = dirs.make();
    const typo = path.join(cwd, "stepolg.db");
    for (const args of [["runs"], ["show", "r"], ["escalations"], ["dead-letters"], ["recover"]]) {
      const r = await cli([...args, "--db", typo], { cwd });
      expect(r.code, `${args[0]}: ${r.output}`).toBe(5);
      expect(r.stderr).toContain(`No store at ${typo}`);
      expect(r.stderr).toContain("--create");
    }
    expect(fs.existsSync(typo)).toBe(false);
    const made = await cli(["runs", "--db", typo, "--create"], { cwd });
    expect(made.code, made.output).toBe(0);
    expect(made.stdout).toMatch(/No runs/);
    expect(fs.existsSync(typo)).toBe(true);
    expect((await cli(["runs", "--db", typo], { cwd })).code).toBe(0);
  });

  it("--store postgres://… without pg installed: STORE_DRIVER_FAILED, exit 5, saying npm install pg", async () => {
    const cwd = dirs.make();
    const hook = path.join(cwd, "no-pg-hook.mjs");
    fs.writeFileSync(
      hook,
      `export async function resolve(s, c, next) { if (s === "pg") { const e = new Error("Cannot find package 'pg'"); e.code = "ERR_MODULE_NOT_FOUND"; throw e; } return next(s, c); }\n`,
    );
    const register = path.join(cwd, "no-pg.mjs");
    fs.writeFileSync(register, `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(hook).href)});\n`);
    const r = await cli(["runs", "--store", "postgres://user:secret@127.0.0.1:1/none"], {
      cwd,
      env: { NODE_OPTIONS: `--import=${pathToFileURL(register).href}` },
    });
    expect(r.code, r.output).toBe(5);
    expect(r.stderr).toContain("STORE_DRIVER_FAILED");
    expect(r.stderr).toContain("npm install pg");
    expect(r.stderr).not.toContain("secret");
  });
});

describe("steplog show", () => {
  it("prints the timeline attempt by attempt, with totals, what reuse saved and the next command", async () => {
    const cwd = await seeded();
    await cli(["run", "--continue", "--id", "failed-1"], { cwd });
    const r = await cli(["show", "failed-1"], { cwd });
    expect(r.code, r.output).toBe(0);
    const out = r.stdout;
    expect(out).toMatch(/^Run failed-1 · hello 1\.0\.0 · completed$/m);
    expect(out).toContain(`  source   ${example("hello.mjs")}`);
    expect(out).toMatch(/^Attempt 1 failed · \d+ms · pid \d+ on /m);
    expect(out).toMatch(/^  ✗ publish +failed +\d+ms +the blog API answered 503 Service Unavailable$/m);
    expect(out).toMatch(/^Attempt 2 completed · /m);
    expect(out).toMatch(/^  ↺ plan +reused +from attempt 1, saved \d+ms · \$0\.0021 · 1,200 in \/ 300 out tokens$/m);
    expect(out).toMatch(/^  ✓ publish +ran +\d+ms$/m);
    expect(out).toMatch(/^Total   2 attempts, .* in attempts, .* in steps · \$0\.0115 · 3,700 in \/ 1,700 out tokens$/m);
    expect(out).toMatch(/^Saved   2 reused steps: \d+ms · \$0\.0115 · 3,700 in \/ 1,700 out tokens$/m);
    expect(out).not.toMatch(/^Next/m); // completed: nothing to do

    const crashed = await cli(["show", "crashed-1"], { cwd });
    expect(crashed.stdout).toMatch(/^Attempt 1 interrupted · /m);
    expect(crashed.stdout).toMatch(/^  ✗ two +cut off +intent recorded, no outcome/m);
    expect(crashed.stdout).toMatch(/^Next\n  steplog run --continue --id crashed-1$/m);
  });

  it("--json gives the timeline: attempts with reused and ran entries, totals, saved, next", async () => {
    const cwd = await seeded();
    const failed = (await cli(["show", "failed-1", "--json"], { cwd })).json();
    expect(failed).toMatchObject({ id: "failed-1", workflow: "hello", version: "1.0.0", status: "failed", source: example("hello.mjs"), attemptCount: 1 });
    expect(failed.next).toEqual(["steplog run --continue --id failed-1", "steplog run --continue --id failed-1 --from-step publish"]);
    expect(failed.error).toMatchObject({ message: "the blog API answered 503 Service Unavailable", step: "publish" });
    await cli(["run", "--continue", "--id", "failed-1"], { cwd });
    const t = (await cli(["show", "failed-1", "--json"], { cwd })).json();
    expect(t.attempts).toHaveLength(2);
    const [first, second] = t.attempts;
    expect(first).toMatchObject({ number: 1, ending: "failed", fromStep: null, forced: false });
    expect(first.entries.map((e: { key: string; kind: string; status: string }) => [e.key, e.kind, e.status])).toEqual([
      ["plan", "ran", "succeeded"],
      ["draft", "ran", "succeeded"],
      ["publish", "ran", "failed"],
    ]);
    expect(second.entries.map((e: { key: string; kind: string; recordedBy: number }) => [e.key, e.kind, e.recordedBy])).toEqual([
      ["plan", "reused", 1],
      ["draft", "reused", 1],
      ["publish", "ran", 2],
    ]);
    const reusedMs = first.entries[0].durationMs + first.entries[1].durationMs;
    expect(t.saved).toEqual({ steps: 2, ms: reusedMs, usage: { inputTokens: 3700, outputTokens: 1700, costUsd: expect.closeTo(0.0115, 6) } });
    expect(t.totals.usage).toEqual({ inputTokens: 3700, outputTokens: 1700, costUsd: expect.closeTo(0.0115, 6) });
    expect(t.totals.rows).toBe(4);
    expect(t.value).toMatchObject({ words: 360 });
    expect(t.next).toEqual([]);
  });

  it("shows escalations and the resolve commands for an escalated run; run ids that need quoting are quoted", async () => {
    const cwd = dirs.make();
    const id = `it's "quoted"; ok`;
    await cli(["run", example("charge.mjs"), "--id", id], { cwd });
    await cli(["run", "--continue", "--id", id], { cwd });
    const t = (await cli(["show", id, "--json"], { cwd })).json();
    expect(t.status).toBe("escalated");
    expect(t.escalations).toEqual([expect.objectContaining({ step: "charge", effect: "irreversible", attempt: 1 })]);
    expect(t.next).toEqual([`steplog resolve 'it'\\''s "quoted"; ok' charge --value '<json>'`, `steplog resolve 'it'\\''s "quoted"; ok' charge --redo`]);
    const text = (await cli(["show", id], { cwd })).stdout;
    expect(text).toMatch(/^  ⚠ charge +escalated +cut off inside an irreversible step; waits for a person/m);
    expect(text).toMatch(/^Waits for a person\n  ⚠ charge: /m);
  });

  it("reads a store written by an app (no source, usage, waits) without changing it", async () => {
    const cwd = dirs.make();
    const db = path.join(cwd, "app.db");
    const wf = defineWorkflow({
      name: "app-flow",
      async run(ctx) {
        await ctx.step("model", async (info) => {
          info.usage({ inputTokens: 10, outputTokens: 5, costUsd: 0.5, pages: 2 });
          return 1;
        });
        await ctx.waitForEvent("go");
        return 2;
      },
    });
    const engine = createEngine({ store: sqliteStore({ path: db }) });
    await engine.start(wf, undefined, { id: "app-1" });
    await engine.close();
    const before = fs.statSync(db).mtimeMs;
    const r = await cli(["show", "app-1", "--db", db], { cwd });
    expect(r.code, r.output).toBe(0);
    expect(r.stdout).toContain("  source   none recorded (give the workflow file to continue)");
    expect(r.stdout).toContain('  waiting  for event "go" (step go)');
    expect(r.stdout).toMatch(/^  ✓ model +ran +\d+ms +\$0\.5 · 10 in \/ 5 out tokens · pages 2$/m);
    expect(r.stdout).toMatch(/^  ⏸ go +waiting +for event "go"$/m);
    expect(r.stdout).toMatch(/^  steplog send app-1 go '<json>'$/m);
    expect(fs.statSync(db).mtimeMs).toBe(before);
  });
});

describe("steplog show: a failure the workflow handled", () => {
  it('reads "failed, handled" where it was recorded, and "thrown again" where a continue replayed it', async () => {
    const cwd = dirs.make();
    const db = path.join(cwd, "app.db");
    let failLast = true;
    const wf = defineWorkflow({
      name: "handles",
      async run(ctx) {
        await ctx.step("lookup", async () => Promise.reject(new Error("card declined"))).catch(() => "fallback");
        await ctx.step("last", async () => {
          if (failLast) throw new Error("mail down");
        });
      },
    });
    const engine = createEngine({ store: sqliteStore({ path: db }), workflows: [wf] });
    await engine.start(wf, undefined, { id: "h-1" });
    failLast = false;
    await engine.continue("h-1");
    await engine.close();
    const r = await cli(["show", "h-1", "--db", db], { cwd });
    expect(r.code, r.output).toBe(0);
    expect(r.stdout).toMatch(/^  ✗ lookup +failed, handled +\d+ms +card declined \(the workflow went on; a continue throws it again\)$/m);
    expect(r.stdout).toMatch(/^  ✗ last +failed +\d+ms +mail down$/m);
    expect(r.stdout).toMatch(/^  ↺ lookup +reused +its failure thrown again, from attempt 1$/m);
    const json = (await cli(["show", "h-1", "--db", db, "--json"], { cwd })).json();
    expect(json.attempts[0].entries[0]).toMatchObject({ key: "lookup", status: "failed", handled: true });
    expect(json.attempts[1].entries[0]).toMatchObject({ kind: "reused", key: "lookup", handled: true });
  });
});

describe("run ids that start with -", () => {
  it("are given after -- as positionals, and the commands steplog suggests for them parse as meant", async () => {
    const cwd = dirs.make();
    const db = path.join(cwd, "dash.db");
    const wf = defineWorkflow({ name: "dash", run: async (ctx) => ctx.waitForEvent("go") });
    const engine = createEngine({ store: sqliteStore({ path: db }), workflows: [wf] });
    await engine.start(wf, undefined, { id: "-x" });
    await engine.close();
    const shown = await cli(["show", "--db", db, "--json", "--", "-x"], { cwd });
    expect(shown.code, shown.output).toBe(0);
    expect(shown.json()).toMatchObject({ id: "-x", status: "waiting" });
    const next: string[] = shown.json().next;
    expect(next[0]).toBe("steplog send -- -x go '<json>'");
    // The suggested command, run as printed (its words after "--" are the positionals).
    const sent = await cli(["send", "--db", db, "--", "-x", "go", "1"], { cwd });
    expect(sent.code, sent.output).toBe(0);
    expect((await cli(["show", "--db", db, "--json", "--", "-x"], { cwd })).json().next).toContain("steplog work");
  });

  it("suggested commands with an option's value after the positionals still parse", async () => {
    const { command } = await import("../../src/cli/format.js");
    expect(command("steplog", "resolve", "-x", "charge", "--value", "<json>")).toBe("steplog resolve --value '<json>' -- -x charge");
    expect(command("steplog", "compensate", "-y", "--workflow", "<file>")).toBe("steplog compensate --workflow <file> -- -y");
    expect(command("steplog", "run", "--continue", "--id", "-x")).toBe("steplog run --continue --id=-x");
    expect(command("steplog", "run", "--continue", "--id", "r1", "--from-step", "-s")).toBe("steplog run --continue --id r1 --from-step=-s");
    expect(command("steplog", "resolve", "ch1", "charge", "--value", "<json>")).toBe("steplog resolve ch1 charge --value '<json>'");
  });
});
