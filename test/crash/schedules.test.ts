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

const openEngine = (where: string) =>
  createEngine({ store: where.startsWith("pg:") ? postgresStore({ connectionString: PG_URL!, schema: where.slice(3) }) : sqliteStore({ path: where }) });

/** Every run of the schedule with its attempts (number, pid, ending as engine.get shows it), read through `engine`. */
async function runsOf(engine: ReturnType<typeof openEngine>) {
  const runs = [];
  for (const summary of await engine.list({ workflow: "every-second" })) {
    const view = await engine.get(summary.id);
    runs.push({ id: view.id, status: view.status, attempts: view.attempts.map((a) => ({ number: a.number, pid: a.pid, ending: a.ending })) });
  }
  return runs;
}

/** Every run of the schedule, read through an engine of its own. */
async function readRuns(where: string) {
  const engine = openEngine(where);
  try {
    return await runsOf(engine);
  } finally {
    await engine.close();
  }
}

/**
 * Wait (up to `ms`) until each tick of `window` has a run, in the hands of a worker still alive:
 * completed, or its last attempt not the killed worker's. Only then are the live workers told to
 * stop (they stop claiming, and finish what they hold).
 */
async function untilTaken(where: string, window: string[], killedPid: number | undefined, ms = 20_000): Promise<void> {
  const engine = openEngine(where);
  const started = Date.now();
  try {
    for (;;) {
      const runs = await runsOf(engine);
      const missing = window.filter((id) => {
        const run = runs.find((r) => r.id === id);
        return !run || (run.status !== "completed" && run.attempts.at(-1)?.pid === killedPid);
      });
      if (missing.length === 0) return;
      if (Date.now() - started > ms)
        throw new Error(`after ${ms} ms, these ticks still have no run or only the killed worker's: ${missing.join(", ")}\n${JSON.stringify(runs)}`);
      await sleep(100);
    }
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
    // The ticks that came due once every worker was up, until half a second before the cut-off.
    const window: string[] = [];
    for (let t = Math.ceil(from / 1000) * 1000; t <= to - 500; t += 1000) window.push(tickId(t));
    expect(window.length).toBeGreaterThanOrEqual(4);
    // The workers are told to stop only once each of those ticks has a run held by a live worker
    // (on a loaded machine the last may come late); whether each is complete and ran once is checked below.
    await untilTaken(where, window, killed.child.pid);
    for (const w of workers.slice(1)) w.child.kill("SIGTERM");
    const outcomes = await Promise.all(workers.map((w) => w.done));
    expect(outcomes[0]!.signal).toBe("SIGKILL");
    for (const o of outcomes.slice(1)) expect({ code: o.code, stderr: o.stderr }).toEqual({ code: 0, stderr: "" });

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
  }, 60_000);
});
