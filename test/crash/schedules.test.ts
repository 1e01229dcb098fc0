// Schedules across processes: three worker processes (engine.work) on one SQLite file, and on one
// Postgres schema (each process its own client), with a workflow scheduled every second; one is
// SIGKILLed mid-way. Each tick in the window has exactly
// one run, created by one process, whose step ran once in that first attempt; the runs the killed
// worker was in the middle of are taken up by the others (autoResume) and complete.
// (The fixture imports dist/: run `npm run build` first when calling vitest directly.)
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/entries/index.js";
import { postgresStore } from "../../src/entries/postgres.js";
import { sqliteStore } from "../../src/store/sqlite/store.js";
import { spawnNode } from "../helpers/child.js";
import { inspectDb } from "../helpers/inspect.js";
import { PG_URL } from "../helpers/pg.js";
import { STORE_PLACES } from "../helpers/stores.js";
import { tmpDb } from "../helpers/tmp.js";
import { distBuilt } from "../helpers/worker.js";

const WORKER = fileURLToPath(new URL("./fixtures/schedule-worker.mjs", import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const tickId = (ms: number) => `every-second@${new Date(ms).toISOString().slice(0, 19)}Z`;

/** Every run of the schedule with its attempts (number, pid, ending as engine.get shows it), read through the engine. */
async function readRuns(where: string) {
  const store = where.startsWith("pg:") ? postgresStore({ connectionString: PG_URL!, schema: where.slice(3) }) : sqliteStore({ path: where });
  const engine = createEngine({ store });
  try {
    const runs = [];
    for (const summary of await engine.list({ workflow: "every-second" })) {
      const view = await engine.get(summary.id);
      runs.push({ id: view.id, status: view.status, attempts: view.attempts.map((a) => ({ number: a.number, pid: a.pid, ending: a.ending })) });
    }
    return runs;
  } finally {
    await engine.close();
  }
}

describe.runIf(distBuilt()).each(STORE_PLACES)("a schedule, three worker processes, one %s store", (_name, place) => {
  it("each tick in the window has exactly one run, even with a worker SIGKILLed mid-way", async () => {
    const where = place();
    const file = where.startsWith("pg:") ? tmpDb("ledger") : where;
    const workers = [0, 1, 2].map(() => spawnNode(WORKER, [where], { env: { STEP_DELAY_MS: "300", LEDGER_BASE: file } }));
    await Promise.all(workers.map((w) => w.ready));
    const from = Date.now();
    await sleep(1700);
    const killed = workers[0]!;
    killed.child.kill("SIGKILL");
    await sleep(3000);
    const to = Date.now();
    for (const w of workers.slice(1)) w.child.kill("SIGTERM");
    const outcomes = await Promise.all(workers.map((w) => w.done));
    expect(outcomes[0]!.signal).toBe("SIGKILL");
    for (const o of outcomes.slice(1)) expect({ code: o.code, stderr: o.stderr }).toEqual({ code: 0, stderr: "" });

    // The ticks that came due once every worker was up, until half a second before they were told to stop.
    const window: string[] = [];
    for (let t = Math.ceil(from / 1000) * 1000; t <= to - 500; t += 1000) window.push(tickId(t));
    expect(window.length).toBeGreaterThanOrEqual(4);

    if (!where.startsWith("pg:")) expect(inspectDb(file).integrity).toBe("ok");
    const runs = await readRuns(where);
    const ledger = fs
      .readFileSync(`${file}.ledger`, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { runId: string; attempt: number; pid: number });
    const creators = new Set<number>();
    for (const id of window) {
      const run = runs.find((r) => r.id === id);
      expect(run, `tick ${id} has no run`).toBeDefined();
      // Completed: a run the killed worker was in was taken up by another.
      expect(run!.status, id).toBe("completed");
      const first = run!.attempts.find((a) => a.number === 1)!;
      creators.add(first.pid);
      const calls = ledger.filter((l) => l.runId === id && l.attempt === 1);
      // Its step ran once in the attempt that created it (none only if the kill came before the step).
      if (first.pid === killed.child.pid) expect(calls.length).toBeLessThanOrEqual(1);
      else expect(calls.map((c) => c.pid)).toEqual([first.pid]);
    }
    // Later attempts only for runs the killed worker created or held.
    for (const call of ledger.filter((l) => l.attempt > 1)) {
      const before = runs.find((r) => r.id === call.runId)!.attempts.filter((a) => a.number < call.attempt);
      expect(before.some((a) => a.pid === killed.child.pid && (a.ending === null || a.ending === "interrupted"))).toBe(true);
    }
    // Every run id has the schedule's form, and was created by one of the three workers (whichever came first).
    for (const run of runs) expect(run.id).toMatch(/^every-second@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const pids = workers.map((w) => w.child.pid);
    for (const pid of creators) expect(pids).toContain(pid);
  });
});
