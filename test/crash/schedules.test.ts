// Schedules across processes: three worker processes (engine.work) on one SQLite file, with a
// workflow scheduled every second; one is SIGKILLed mid-way. Each tick in the window has exactly
// one run, created by one process, whose step ran once in that first attempt; the runs the killed
// worker was in the middle of are taken up by the others (autoResume) and complete.
// (The fixture imports dist/: run `npm run build` first when calling vitest directly.)
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { spawnNode } from "../helpers/child.js";
import { inspectDb } from "../helpers/inspect.js";
import { tmpDb } from "../helpers/tmp.js";
import { distBuilt } from "../helpers/worker.js";

const WORKER = fileURLToPath(new URL("./fixtures/schedule-worker.mjs", import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const tickId = (ms: number) => `every-second@${new Date(ms).toISOString().slice(0, 19)}Z`;

describe.runIf(distBuilt())("a schedule, three worker processes, one SQLite file", () => {
  it("each tick in the window has exactly one run, even with a worker SIGKILLed mid-way", async () => {
    const file = tmpDb();
    const workers = [0, 1, 2].map(() => spawnNode(WORKER, [file], { env: { STEP_DELAY_MS: "300" } }));
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

    const db = inspectDb(file);
    expect(db.integrity).toBe("ok");
    const ledger = fs
      .readFileSync(`${file}.ledger`, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { runId: string; attempt: number; pid: number });
    const creators = new Set<number>();
    for (const id of window) {
      const run = db.runs.find((r) => r.id === id);
      expect(run, `tick ${id} has no run`).toBeDefined();
      // Completed: a run the killed worker was in was taken up by another.
      expect(run!.status, id).toBe("completed");
      const first = db.attempts.find((a) => a.runId === id && a.number === 1)!;
      creators.add(first.pid);
      const calls = ledger.filter((l) => l.runId === id && l.attempt === 1);
      // Its step ran once in the attempt that created it (none only if the kill came before the step).
      if (first.pid === killed.child.pid) expect(calls.length).toBeLessThanOrEqual(1);
      else expect(calls.map((c) => c.pid)).toEqual([first.pid]);
    }
    // Later attempts only for runs the killed worker created or held.
    for (const call of ledger.filter((l) => l.attempt > 1)) {
      const before = db.attempts.filter((a) => a.runId === call.runId && a.number < call.attempt);
      expect(before.some((a) => a.pid === killed.child.pid && a.ending === null)).toBe(true);
    }
    // Every run id has the schedule's form, and was created by one of the three workers (whichever came first).
    for (const run of db.runs) expect(run.id).toMatch(/^every-second@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const pids = workers.map((w) => w.child.pid);
    for (const pid of creators) expect(pids).toContain(pid);
  });
});
