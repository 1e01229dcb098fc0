// The SQLite store on each driver, in real processes: `import "steplog"` loads none of them; "auto"
// falls back to the runtime's built-in SQLite where better-sqlite3 does not load; a run cut off
// by SIGKILL continues on node:sqlite (Node.js 22, 24, 26), bun:sqlite (Bun) and Deno's
// node:sqlite without repeating finished steps; and a file one driver wrote is continued and read
// by another. The other runtimes come from the runtimes cache (test/helpers/runtimes.ts); a test
// whose runtime is not there is skipped, naming it.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { spawnNode } from "../helpers/child.js";
import { inspectDb } from "../helpers/inspect.js";
import { canLoad, TEST_SQLITE_DRIVER } from "../helpers/sqlite-driver.js";
import { needRuntime, RUNTIMES_CACHE, runtimeCommand, skipWithout, type RuntimeName } from "../helpers/runtimes.js";
import { tmpDb } from "../helpers/tmp.js";
import { readLedger, runWorker } from "../helpers/worker.js";

const LOADS = fileURLToPath(new URL("./fixtures/driver-loads.mjs", import.meta.url));
const NO_NATIVE = fileURLToPath(new URL("./fixtures/no-native-sqlite.cjs", import.meta.url));

/** The effects the ledger holds, as step:attempt. */
const effects = (file: string) => readLedger(file).map((e) => `${e.step}:${e.attempt}`);

/** SIGKILL inside step two's effect, then a continue: one and three ran once, two twice under one key (it is idempotent). */
async function crashAndContinue(file: string, env: Record<string, string>, runtime?: RuntimeName) {
  const under = runtime ? { runtime: needRuntime(runtime) } : {};
  const cut = await runWorker(file, "r", "start", { ...env, CRASH_IN_EFFECT: "two" }, undefined, under);
  expect(cut.signal, cut.stdout + cut.stderr).toBe("SIGKILL");
  const done = await runWorker(file, "r", "continue", env, undefined, under);
  expect(done.report?.result, done.stdout + done.stderr).toMatchObject({ status: "completed", attempt: 2 });
  expect(effects(file)).toEqual(["one:1", "two:1", "two:2", "three:2"]);
  expect(
    new Set(
      readLedger(file)
        .filter((e) => e.step === "two")
        .map((e) => e.idempotencyKey),
    ).size,
  ).toBe(1);
}

const missing = (name: RuntimeName) => skipWithout(name);
const skipNote = (name: RuntimeName) => (runtimeCommand(name) ? "" : ` (${name} is not in ${RUNTIMES_CACHE}; .ci/runtimes.sh fetch fetches it)`);

describe("SQLite drivers in real processes", () => {
  it("import of steplog loads no SQLite driver; the first open of a store loads one", async () => {
    const done = await spawnNode(LOADS, [tmpDb()]).done;
    expect(done.report, done.stdout + done.stderr).toMatchObject({ atImport: false, driver: TEST_SQLITE_DRIVER, status: "completed" });
    if (TEST_SQLITE_DRIVER === "better-sqlite3") expect(done.report.afterOpen).toBe(true);
  });

  for (const runtime of ["node22", "node24", "node26"] as const) {
    it.skipIf(missing(runtime))(
      `${runtime}, better-sqlite3 not loading: "auto" uses node:sqlite with no error; a run SIGKILLed mid-step continues without repeating finished steps${skipNote(runtime)}`,
      async () => {
        const file = tmpDb();
        const env = { NODE_OPTIONS: `--require ${NO_NATIVE}` };
        const done = await spawnNode(LOADS, [tmpDb()], { runtime: needRuntime(runtime), env }).done;
        expect(done.report, done.stdout + done.stderr).toMatchObject({ driver: "node:sqlite", status: "completed" });
        await crashAndContinue(file, env, runtime);
      },
    );
  }

  it.skipIf(missing("node24") || !canLoad("better-sqlite3"))(
    `a file better-sqlite3 wrote (Node.js 20) is continued by node:sqlite (Node.js 24), and better-sqlite3 reads and writes it after${skipNote("node24")}`,
    async () => {
      const file = tmpDb();
      const cut = await runWorker(file, "r", "start", { SQLITE_DRIVER: "better-sqlite3", CRASH_IN_EFFECT: "two" });
      expect(cut.signal, cut.stdout + cut.stderr).toBe("SIGKILL");
      const done = await runWorker(file, "r", "continue", { SQLITE_DRIVER: "node:sqlite" }, undefined, { runtime: needRuntime("node24") });
      expect(done.report?.result, done.stdout + done.stderr).toMatchObject({ status: "completed", attempt: 2 });
      expect(effects(file)).toEqual(["one:1", "two:1", "two:2", "three:2"]);
      const again = await runWorker(file, "s", "start", { SQLITE_DRIVER: "better-sqlite3" });
      expect(again.report?.result, again.stdout + again.stderr).toMatchObject({ status: "completed" });
      const db = inspectDb(file);
      expect(db.integrity).toBe("ok");
      expect(db.steps.map((s) => `${s.runId}:${s.key}:${s.status}`)).toEqual([
        "r:one:succeeded",
        "r:two:failed", // the attempt cut off inside it; the continue's row follows
        "r:two:succeeded",
        "r:three:succeeded",
        "s:one:succeeded",
        "s:two:succeeded",
        "s:three:succeeded",
      ]);
    },
  );

  it.skipIf(missing("bun"))(`Bun: bun:sqlite (asked for, and by "auto"); a run SIGKILLed mid-step continues${skipNote("bun")}`, async () => {
    const done = await spawnNode(LOADS, [tmpDb()], { runtime: needRuntime("bun") }).done;
    expect(done.report, done.stdout + done.stderr).toMatchObject({ driver: "bun:sqlite", status: "completed" });
    await crashAndContinue(tmpDb(), { SQLITE_DRIVER: "bun:sqlite" }, "bun");
  });

  it.skipIf(missing("deno"))(`Deno: "auto" is node:sqlite; a run SIGKILLed mid-step continues${skipNote("deno")}`, async () => {
    const done = await spawnNode(LOADS, [tmpDb()], { runtime: needRuntime("deno") }).done;
    expect(done.report, done.stdout + done.stderr).toMatchObject({ driver: "node:sqlite", status: "completed" });
    await crashAndContinue(tmpDb(), {}, "deno");
  });
});
