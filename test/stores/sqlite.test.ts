// The SQLite store: its file, its pragmas, its tables, and what it does with a file it cannot read.
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { createEngine, defineWorkflow, isSteplogError } from "../../src/entries/index.js";
import { canLoad, Database, LOADABLE_DRIVERS, sourceOf, sqliteStore, statementPrototype, TEST_SQLITE_DRIVER } from "../helpers/sqlite-driver.js";
import { LeaseLostError } from "../../src/base/errors.js";
import { SCHEMA_VERSION } from "../../src/store/sqlite/schema.js";
import { GroupCommit } from "../../src/store/group-commit.js";
import { OP_CALL, SqliteBatchWriter } from "../../src/store/sqlite/batch-writer.js";
import { runtimeStore } from "../../src/store/runtime.js";
import { tmpDb, tmpDir } from "../helpers/tmp.js";
import { NOW, attemptRow, runRow, stepRow, takeIfFree } from "../../src/testing/conformance-rows.js";
import { createVersion3Store } from "../helpers/version3-store.js";

const hello = defineWorkflow({
  name: "hello",
  async run(ctx) {
    const a = await ctx.step("a", async () => ({ greeting: "hello" }));
    return ctx.step("b", async () => `${a.greeting} world`);
  },
});

/** hello, noting each call of its steps' functions in `calls` (b with its idempotency key). */
const countedHello = (calls: string[]) =>
  defineWorkflow({
    name: "hello",
    async run(ctx) {
      const a = await ctx.step("a", async () => (calls.push("a"), { greeting: "new" }));
      return ctx.step("b", async (info) => (calls.push(`b ${info.idempotencyKey}`), `${a.greeting} world`));
    },
  });

const sha = (file: string) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");

describe("sqlite store", () => {
  it("the default store is .steplog/steplog.db under the working directory, with a .gitignore of *", async () => {
    const dir = tmpDir();
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const engine = createEngine({ workflows: [hello] });
      expect(engine.store.location).toBe(`sqlite store at ${path.join(fs.realpathSync(dir), ".steplog", "steplog.db")}`);
      await engine.start(hello, undefined, { id: "r" });
      await engine.close();
    } finally {
      process.chdir(cwd);
    }
    expect(fs.existsSync(path.join(dir, ".steplog", "steplog.db"))).toBe(true);
    expect(fs.readFileSync(path.join(dir, ".steplog", ".gitignore"), "utf8")).toBe("*\n");
    expect(fs.statSync(path.join(dir, ".steplog")).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(dir, ".steplog", "steplog.db")).mode & 0o777).toBe(0o600);
  });

  it("tables you can query with the sqlite3 shell: runs, attempts, steps", async () => {
    const file = tmpDb();
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    await engine.start(hello, undefined, { id: "212" });
    await engine.close();
    const db = new Database(file, { readonly: true });
    expect(db.prepare("select id, workflow, status, attempts from runs").all()).toEqual([{ id: "212", workflow: "hello", status: "completed", attempts: 1 }]);
    expect(db.prepare("select run_id, number, ending, pid from attempts").all()).toEqual([{ run_id: "212", number: 1, ending: "completed", pid: process.pid }]);
    expect(db.prepare("select key, status, idempotency_key, value from steps where run_id = '212' order by seq").all()).toEqual([
      { key: "a", status: "succeeded", idempotency_key: "212:a", value: '{"greeting":"hello"}' },
      { key: "b", status: "succeeded", idempotency_key: "212:b", value: '"hello world"' },
    ]);
    expect(db.prepare("select value from meta where key = 'schema_version'").get()).toEqual({ value: String(SCHEMA_VERSION) });
    db.close();
  });

  it("WAL, busy_timeout, and synchronous set on every open: FULL for durability 'power' (default), NORMAL for 'process'", async () => {
    const file = tmpDb();
    for (const [durability, synchronous] of [
      [undefined, 2],
      ["process", 1],
      ["power", 2],
      ["process", 1],
    ] as const) {
      const store = sqliteStore(durability ? { path: file, durability } : { path: file });
      const engine = createEngine({ store, workflows: [hello] });
      await engine.start(hello, undefined);
      expect(store.pragmas()).toEqual({ driver: TEST_SQLITE_DRIVER, journalMode: "wal", synchronous, busyTimeoutMs: 5000, cacheSize: -2000 });
      await engine.close();
    }
  });

  it("a 2 MB page cache unless pragmas ask for another size", async () => {
    const file = tmpDb();
    const bigger = sqliteStore({ path: file, pragmas: { cache_size: -16000 } });
    const engine = createEngine({ store: bigger, workflows: [hello] });
    await engine.start(hello, undefined);
    expect(bigger.pragmas()).toMatchObject({ cacheSize: -16000 });
    await engine.close();
  });

  it("runs started together look once that the store file is still in place (they share a commit); a start after that commit looks again", async () => {
    const dir = tmpDir();
    const file = path.join(dir, "s.db");
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    await engine.start(hello, undefined, { id: "first" });
    const looked = vi.spyOn(fs, "statSync");
    try {
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => engine.start(hello, undefined, { id: `r${i}` })));
      expect(results.every((r) => r.status === "completed")).toBe(true);
      const atFile = () => looked.mock.calls.filter(([p]) => p === file).length;
      // The twenty starts share one look; each attempt's lease renewals are too far apart to run here.
      expect(atFile()).toBe(1);
      fs.rmSync(file);
      await expect(engine.start(hello, undefined, { id: "after" })).rejects.toMatchObject({ code: "STORE_FILE_GONE", runId: "after" });
    } finally {
      looked.mockRestore();
      await engine.close();
    }
  });

  it("continue with no store file: RUN_NOT_FOUND and no file is created", async () => {
    const file = path.join(tmpDir(), "nested", "steplog.db");
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    await expect(engine.continue("212")).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
    await expect(engine.get("212")).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
    expect(await engine.list()).toEqual([]);
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.existsSync(path.dirname(file))).toBe(false);
  });

  it("a command (send) that cannot be recorded: STORE_WRITE_FAILED naming the run, 'nothing was changed', and nothing was", async () => {
    const file = tmpDb();
    const review = defineWorkflow({ name: "review", run: async (ctx) => ctx.waitForEvent("verdict") });
    const first = createEngine({ store: sqliteStore({ path: file }), workflows: [review] });
    expect(await first.start(review, undefined, { id: "parked" })).toMatchObject({ status: "waiting" });
    await first.close();
    // A full disk: the file may not grow by a single page.
    const probe = new Database(file);
    const pages = Number(probe.pragma("page_count", { simple: true }));
    probe.close();
    const engine = createEngine({ store: sqliteStore({ path: file, pragmas: { max_page_count: pages } }), workflows: [review] });
    const error = await engine.send("parked", "verdict", "x".repeat(64 * 1024)).catch((e: unknown) => e);
    expect(isSteplogError(error, "STORE_WRITE_FAILED"), String(error)).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain('of run "parked"');
    expect(message).toContain("Nothing was changed");
    expect(message).not.toContain("engine.continue");
    expect(await engine.get("parked")).toMatchObject({ status: "waiting" });
    expect((await engine.store.loadRun("parked"))!.events).toEqual([]);
    await engine.close();
  });

  it("a new file another process holds the write lock of (making the same store): the store waits for it, as for any lock, and opens in WAL mode", async () => {
    const file = tmpDb();
    fs.mkdirSync(path.dirname(file), { recursive: true });
    // The other process: the file in SQLite's default journal mode, its write lock held until
    // 400 ms after this test says it is opening the store (a line on its stdin). Opening waits
    // synchronously (this process's event loop cannot run meanwhile), so the holder times the
    // release itself, from a moment after `started`: the open cannot end sooner, however slowly
    // either process is scheduled.
    const holder = spawn(
      process.execPath,
      [
        "-e",
        `const db = ${TEST_SQLITE_DRIVER === "node:sqlite" ? `new (require("node:sqlite").DatabaseSync)` : `new (require("better-sqlite3"))`}(process.argv[1]); db.exec("BEGIN IMMEDIATE"); console.log("locked");
         process.stdin.once("data", () => setTimeout(() => { db.exec("COMMIT"); db.close(); }, 400));`,
        file,
      ],
      { cwd: process.cwd(), stdio: ["pipe", "pipe", "inherit"] },
    );
    const exited = new Promise((resolve) => holder.once("exit", resolve));
    let said = "";
    await new Promise<void>((resolve) =>
      holder.stdout!.on("data", (chunk: Buffer) => {
        said += chunk.toString();
        if (said.includes("locked\n")) resolve();
      }),
    );
    const started = Date.now();
    holder.stdin!.end("opening\n");
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    expect(await engine.start(hello, undefined, { id: "w" })).toMatchObject({ status: "completed" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    await engine.close();
    await exited;
    const probe = new Database(file);
    expect(probe.pragma("journal_mode", { simple: true })).toBe("wal");
    probe.close();
  });

  it("writeOutcomeLater on a store closed underneath its engine's wrapper: failed is called once, with STORE_CLOSED", async () => {
    const inner = sqliteStore({ path: tmpDb() });
    const runtime = runtimeStore(inner);
    await inner.close();
    const heard: unknown[] = [];
    runtime.writeOutcomeLater(
      { runId: "r", epoch: 1 },
      { seq: 1, status: "succeeded", value: "1", error: null, endedAt: 1, calls: 1, resolution: null, usage: null },
      () => heard.push("committed"),
      (error) => heard.push(error),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(heard).toHaveLength(1);
    expect(heard[0]).toMatchObject({ code: "STORE_CLOSED" });
  });

  it("a group-committed outcome that cannot be recorded (the last step's, disk full): the attempt fails STORE_WRITE_FAILED, the step stays intended, and a continue re-drives it once", async () => {
    const file = tmpDb();
    let calls = 0;
    const big = defineWorkflow({
      name: "big-last",
      async run(ctx) {
        await ctx.waitForEvent("go");
        // An idempotent step's outcome is written without waiting: it commits with the attempt's ending.
        return (await ctx.step("big", () => (calls++, "x".repeat(64 * 1024)))).length;
      },
    });
    const first = createEngine({ store: sqliteStore({ path: file }), workflows: [big] });
    expect(await first.start(big, undefined, { id: "b" })).toMatchObject({ status: "waiting" });
    await first.send("b", "go");
    await first.close();
    const probe = new Database(file);
    const pages = Number(probe.pragma("page_count", { simple: true }));
    probe.close();
    // Room for the attempt's small rows, not for the 64 KB value.
    const full = createEngine({ store: sqliteStore({ path: file, pragmas: { max_page_count: pages + 4 } }), workflows: [big] });
    const result = await full.continue("b");
    expect(calls).toBe(1);
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({ code: "STORE_WRITE_FAILED" });
    expect(result.error!.message).toContain("database or disk is full");
    const steps = (await full.store.loadRun("b"))!.steps.filter((s) => s.key === "big");
    expect(steps.map((s) => s.status)).toEqual(["intended"]);
    await full.close();

    const roomy = createEngine({ store: sqliteStore({ path: file }), workflows: [big] });
    expect(await roomy.continue("b")).toMatchObject({ status: "completed", value: 64 * 1024 });
    expect(calls).toBe(2);
    await roomy.close();
  });

  it("a new run that cannot be recorded: STORE_WRITE_FAILED saying nothing was changed (not to continue it), and there is no run", async () => {
    const file = tmpDb();
    const echo = defineWorkflow({ name: "echo", run: async (_ctx, text: string) => text });
    const first = createEngine({ store: sqliteStore({ path: file }), workflows: [echo] });
    await first.start(echo, "small");
    await first.close();
    const probe = new Database(file);
    const pages = Number(probe.pragma("page_count", { simple: true }));
    probe.close();
    const engine = createEngine({ store: sqliteStore({ path: file, pragmas: { max_page_count: pages } }), workflows: [echo] });
    const error = await engine.start(echo, "x".repeat(64 * 1024), { id: "big" }).catch((e: unknown) => e);
    expect(isSteplogError(error, "STORE_WRITE_FAILED"), String(error)).toBe(true);
    expect((error as Error).message).toContain('the new run of run "big"');
    expect((error as Error).message).toContain("Nothing was changed");
    expect((error as Error).message).not.toContain("engine.continue");
    await expect(engine.get("big")).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
    await engine.close();
  });

  it("a file that is not a database: STORE_UNREADABLE, the file untouched, no step run", async () => {
    const file = tmpDb();
    fs.writeFileSync(file, crypto.randomBytes(8192));
    const before = sha(file);
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    const error = await engine.continue("212").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "STORE_UNREADABLE" });
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toContain("left untouched");
    await expect(engine.start(hello, undefined, { id: "new" })).rejects.toMatchObject({ code: "STORE_UNREADABLE" });
    expect(sha(file)).toBe(before);
    expect(fs.readdirSync(path.dirname(file))).toEqual([path.basename(file)]);
  });

  it("a SQLite database that is not a steplog store: STORE_UNREADABLE, untouched", async () => {
    const file = tmpDb();
    const other = new Database(file);
    other.exec("create table invoices (id integer primary key, total real); insert into invoices (total) values (9.5)");
    other.close();
    const before = sha(file);
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    const error = await engine.start(hello, undefined, { id: "r" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "STORE_UNREADABLE" });
    expect((error as Error).message).toContain("invoices");
    expect(sha(file)).toBe(before);
  });

  it("a store from a newer steplog: STORE_TOO_NEW, untouched", async () => {
    const file = tmpDb();
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    await engine.start(hello, undefined, { id: "r" });
    await engine.close();
    const db = new Database(file);
    db.prepare("update meta set value = ? where key = 'schema_version'").run(String(SCHEMA_VERSION + 1));
    db.pragma("wal_checkpoint(TRUNCATE)");
    db.close();
    const before = sha(file);
    const again = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    const error = await again.continue("r").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "STORE_TOO_NEW" });
    expect((error as Error).message).toContain(`schema version ${SCHEMA_VERSION + 1}`);
    expect(sha(file)).toBe(before);
  });

  it("records survive close and reopen", async () => {
    const file = tmpDb();
    let fail = true;
    const w = defineWorkflow({
      name: "reopen",
      async run(ctx) {
        const a = await ctx.step("a", async () => new Date(5));
        if (fail) throw new Error("x");
        return a;
      },
    });
    const first = createEngine({ store: sqliteStore({ path: file }), workflows: [w] });
    await first.start(w, undefined, { id: "r" });
    await first.close();
    fail = false;
    const second = createEngine({ store: sqliteStore({ path: file }), workflows: [w] });
    expect(await second.continue("r")).toMatchObject({ status: "completed", value: new Date(5) });
    await second.close();
  });
});

describe("sqlite store: its driver", () => {
  it("an unknown driver is refused when the store is made (INVALID_OPTION), naming the ones there are", () => {
    expect(() => sqliteStore({ path: tmpDb(), driver: "sqlite3" as "auto" })).toThrow(
      expect.objectContaining({
        code: "INVALID_OPTION",
        message: expect.stringContaining(`driver "sqlite3" is not one steplog has; use "auto" (the default), "better-sqlite3", "node:sqlite", "bun:sqlite"`),
      }),
    );
  });

  it("bun:sqlite outside Bun: STORE_DRIVER_FAILED on the first call that opens it, naming the driver and why; no file is made", async () => {
    const file = tmpDb();
    const store = sqliteStore({ path: file, driver: "bun:sqlite" });
    const error = await store.createRun(runRow("r"), attemptRow("r", 1), { expiresAt: NOW + 60_000, now: NOW }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({
      code: "STORE_DRIVER_FAILED",
      tried: [{ driver: "bun:sqlite", reason: `it is Bun's own, and this is Node.js ${process.version}` }],
    });
    expect((error as Error).message).toContain(`Use driver "auto" here (bun:sqlite is for Bun). (sqliteStore was asked for driver "bun:sqlite" only.)`);
    expect(fs.existsSync(file)).toBe(false);
    await store.close();
  });

  it.skipIf(canLoad("node:sqlite"))("node:sqlite on a Node.js without it (20): STORE_DRIVER_FAILED saying which Node.js has it", async () => {
    const store = sqliteStore({ path: tmpDb(), driver: "node:sqlite" });
    await expect(store.createRun(runRow("r"), attemptRow("r", 1), { expiresAt: NOW + 60_000, now: NOW })).rejects.toMatchObject({
      code: "STORE_DRIVER_FAILED",
      message: expect.stringContaining(
        `node:sqlite failed to load (Node.js ${process.version} has none; it came with Node.js 22.5). The store was not touched`,
      ),
    });
    await store.close();
  });

  it("the driver that opened the store is told by pragmas(), and a store on it reads what another driver wrote", async () => {
    const file = tmpDb();
    for (const driver of LOADABLE_DRIVERS) {
      const store = sqliteStore({ path: file, driver });
      await store.createRun(runRow(driver), attemptRow(driver, 1), { expiresAt: NOW + 60_000, now: NOW });
      expect(store.pragmas()?.driver).toBe(driver);
      expect((await store.listRuns({})).map((r) => r.run.id).sort()).toEqual(LOADABLE_DRIVERS.slice(0, LOADABLE_DRIVERS.indexOf(driver) + 1).sort());
      await store.close();
    }
  });
});

describe("sqlite store files are owner-only", () => {
  it("the folder is 0700 and the database, WAL and shared-memory files 0600; opening a store others can read warns once", async () => {
    const dir = path.join(tmpDir(), "nested", "store");
    const file = path.join(dir, "steplog.db");
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    await engine.start(hello, undefined, { id: "r" });
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    for (const suffix of ["", "-wal", "-shm"]) expect((fs.statSync(file + suffix).mode & 0o777).toString(8), suffix).toBe("600");
    await engine.close();
    const warnings: string[] = [];
    const quiet = createEngine({ store: sqliteStore({ path: file, onWarning: (m) => warnings.push(m) }) });
    await quiet.list();
    await quiet.close();
    expect(warnings).toEqual([]);
    fs.chmodSync(file, 0o644);
    const loud = createEngine({ store: sqliteStore({ path: file, onWarning: (m) => warnings.push(m) }) });
    await loud.list();
    await loud.get("r");
    await loud.close();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/can be read by other users \(mode 644\).*chmod 600/);
  });

  it("a store written by schema version 3 (steps clustered on run id) is upgraded in place: every record kept, a cut-off run continues", async () => {
    const file = tmpDb();
    createVersion3Store(file, (old) => {
      const insertRun = old.prepare(
        `INSERT INTO runs (id, workflow, version, args, status, attempts, budget_used, created_at, updated_at) VALUES (?, 'hello', NULL, 'null', ?, 1, 1, ?, ?)`,
      );
      const insertAttempt = old.prepare(
        `INSERT INTO attempts (run_id, number, host, boot_id, pid, process_start, started_at, ended_at, ending, from_step, forced, error)
         VALUES (?, 1, ?, NULL, 999999999, NULL, ?, ?, ?, NULL, 0, NULL)`,
      );
      const insertStep = old.prepare(
        `INSERT INTO steps (run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage)
         VALUES (?, ?, 1, ?, ?, ?, 'idempotent', ?, ?, NULL, NULL, 1, ?, ?, NULL, NULL)`,
      );
      // "z-done" was made first (so it is run number 1 although its id sorts last); "a-cut" was cut off inside step b.
      insertRun.run("z-done", "completed", 1000, 1002);
      insertAttempt.run("z-done", os.hostname(), 1000, 1002, "completed");
      insertStep.run("z-done", 1, "a", "a", "succeeded", "z-done:a", '{"greeting":"hello"}', 1001, 1);
      insertStep.run("z-done", 2, "b", "b", "succeeded", "z-done:b", '"hello world"', 1002, 1);
      insertRun.run("a-cut", "running", 2000, 2001);
      insertAttempt.run("a-cut", os.hostname(), 2000, null, null);
      old.prepare("INSERT INTO leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES ('a-cut', 1, 1, 0, 2001)").run();
      insertStep.run("a-cut", 1, "a", "a", "succeeded", "a-cut:a", '{"greeting":"old"}', 2001, 1);
      insertStep.run("a-cut", 2, "b", "b", "intended", "a-cut:b", null, null, 0);
    });

    const calls: string[] = [];
    const counted = countedHello(calls);
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [counted] });
    expect(await engine.continue("a-cut")).toMatchObject({ status: "completed", value: "old world" });
    expect(calls).toEqual(["b a-cut:b"]);
    expect(await engine.get("z-done")).toMatchObject({ status: "completed" });
    await engine.close();

    const db = new Database(file, { readonly: true });
    expect(db.prepare("select value from meta where key = 'schema_version'").get()).toEqual({ value: String(SCHEMA_VERSION) });
    expect(db.prepare("select id, num from runs order by num").all()).toEqual([
      { id: "z-done", num: 1 },
      { id: "a-cut", num: 2 },
    ]);
    // The steps written before the upgrade keep one chunk per run (minus its number); the new attempt's go in a new chunk.
    expect(db.prepare("select run_num, chunk, run_id, seq, key, status, attempt, value from steps order by rowid").all()).toEqual([
      { run_num: 1, chunk: -1, run_id: "z-done", seq: 1, key: "a", status: "succeeded", attempt: 1, value: '{"greeting":"hello"}' },
      { run_num: 1, chunk: -1, run_id: "z-done", seq: 2, key: "b", status: "succeeded", attempt: 1, value: '"hello world"' },
      { run_num: 2, chunk: -2, run_id: "a-cut", seq: 1, key: "a", status: "succeeded", attempt: 1, value: '{"greeting":"old"}' },
      // The cut-off intent is closed by its policy (re-drive) and the step's new record follows it.
      { run_num: 2, chunk: -2, run_id: "a-cut", seq: 2, key: "b", status: "failed", attempt: 1, value: null },
      { run_num: 2, chunk: 1, run_id: "a-cut", seq: 3, key: "b", status: "succeeded", attempt: 2, value: '"old world"' },
    ]);
    expect(db.prepare("select run_num, chunk from step_chunks order by run_num, chunk").all()).toEqual([
      { run_num: 1, chunk: -1 },
      { run_num: 2, chunk: -2 },
      { run_num: 2, chunk: 1 },
    ]);
    // One index finds a run's steps, through its chunks; another holds only rows without a
    // chunk (an older version's), by run id. No trigger makes each step's insert dearer.
    expect(db.prepare("select name from sqlite_master where type = 'index' and tbl_name = 'steps' and name not like 'sqlite_%' order by name").all()).toEqual([
      { name: "steps_by_chunk" },
      { name: "steps_unchunked" },
    ]);
    expect(db.prepare("select name from sqlite_master where type = 'trigger' and tbl_name = 'steps'").all()).toEqual([]);
    db.close();
  });
});

describe("sqlite store: group commit", () => {
  const lease = { expiresAt: NOW + 60_000, now: NOW };
  const intentOf = (runId: string) => stepRow(runId, 1, "s", { version: null, position: 0 });

  it("a new run that cannot be inserted fails alone: the other run's intent in the same commit is kept", async () => {
    const store = sqliteStore({ path: tmpDb(), durability: "process" });
    const held = (await store.createRun(runRow("a"), attemptRow("a", 1), lease)) as { epoch: number };
    const intent = store.writeIntent({ runId: "a", epoch: held.epoch }, intentOf("a"));
    // Something SQLite cannot bind (an object) makes this run's insert throw inside the shared commit.
    const broken = store.createRun(runRow("b", { source: {} as never }), attemptRow("b", 1), lease);
    await expect(broken).rejects.toMatchObject({ code: "STORE_WRITE_FAILED", runId: "b" });
    await expect(intent).resolves.toBeUndefined();
    const loaded = await store.loadRun("a");
    expect(loaded?.steps.map((s) => [s.key, s.status])).toEqual([["s", "intended"]]);
    expect(await store.loadRun("b")).toBeUndefined();
    await store.close();
  });

  it("a new run's first intent is fenced: another connection that moved its lease after the run was created has it refused", async () => {
    const file = tmpDb();
    const store = sqliteStore({ path: file, durability: "process" });
    const held = (await store.createRun(runRow("a"), attemptRow("a", 1), lease)) as { epoch: number };
    const other = new Database(file);
    other.prepare("UPDATE leases SET epoch = epoch + 1, attempt = NULL WHERE run_id = 'a'").run();
    other.close();
    await expect(store.writeIntent({ runId: "a", epoch: held.epoch }, intentOf("a"))).rejects.toMatchObject({ code: "LEASE_LOST", runId: "a" });
    expect((await store.loadRun("a"))?.steps).toEqual([]);
    await store.close();
  });

  it("a new run's first intent looks up neither the run's number nor its lease (its creation knows both); a taken id writes nothing", async () => {
    const store = sqliteStore({ path: tmpDb(), durability: "process" });
    const Statement = await statementPrototype();
    const original = Statement.get;
    const reads: string[] = [];
    Statement.get = function (this: object, ...args: unknown[]) {
      reads.push(sourceOf(this));
      return original.apply(this, args);
    };
    try {
      const held = (await store.createRun(runRow("a"), attemptRow("a", 1), lease)) as { epoch: number };
      reads.length = 0;
      await store.writeIntent({ runId: "a", epoch: held.epoch }, intentOf("a"));
      expect(reads.filter((sql) => /FROM (leases|runs)\b/.test(sql))).toEqual([]);
      const again = await store.createRun(runRow("a", { workflow: "other" }), attemptRow("a", 1), lease);
      expect(again).toMatchObject({ exists: { id: "a", workflow: "conformance" } });
    } finally {
      Statement.get = original;
    }
    const loaded = await store.loadRun("a");
    expect(loaded?.attempts).toHaveLength(1);
    expect(loaded?.steps.map((s) => [s.key, s.status])).toEqual([["s", "intended"]]);
    await store.close();
  });

  /** Counts commits: every driver runs each transaction's COMMIT as a prepared statement. */
  async function countCommits() {
    const Statement = await statementPrototype();
    const original = Statement.run;
    const counter = { commits: 0, restore: () => void (Statement.run = original) };
    Statement.run = function (this: object, ...args: unknown[]) {
      if (sourceOf(this) === "COMMIT") counter.commits++;
      return original.apply(this, args);
    };
    return counter;
  }

  const steps = (n: number) =>
    defineWorkflow({
      name: `seq-${n}`,
      async run(ctx) {
        for (let i = 0; i < n; i++) await ctx.step("s", async () => i);
        return n;
      },
    });

  it("a sequential run commits once per step: each intent with the previous step's outcome", async () => {
    const counter = await countCommits();
    try {
      const wf = steps(200);
      const engine = createEngine({ store: sqliteStore({ path: tmpDb(), durability: "process" }), workflows: [wf] });
      await engine.start(wf, undefined); // opens the store (its schema is one more commit)
      const before = counter.commits;
      expect(await engine.start(wf, undefined)).toMatchObject({ status: "completed" });
      // The new run, 200 intents (each with the outcome before it), the last outcome, the ending.
      expect(counter.commits - before).toBe(203);
      await engine.close();
    } finally {
      counter.restore();
    }
  });

  it("parallel steps' intents share one commit; so do 20 runs started together", async () => {
    const counter = await countCommits();
    try {
      const fanOut = defineWorkflow({
        name: "fan-out",
        async run(ctx) {
          await ctx.step("first", async () => 0);
          const all = await Promise.all([1, 2, 3, 4, 5].map((i) => ctx.step(`p${i}`, async () => i)));
          return all.length;
        },
      });
      const engine = createEngine({ store: sqliteStore({ path: tmpDb(), durability: "process" }), workflows: [fanOut] });
      await engine.start(fanOut, undefined); // opens the store (its schema is one more commit)
      let before = counter.commits;
      expect(await engine.start(fanOut, undefined)).toMatchObject({ status: "completed", value: 5 });
      // The new run; first's intent; first's outcome with the five intents; their outcomes; the ending.
      expect(counter.commits - before).toBe(5);
      before = counter.commits;
      const results = await Promise.all(Array.from({ length: 20 }, () => engine.start(fanOut, undefined)));
      expect(results.every((r) => r.status === "completed")).toBe(true);
      // The same five commits, each shared by the twenty runs.
      expect(counter.commits - before).toBe(5);
      await engine.close();
    } finally {
      counter.restore();
    }
  });

  it("an outcome whose intent's row was renumbered meanwhile (as VACUUM may) lands on its own row, and the row now at the old number is untouched", async () => {
    const file = tmpDb();
    let other: Database | undefined;
    const moved: { from: number; to: number }[] = [];
    const wf = defineWorkflow({
      name: "renumbered",
      async run(ctx) {
        const a = await ctx.step("a", async ({ runId }) => {
          // Inside the step: its intent is committed. Move its row to a new rowid, and put another
          // run's row (same seq, intended) where it was.
          other ??= new Database(file);
          const row = other.prepare("SELECT rowid AS r, run_num AS n FROM steps WHERE run_id = ? AND seq = 1").get(runId) as { r: number; n: number };
          const to = row.r + 1000;
          other.prepare("UPDATE steps SET rowid = ? WHERE rowid = ?").run(to, row.r);
          other
            .prepare(
              `INSERT INTO steps (rowid, run_num, run_id, seq, attempt, key, name, status, effect, idempotency_key, intended_at, calls)
               VALUES (?, ?, 'decoy', 1, 1, 'a', 'a', 'intended', 'idempotent', 'decoy:a', 0, 0)`,
            )
            .run(row.r, row.n + 1_000_000);
          moved.push({ from: row.r, to });
          return "A";
        });
        return ctx.step("b", async () => `${a}B`);
      },
    });
    const engine = createEngine({ store: sqliteStore({ path: file, durability: "process" }), workflows: [wf] });
    try {
      const result = await engine.start(wf, undefined, { id: "moved" });
      expect(result).toMatchObject({ status: "completed", value: "AB" });
      const run = await engine.get("moved");
      expect(run?.steps.map((s) => [s.key, s.status, s.value])).toEqual([
        ["a", "succeeded", "A"],
        ["b", "succeeded", "AB"],
      ]);
      expect(moved).toHaveLength(1);
      const rows = other!.prepare("SELECT rowid AS r, run_id AS id, status FROM steps WHERE seq = 1 AND run_id IN ('moved', 'decoy') ORDER BY rowid").all();
      expect(rows).toEqual([
        { r: moved[0]!.from, id: "decoy", status: "intended" },
        { r: moved[0]!.to, id: "moved", status: "succeeded" },
      ]);
    } finally {
      other?.close();
      await engine.close();
    }
  });

  it("each effect's intent is stored with its own effect, whether the intent takes the short statement or the full one", async () => {
    const file = tmpDb();
    const effects = ["read", "idempotent", "compensatable", "irreversible"] as const;
    const seenInside: unknown[] = [];
    const wf = defineWorkflow({
      name: "effects",
      version: "v'1",
      async run(ctx) {
        for (const effect of effects) {
          await ctx.step(effect, { effect, compensate: async () => {} }, async ({ runId }) => {
            // Inside the step: its intent is committed, with the effect and version it declared.
            const db = new Database(file, { readonly: true });
            try {
              seenInside.push(db.prepare("SELECT effect, version, status FROM steps WHERE run_id = ? AND key = ?").get(runId, effect));
            } finally {
              db.close();
            }
            return effect;
          });
        }
        return "done";
      },
    });
    const engine = createEngine({ store: sqliteStore({ path: file, durability: "process" }), workflows: [wf] });
    try {
      expect(await engine.start(wf, undefined, { id: "fx" })).toMatchObject({ status: "completed", value: "done" });
      expect(seenInside).toEqual(effects.map((effect) => ({ effect, version: "v'1", status: "intended" })));
      const run = await engine.get("fx");
      expect(run?.steps.map((s) => [s.key, s.effect, s.status, s.version])).toEqual(effects.map((e) => [e, e, "succeeded", "v'1"]));
    } finally {
      await engine.close();
    }
  });

  it("a long run of fast steps still lets the event loop turn (timers: the lease's heartbeat, deadlines)", async () => {
    const wf = steps(3000);
    const engine = createEngine({ store: sqliteStore({ path: tmpDb(), durability: "process" }), workflows: [wf] });
    let turns = 0;
    let done = false;
    const tick = () => {
      turns++;
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    const result = await engine.start(wf, undefined);
    done = true;
    expect(result).toMatchObject({ status: "completed" });
    // A lone run commits without waiting for the loop's turn, but gives way at least every 32 commits.
    expect(turns).toBeGreaterThanOrEqual(3000 / 32 - 5);
    await engine.close();
  });

  it("a write refused after SQLite rolled the batch back fails the batch: no later write runs outside it", async () => {
    const db = new Database(":memory:");
    db.exec("CREATE TABLE t (v TEXT)");
    const queue = new GroupCommit(new SqliteBatchWriter(db, (error, what) => new Error(`${what}: ${String(error)}`)));
    const insert = (v: string) => () => db.prepare("INSERT INTO t (v) VALUES (?)").run(v);
    const results = await Promise.allSettled([
      queue.enqueue(OP_CALL, "r1", insert("first"), "first", false),
      queue.enqueue(
        OP_CALL,
        "r2",
        () => {
          db.exec("ROLLBACK"); // as SQLite does by itself on some errors (SQLITE_FULL, SQLITE_IOERR)
          throw new LeaseLostError("r2", undefined, "refused after the rollback");
        },
        "rolled back",
        false,
      ),
      queue.enqueue(OP_CALL, "r3", insert("third"), "third", false),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(db.prepare("SELECT v FROM t").all()).toEqual([]);
    db.close();
  });
});

describe("sqlite store: a run's steps are found through its chunks", () => {
  const lease = { expiresAt: NOW + 60_000, now: NOW };
  const chunksOf = (file: string, runId: string) => {
    const db = new Database(file, { readonly: true });
    try {
      return db
        .prepare("SELECT chunk, count(*) AS n FROM steps WHERE run_id = ? GROUP BY chunk ORDER BY min(seq)")
        .all(runId)
        .map((r) => {
          const row = r as { chunk: number; n: number };
          const listed = db.prepare("SELECT 1 FROM step_chunks WHERE chunk = ? AND run_num = (SELECT num FROM runs WHERE id = ?)").get(row.chunk, runId);
          return { n: row.n, listed: listed !== undefined };
        });
    } finally {
      db.close();
    }
  };

  it("concurrent runs write 16 steps a chunk, each chunk listed; every step reads back in order, and a continue reuses them all", async () => {
    const file = tmpDb();
    const calls = new Map<string, number>();
    const long = defineWorkflow({
      name: "long",
      async run(ctx) {
        for (let i = 1; i <= 40; i++) {
          await ctx.step("s", async () => {
            calls.set(ctx.runId, (calls.get(ctx.runId) ?? 0) + 1);
            if (i === 40 && ctx.attempt === 1) throw new Error("the last step fails once");
            return i;
          });
        }
        return "done";
      },
    });
    const engine = createEngine({ store: sqliteStore({ path: file, durability: "process" }), workflows: [long] });
    const ids = ["r1", "r2", "r3", "r4", "r5"];
    const first = await Promise.all(ids.map((id) => engine.start(long, undefined, { id })));
    expect(first.map((r) => r.status)).toEqual(ids.map(() => "failed"));
    for (const id of ids) expect(chunksOf(file, id)).toEqual([16, 16, 8].map((n) => ({ n, listed: true })));
    const again = await Promise.all(ids.map((id) => engine.continue(id)));
    expect(again.map((r) => r.status)).toEqual(ids.map(() => "completed"));
    // 40 calls, then only the failed step again: the 39 before it were found and reused.
    expect(ids.map((id) => calls.get(id))).toEqual(ids.map(() => 41));
    for (const id of ids) {
      const run = await engine.get(id);
      expect(run.steps.map((s) => s.seq)).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
      // The continue's step went in a new chunk of its own.
      expect(chunksOf(file, id)).toEqual([16, 16, 8, 1].map((n) => ({ n, listed: true })));
    }
    await engine.close();
  });

  it("parallel steps whose intents span two chunks: every outcome lands on its own row (found by rowid, in the current chunk, or through the listing)", async () => {
    const file = tmpDb();
    let calls = 0;
    const wide = defineWorkflow({
      name: "wide",
      async run(ctx) {
        const all = await Promise.all(Array.from({ length: 20 }, (_, i) => ctx.step(`p${i}`, async () => (calls++, i))));
        if (ctx.attempt === 1) throw new Error("fails after the fan-out, once");
        return all.length;
      },
    });
    const engine = createEngine({ store: sqliteStore({ path: file, durability: "process" }), workflows: [wide] });
    expect(await engine.start(wide, undefined, { id: "w" })).toMatchObject({ status: "failed" });
    expect(chunksOf(file, "w")).toEqual([16, 4].map((n) => ({ n, listed: true })));
    const run = await engine.get("w");
    expect(run.steps.map((s) => s.status)).toEqual(Array.from({ length: 20 }, () => "succeeded"));
    expect(await engine.continue("w")).toMatchObject({ status: "completed", value: 20 });
    expect(calls).toBe(20);
    await engine.close();
  });

  it("a batch that fails after a run took a new chunk in it: the store forgets the chunk, and the run's next intent is listed and read back", async () => {
    const file = tmpDb();
    const store = sqliteStore({ path: file, durability: "process" });
    const a = (await store.createRun(runRow("a"), attemptRow("a", 1), lease)) as { epoch: number };
    const b = (await store.createRun(runRow("b"), attemptRow("b", 1), lease)) as { epoch: number };
    // One batch: b's first intent takes a chunk and lists it; a's intent cannot be bound (an
    // object as its value) and fails the whole transaction, b's chunk listing with it.
    const bFirst = store.writeIntent({ runId: "b", epoch: b.epoch }, stepRow("b", 1, "s", { version: null, position: 0 }));
    const broken = store.writeIntent(
      { runId: "a", epoch: a.epoch },
      stepRow("a", 1, "s", { status: "succeeded", value: {} as never, version: null, position: 0 }),
    );
    await expect(bFirst).rejects.toMatchObject({ code: "STORE_WRITE_FAILED", runId: "b" });
    await expect(broken).rejects.toMatchObject({ code: "STORE_WRITE_FAILED", runId: "a" });
    // b writes its intent again: it must go in a chunk that is listed for b, or no read finds it.
    await store.writeIntent({ runId: "b", epoch: b.epoch }, stepRow("b", 1, "s", { version: null, position: 0 }));
    await store.writeIntent({ runId: "b", epoch: b.epoch }, stepRow("b", 2, "s#2", { version: null, position: 1 }));
    expect((await store.loadRun("b"))?.steps.map((s) => [s.seq, s.status])).toEqual([
      [1, "intended"],
      [2, "intended"],
    ]);
    await store.close();
    expect(chunksOf(file, "b")).toEqual([{ n: 2, listed: true }]);
  });

  it("a run created in a batch that failed: its number may go to the next run, and its steps still land in its own rows once it is made again", async () => {
    const file = tmpDb();
    const store = sqliteStore({ path: file, durability: "process" });
    const z = (await store.createRun(runRow("z"), attemptRow("z", 1), lease)) as { epoch: number };
    // One batch: x's creation and an intent of z that cannot be bound (an object as its value), failing the whole batch.
    const x = store.createRun(runRow("x"), attemptRow("x", 1), lease);
    const broken = store.writeIntent({ runId: "z", epoch: z.epoch }, stepRow("z", 1, "s", { status: "succeeded", value: {} as never, version: null }));
    await expect(x).rejects.toMatchObject({ code: "STORE_WRITE_FAILED", runId: "x" });
    await expect(broken).rejects.toMatchObject({ code: "STORE_WRITE_FAILED" });
    // y takes the number x had in the rolled-back batch.
    const y = (await store.createRun(runRow("y"), attemptRow("y", 1), lease)) as { epoch: number };
    await store.writeIntent({ runId: "y", epoch: y.epoch }, stepRow("y", 1, "ys", { version: null }));
    // x is made again (queued, as another process's start could make it) and claimed here.
    await store.enqueueRun!(runRow("x", { status: "waiting", attempts: 0, budgetUsed: 0 }), NOW);
    const claim = await store.claimRun("x", takeIfFree("x"));
    expect(claim.kind).toBe("taken");
    await store.writeIntent({ runId: "x", epoch: claim.kind === "taken" ? claim.lease.epoch : 0 }, stepRow("x", 1, "xs", { version: null }));
    expect((await store.loadRun("x"))?.steps.map((s) => [s.runId, s.key])).toEqual([["x", "xs"]]);
    expect((await store.loadRun("y"))?.steps.map((s) => [s.runId, s.key])).toEqual([["y", "ys"]]);
    await store.close();
  });

  it("an attempt whose view of the run is behind the store (its next seq is already recorded) has its intent refused, STORE_WRITE_FAILED, and nothing is written", async () => {
    const file = tmpDb();
    const first = sqliteStore({ path: file, durability: "process" });
    const held = (await first.createRun(runRow("r"), attemptRow("r", 1), lease)) as { epoch: number };
    for (let i = 1; i <= 3; i++) await first.writeIntent({ runId: "r", epoch: held.epoch }, stepRow("r", i, `k${i}`, { version: null }));
    await first.close();
    const raw = new Database(file);
    raw.prepare("UPDATE leases SET attempt = NULL WHERE run_id = 'r'").run();
    raw.close();
    // A second attempt in another connection that (say) read only seq 1: it would write seq 2 again.
    const second = sqliteStore({ path: file, durability: "process" });
    const claim = await second.claimRun("r", takeIfFree("r"));
    expect(claim.kind).toBe("taken");
    const fence = { runId: "r", epoch: claim.kind === "taken" ? claim.lease.epoch : 0 };
    const refused = second.writeIntent(fence, stepRow("r", 2, "k2", { attempt: 2, version: null }));
    await expect(refused).rejects.toMatchObject({ code: "STORE_WRITE_FAILED", runId: "r" });
    await expect(refused).rejects.toThrow(/seq 2 is already recorded for this run \(it holds steps up to seq 3\)/);
    expect((await second.loadRun("r"))?.steps.map((s) => [s.seq, s.key, s.attempt])).toEqual([
      [1, "k1", 1],
      [2, "k2", 1],
      [3, "k3", 1],
    ]);
    // The next seq is written.
    await second.writeIntent(fence, stepRow("r", 4, "k4", { attempt: 2, version: null }));
    expect((await second.loadRun("r"))?.steps.map((s) => s.seq)).toEqual([1, 2, 3, 4]);
    await second.close();
  });

  it("rows a process still on version 9 or 10 inserts after the upgrade (a run number, no chunk) are read back by run id, in seq order", async () => {
    const file = tmpDb();
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    await engine.start(hello, undefined, { id: "new" });
    const old = new Database(file);
    const num = (old.prepare("SELECT num FROM runs WHERE id = 'new'").get() as { num: number }).num;
    // What the version-9 code writes for a step (and version 10 outside the step path): its run's number, no chunk.
    old
      .prepare(
        `INSERT INTO steps (run_num, run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage, position)
         VALUES (?, 'new', 3, 2, 'c', 'c', 'succeeded', 'idempotent', 'new:c', '3', NULL, NULL, 1, 2, 1, NULL, NULL, 2)`,
      )
      .run(num);
    // A row an older process wrote for another run under this id (one deleted by hand): not this run's.
    old
      .prepare(
        `INSERT INTO steps (run_num, run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage, position)
         VALUES (?, 'new', 4, 1, 'd', 'd', 'succeeded', 'idempotent', 'new:d', '4', NULL, NULL, 1, 2, 1, NULL, NULL, 3)`,
      )
      .run(num + 100);
    old.close();
    expect((await engine.get("new")).steps.map((s) => [s.seq, s.key])).toEqual([
      [1, "a"],
      [2, "b"],
      [3, "c"],
    ]);
    await engine.close();
    const db = new Database(file, { readonly: true });
    expect(db.prepare("SELECT seq, chunk FROM steps WHERE run_id = 'new' ORDER BY seq").all()).toEqual([
      { seq: 1, chunk: 1 },
      { seq: 2, chunk: 1 },
      { seq: 3, chunk: null },
      { seq: 4, chunk: null },
    ]);
    db.close();
  });

  it("a step an older version left cut off without a chunk: a continue settles that row, runs the step once with its key, and writes after its seq", async () => {
    const file = tmpDb();
    const made = sqliteStore({ path: file, durability: "process" });
    // The run as the older process left it: its attempt's process is gone, step a succeeded and
    // b was cut off inside its function, both rows without a chunk.
    await made.createRun(runRow("cut", { workflow: "hello", version: null, args: "null" }), attemptRow("cut", 1, { host: os.hostname(), pid: 999999999 }), {
      expiresAt: 0,
      now: NOW,
    });
    await made.close();
    const old = new Database(file);
    const insert = old.prepare(
      `INSERT INTO steps (run_num, run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage, position)
       VALUES ((SELECT num FROM runs WHERE id = 'cut'), 'cut', ?, 1, ?, ?, ?, 'idempotent', ?, ?, NULL, NULL, 1, ?, ?, NULL, NULL, ?)`,
    );
    insert.run(1, "a", "a", "succeeded", "cut:a", '{"greeting":"old"}', 2, 1, 0);
    insert.run(2, "b", "b", "intended", "cut:b", null, null, 0, 1);
    old.close();

    const calls: string[] = [];
    const counted = countedHello(calls);
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [counted] });
    expect(await engine.continue("cut")).toMatchObject({ status: "completed", value: "old world" });
    expect(calls).toEqual(["b cut:b"]);
    expect((await engine.get("cut")).steps.map((s) => [s.seq, s.key, s.status, s.attempt])).toEqual([
      [1, "a", "succeeded", 1],
      [2, "b", "failed", 1],
      [3, "b", "succeeded", 2],
    ]);
    await engine.close();
    const db = new Database(file, { readonly: true });
    // The old rows keep no chunk (the cut-off one settled in place); the continue's row is in a listed chunk.
    expect(db.prepare("SELECT seq, chunk IS NULL AS unchunked FROM steps WHERE run_id = 'cut' ORDER BY seq").all()).toEqual([
      { seq: 1, unchunked: 1 },
      { seq: 2, unchunked: 1 },
      { seq: 3, unchunked: 0 },
    ]);
    expect(chunksOf(file, "cut").at(-1)).toEqual({ n: 1, listed: true });
    db.close();
  });

  it("an attempt whose view is behind a row without a chunk has its intent refused, and a person's answer reaches such a row", async () => {
    const file = tmpDb();
    const first = sqliteStore({ path: file, durability: "process" });
    const held = (await first.createRun(runRow("r"), attemptRow("r", 1), lease)) as { epoch: number };
    await first.writeIntent({ runId: "r", epoch: held.epoch }, stepRow("r", 1, "k1", { version: null }));
    await first.close();
    const raw = new Database(file);
    // seq 2 as an older version writes it (no chunk), left escalated; the lease is free.
    raw
      .prepare(
        `INSERT INTO steps (run_num, run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage, position)
         VALUES ((SELECT num FROM runs WHERE id = 'r'), 'r', 2, 1, 'k2', 'k2', 'escalated', 'irreversible', 'r:k2', NULL, NULL, NULL, 1, 2, 1, NULL, NULL, 1)`,
      )
      .run();
    raw.prepare("UPDATE leases SET attempt = NULL WHERE run_id = 'r'").run();
    raw.close();
    const second = sqliteStore({ path: file, durability: "process" });
    // A person's answer on the escalated row (an update outside the step path) lands on it.
    await second.updateRun("r", () => ({ updateSteps: [{ seq: 2, patch: { status: "succeeded", value: '"sent"' } }], result: true }));
    const claim = await second.claimRun("r", takeIfFree("r"));
    expect(claim.kind).toBe("taken");
    const fence = { runId: "r", epoch: claim.kind === "taken" ? claim.lease.epoch : 0 };
    const refused = second.writeIntent(fence, stepRow("r", 2, "k2", { attempt: 2, version: null }));
    await expect(refused).rejects.toThrow(/seq 2 is already recorded for this run \(it holds steps up to seq 2\)/);
    await second.writeIntent(fence, stepRow("r", 3, "k3", { attempt: 2, version: null }));
    expect((await second.loadRun("r"))?.steps.map((s) => [s.seq, s.key, s.status])).toEqual([
      [1, "k1", "intended"],
      [2, "k2", "succeeded"],
      [3, "k3", "intended"],
    ]);
    await second.close();
  });

  it("a step appended by a run update goes in the run's side chunk, listed; an attempt behind it has its intent refused", async () => {
    const file = tmpDb();
    const first = sqliteStore({ path: file, durability: "process" });
    const held = (await first.createRun(runRow("r"), attemptRow("r", 1), lease)) as { epoch: number };
    await first.writeIntent({ runId: "r", epoch: held.epoch }, stepRow("r", 1, "k1", { version: null }));
    await first.updateRun("r", () => ({ appendSteps: [stepRow("r", 2, "k2", { status: "succeeded", value: '"2"', version: null })], result: true }));
    await first.close();
    const raw = new Database(file);
    const num = (raw.prepare("SELECT num FROM runs WHERE id = 'r'").get() as { num: number }).num;
    expect(raw.prepare("SELECT chunk FROM steps WHERE run_id = 'r' AND seq = 2").get()).toEqual({ chunk: -num });
    expect(raw.prepare("SELECT chunk FROM step_chunks WHERE run_num = ? ORDER BY chunk").all(num)).toEqual([{ chunk: -num }, { chunk: 1 }]);
    raw.prepare("UPDATE leases SET attempt = NULL WHERE run_id = 'r'").run();
    raw.close();
    const second = sqliteStore({ path: file, durability: "process" });
    const claim = await second.claimRun("r", takeIfFree("r"));
    const fence = { runId: "r", epoch: claim.kind === "taken" ? claim.lease.epoch : 0 };
    await expect(second.writeIntent(fence, stepRow("r", 2, "k2", { attempt: 2, version: null }))).rejects.toThrow(/seq 2 is already recorded for this run/);
    await second.writeIntent(fence, stepRow("r", 3, "k3", { attempt: 2, version: null }));
    expect((await second.loadRun("r"))?.steps.map((s) => s.seq)).toEqual([1, 2, 3]);
    await second.close();
  });
});

describe("sqlite store: upgrading from schema version 3", () => {
  const version3 = createVersion3Store;
  const v3Run = (db: Database, id: string, createdAt: number) =>
    db
      .prepare(
        `INSERT INTO runs (id, workflow, version, args, status, attempts, budget_used, created_at, updated_at) VALUES (?, 'hello', NULL, 'null', 'completed', 1, 0, ?, ?)`,
      )
      .run(id, createdAt, createdAt);
  const v3Step = (db: Database, runId: string, seq: number) =>
    db
      .prepare(
        `INSERT INTO steps (run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage)
         VALUES (?, ?, 1, ?, 's', 'succeeded', 'idempotent', ?, '1', NULL, NULL, 1, 2, 1, NULL, NULL)`,
      )
      .run(runId, seq, `s#${seq}`, `${runId}:s#${seq}`);

  it("a view someone made on steps does not block it, and still works after", async () => {
    const file = tmpDb();
    version3(file, (db) => {
      v3Run(db, "r", 1);
      v3Step(db, "r", 1);
      db.exec("CREATE VIEW done_steps AS SELECT run_id, key FROM steps WHERE status = 'succeeded'");
    });
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    await engine.start(hello, undefined, { id: "new" });
    await engine.close();
    const db = new Database(file, { readonly: true });
    expect(db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get()).toEqual({ value: String(SCHEMA_VERSION) });
    expect(db.prepare("SELECT run_id, key FROM done_steps ORDER BY run_id, key").all()).toEqual([
      { run_id: "new", key: "a" },
      { run_id: "new", key: "b" },
      { run_id: "r", key: "s#1" },
    ]);
    db.close();
  });

  it("a step row whose run row is gone is kept (unnumbered), not dropped", async () => {
    const file = tmpDb();
    version3(file, (db) => {
      v3Run(db, "r", 1);
      v3Step(db, "r", 1);
      v3Step(db, "orphan", 1);
    });
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    expect(await engine.get("r")).toMatchObject({ status: "completed" });
    await engine.close();
    const db = new Database(file, { readonly: true });
    expect(db.prepare("SELECT run_id, run_num FROM steps ORDER BY run_id").all()).toEqual([
      { run_id: "orphan", run_num: null },
      { run_id: "r", run_num: 1 },
    ]);
    db.close();
  });

  it("an orphan step row (its run row deleted by hand) is never read as a step of a later run with the same id", async () => {
    const file = tmpDb();
    version3(file, (db) => {
      db.prepare(
        `INSERT INTO steps (run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage)
         VALUES ('reused', 1, 1, 'a', 'a', 'succeeded', 'idempotent', 'reused:a', '{"greeting":"stale"}', NULL, NULL, 1, 2, 1, NULL, NULL)`,
      ).run();
    });
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    expect(await engine.start(hello, undefined, { id: "reused" })).toMatchObject({ status: "completed", value: "hello world" });
    expect((await engine.get("reused")).steps.map((s) => [s.seq, s.key, s.value])).toEqual([
      [1, "a", { greeting: "hello" }],
      [2, "b", "hello world"],
    ]);
    await engine.close();
    // The orphan is kept, in a chunk of its own that no run lists.
    const db = new Database(file, { readonly: true });
    expect(
      db
        .prepare(
          "SELECT run_num, chunk < 0 AS own, (SELECT count(*) FROM step_chunks WHERE step_chunks.chunk = steps.chunk) AS listed FROM steps WHERE value LIKE '%stale%'",
        )
        .all(),
    ).toEqual([{ run_num: null, own: 1, listed: 0 }]);
    db.close();
  });

  it("rows a process still on version 3 inserts after the upgrade: the run gets its number, and its steps (with none) are read back by run id", async () => {
    const file = tmpDb();
    version3(file);
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [hello] });
    await engine.start(hello, undefined, { id: "new" });
    // What the version-3 code writes: no run number, no step run number.
    const old = new Database(file);
    v3Run(old, "old", Date.now());
    v3Step(old, "old", 1);
    old.close();
    expect((await engine.get("old")).steps.map((s) => s.key)).toEqual(["s#1"]);
    await engine.start(hello, undefined, { id: "newer" });
    await engine.close();
    const db = new Database(file, { readonly: true });
    expect(db.prepare("SELECT id, num FROM runs ORDER BY num").all()).toEqual([
      { id: "new", num: 1 },
      { id: "old", num: 2 },
      { id: "newer", num: 3 },
    ]);
    expect(db.prepare("SELECT run_id, run_num, chunk FROM steps WHERE run_id = 'old'").all()).toEqual([{ run_id: "old", run_num: null, chunk: null }]);
    db.close();
  });
});

describe("sqlite store: schema 13 (streams)", () => {
  it("a schema 12 file is upgraded in place by the first writer: a run started there writes and reads its stream", async () => {
    const file = tmpDb();
    const fresh = sqliteStore({ path: file });
    await fresh.createRun(runRow("before"), attemptRow("before", 1), { expiresAt: NOW, now: NOW });
    await fresh.close();
    // As schema 12 left it.
    const old = new Database(file);
    old.exec("DROP TABLE stream_records");
    old.prepare("update meta set value = '12' where key = 'schema_version'").run();
    old.close();
    const workflow = defineWorkflow({
      name: "streams-after-upgrade",
      async run(ctx) {
        ctx.stream("out").write("hello");
        return null;
      },
    });
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [workflow] });
    expect((await engine.start(workflow, undefined, { id: "after" })).status).toBe("completed");
    const items = [];
    for await (const item of engine.readStream("after", "out")) items.push(item);
    expect(items).toEqual([{ type: "chunk", offset: 0, chunk: "hello", seq: 0 }]);
    await engine.close();
    const db = new Database(file, { readonly: true });
    expect(db.prepare("select value from meta where key = 'schema_version'").get()).toEqual({ value: String(SCHEMA_VERSION) });
    db.close();
  });
});
