// Child runs under real crashes: a process SIGKILLed between the parent's record of the child's
// id and the child's creation, inside the child's step, and between the child's ending and its
// parent's wake-up, and after a caught CHILD_FAILED's branch (the continue throws it again with
// its cause). Each continue finds the same child; no succeeded step is called again. And a
// cancel with its children from another process while parent and child run. On SQLite and, with
// STEPLOG_PG_URL, on Postgres (each process a separate client).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/entries/index.js";
import { postgresStore } from "../../src/entries/postgres.js";
import { sqliteStore } from "../../src/store/sqlite/store.js";
import { spawnNode } from "../helpers/child.js";
import { PG_URL } from "../helpers/pg.js";
import { STORE_PLACES } from "../helpers/stores.js";
import { tmpDb } from "../helpers/tmp.js";
import { until } from "../helpers/until.js";

const FIXTURE = new URL("./fixtures/children.mjs", import.meta.url).pathname;

describe.each(STORE_PLACES)("child runs under SIGKILL (%s)", (_name, place) => {
  function setup() {
    const where = place();
    const ledger = `${tmpDb("ledger.jsonl")}`;
    const run = (mode: string, env: Record<string, string> = {}) => {
      const out = spawnSync(process.execPath, [FIXTURE, where, mode], {
        env: { ...process.env, STEPLOG_FAULT: "", LEDGER: ledger, ...env },
        encoding: "utf8",
        timeout: 30_000,
      });
      const last = out.stdout
        .trim()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .at(-1);
      return { signal: out.signal, stderr: out.stderr, out: last ? JSON.parse(last) : undefined };
    };
    // Only whole lines: a process may be writing the last one while the test looks.
    const calls = () =>
      fs.existsSync(ledger)
        ? fs
            .readFileSync(ledger, "utf8")
            .split("\n")
            .slice(0, -1)
            .map((l) => JSON.parse(l) as { run: string; step: string; key: string })
        : [];
    return { run, calls, where, ledger };
  }

  it("killed after the parent recorded the child's id, before the child existed: the continue starts that child, once", () => {
    const { run, calls } = setup();
    expect(run("start", { STEPLOG_FAULT: "after-intent@review" }).signal).toBe("SIGKILL");
    expect(calls().map((c) => `${c.run}:${c.step}`)).toEqual(["p:prepare"]);
    const next = run("continue");
    expect(next.out.report, next.stderr).toMatchObject({ status: "completed", value: { pr: 7, lint: "lint ok" } });
    expect(next.out.runs.map((r: { id: string }) => r.id).sort()).toEqual(["p", "p/review"]);
    expect(calls().map((c) => `${c.run}:${c.step}`)).toEqual(["p:prepare", "p/review:lint", "p/review:judge", "p:ship"]);
  });

  it("killed inside the child's step: the parent's continue takes up the same child, re-driving only that step with its key", () => {
    const { run, calls } = setup();
    expect(run("start", { STEPLOG_FAULT: "after-fn@judge" }).signal).toBe("SIGKILL");
    const next = run("continue");
    expect(next.out.report, next.stderr).toMatchObject({ status: "completed", value: { pr: 7 } });
    expect(next.out.runs).toHaveLength(2);
    expect(calls().map((c) => `${c.run}:${c.step}:${c.key}`)).toEqual([
      "p:prepare:p:prepare",
      "p/review:lint:p/review:lint",
      "p/review:judge:p/review:judge",
      "p/review:judge:p/review:judge",
      "p:ship:p:ship",
    ]);
  });

  it("killed between the child's ending and the parent's wake-up: a worker finds the parent and finishes it", () => {
    const { run, calls } = setup();
    const started = run("start", { CHILD_ARGS: JSON.stringify({ wait: true }) });
    expect(started.out.report, started.stderr).toMatchObject({ status: "waiting", waitingFor: { kind: "child", child: "p/review" } });
    // The child completes in a process killed before it wakes the parent.
    expect(run("send-child", { STEPLOG_FAULT: "before-wake@p/review" }).signal).toBe("SIGKILL");
    const worked = run("work");
    expect(worked.out.report, worked.stderr).toEqual([{ id: "p", status: "completed" }]);
    expect(worked.out.runs).toEqual(
      expect.arrayContaining([
        { id: "p", status: "completed" },
        { id: "p/review", status: "completed" },
      ]),
    );
    expect(calls().map((c) => `${c.run}:${c.step}`)).toEqual(["p:prepare", "p/review:lint", "p/review:judge", "p:ship"]);
  });

  it("killed while the parent parks on its waiting child: the next continue waits again for the same child", () => {
    const { run, calls } = setup();
    expect(run("start", { CHILD_ARGS: JSON.stringify({ wait: true }), STEPLOG_FAULT: "before-end@review" }).signal).toBe("SIGKILL");
    const again = run("continue");
    expect(again.out.report, again.stderr).toMatchObject({ status: "waiting", waitingFor: { kind: "child", child: "p/review" } });
    const child = run("send-child");
    expect(child.out.report, child.stderr).toMatchObject({ id: "p/review", status: "completed" });
    const done = run("continue");
    expect(done.out.report, done.stderr).toMatchObject({ status: "completed", value: { pr: 7 } });
    expect(calls().map((c) => `${c.run}:${c.step}`)).toEqual(["p:prepare", "p/review:lint", "p/review:judge", "p:ship"]);
  });

  it("killed after a caught CHILD_FAILED's branch: the continue throws it again with the child's error as its cause, the same branch taken", () => {
    const { run, calls } = setup();
    expect(run("start-branching", { STEPLOG_FAULT: "after-fn@publish" }).signal).toBe("SIGKILL");
    const next = run("continue");
    expect(next.out.report, next.stderr).toMatchObject({ status: "completed", value: "published" });
    expect(calls().map((c) => (c.step === "caught" ? `${c.run}:caught:${c.key}` : `${c.run}:${c.step}`))).toEqual([
      "p/review:lint",
      "p:caught:judge cannot read #11",
      "p:ask-a-human",
      "p:publish",
      "p:caught:judge cannot read #11",
      "p:publish",
    ]);
  });

  it("cancel(parent, { children: true }) from another process while parent and child run there: both end, the child's next step never runs", async () => {
    const { calls, where, ledger } = setup();
    // A short lease: the fenced-out attempts learn of the cancel at their next renewal.
    const running = spawnNode(FIXTURE, [where, "start-slow"], { env: { STEPLOG_FAULT: "", LEDGER: ledger, LEASE_MS: "600" } });
    await until("the child's long step to run", () => calls().some((c) => c.step === "read"));
    const store = where.startsWith("pg:") ? postgresStore({ connectionString: PG_URL!, schema: where.slice(3) }) : sqliteStore({ path: where });
    const engine = createEngine({ store });
    try {
      expect(await engine.cancel("p", { children: true })).toBe("cancelled");
      const ended = await running.done;
      expect(ended.code, ended.stderr).toBe(0);
      // Well before the child's step would have ended by itself (15 s).
      expect(ended.ms).toBeLessThan(10_000);
      expect(ended.report.report).toMatchObject({ id: "p", runStatus: "cancelled", error: { code: "LEASE_LOST" } });
      expect(await engine.get("p/review")).toMatchObject({ status: "cancelled", error: { code: "RUN_CANCELLED" } });
      expect((await engine.get("p/review")).error!.message).toContain('its parent run "p" was cancelled');
      expect(calls().map((c) => `${c.run}:${c.step}`)).toEqual(["p/review:read"]);
      const parent = await engine.get("p");
      expect(parent.status).toBe("cancelled");
      expect(parent.steps.map((s) => [s.key, s.status])).toEqual([["review", "intended"]]);
    } finally {
      await engine.close();
    }
  });
});
