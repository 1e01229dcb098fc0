// Flow control across processes: worker processes on one SQLite file and on one Postgres schema
// share a concurrency limit of 2 per key; one worker is SIGKILLed mid-way. The limit is never
// exceeded (each step's start and end, from a ledger every process appends to; a killed
// worker's open steps end when it was killed), and every run completes.
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/entries/index.js";
import { postgresStore } from "../../src/entries/postgres.js";
import { sqliteStore } from "../../src/store/sqlite/store.js";
import { spawnNode } from "../helpers/child.js";
import { PG_URL } from "../helpers/pg.js";
import { STORE_PLACES } from "../helpers/stores.js";
import { tmpDb } from "../helpers/tmp.js";

const FIXTURE = new URL("./fixtures/flow-worker.mjs", import.meta.url).pathname;
const RUNS = 24;
const LIMIT = 2;

interface Entry {
  event: "start" | "end";
  run: string;
  key: string;
  pid: number;
  t: number;
}

/** The most steps of one key whose intervals overlap at any moment. */
function maxOverlap(entries: Entry[], killed: Map<number, number>): Map<string, number> {
  const intervals = new Map<string, Array<[number, number]>>();
  const open = new Map<string, Entry>();
  for (const e of entries) {
    const id = `${e.run}@${e.pid}`;
    if (e.event === "start") open.set(id, e);
    else {
      const start = open.get(id)!;
      open.delete(id);
      intervals.set(e.key, [...(intervals.get(e.key) ?? []), [start.t, e.t]]);
    }
  }
  for (const start of open.values()) {
    const end = killed.get(start.pid);
    if (end === undefined) throw new Error(`step of ${start.run} in live process ${start.pid} never ended`);
    intervals.set(start.key, [...(intervals.get(start.key) ?? []), [start.t, end]]);
  }
  const most = new Map<string, number>();
  for (const [key, list] of intervals) {
    // Ends before starts at the same instant: a step that ended at t and one that began at t did not overlap.
    const points = list.flatMap(([a, b]) => [
      [a, 1],
      [b, -1],
    ]) as Array<[number, number]>;
    points.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    let now = 0;
    let max = 0;
    for (const [, d] of points) max = Math.max(max, (now += d));
    most.set(key, max);
  }
  return most;
}

describe.each(STORE_PLACES)("flow control across processes (%s)", (name, place) => {
  it(`3 workers and a starter, ${RUNS} runs over 3 keys at most ${LIMIT} at once each, one worker SIGKILLed: never over the limit, every run completes`, async () => {
    const where = place();
    const ledger = tmpDb("ledger.jsonl");
    const env = { LEDGER: ledger, STEP_MS: "120", STEPLOG_FAULT: "" };
    const workers = [0, 1, 2].map(() => spawnNode(FIXTURE, [where, "work"], { env }));
    await Promise.all(workers.map((w) => w.ready));
    const starter = await spawnNode(FIXTURE, [where, "start", String(RUNS)], { env }).done;
    expect(starter.code, starter.stderr).toBe(0);
    expect(starter.report.statuses.filter((s: string) => s !== "completed" && s !== "waiting" && s !== "running")).toEqual([]);

    // Kill one worker once it is inside a step.
    const victim = workers[0]!;
    const started = () =>
      fs.existsSync(ledger) &&
      fs
        .readFileSync(ledger, "utf8")
        .split("\n")
        .some((l) => l.includes(`"pid":${victim.child.pid}`) && l.includes('"start"'));
    for (let i = 0; i < 400 && !started(); i++) await new Promise((r) => setTimeout(r, 10));
    const killed = new Map<number, number>();
    if (started()) {
      killed.set(victim.child.pid!, Date.now());
      victim.child.kill("SIGKILL");
    } else victim.child.kill("SIGKILL");

    const store = where.startsWith("pg:") ? postgresStore({ connectionString: PG_URL!, schema: where.slice(3) }) : sqliteStore({ path: where });
    const engine = createEngine({ store });
    try {
      for (let i = 0; i < 600; i++) {
        const done = await engine.list({ workflow: "limited", status: "completed" });
        if (done.length === RUNS) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const runs = await engine.list({ workflow: "limited" });
      expect(runs.filter((r) => r.status !== "completed").map((r) => `${r.id}:${r.status}`)).toEqual([]);
      expect(runs).toHaveLength(RUNS);
    } finally {
      await engine.close();
      for (const w of workers.slice(1)) w.child.kill("SIGTERM");
      await Promise.all(workers.slice(1).map((w) => w.done));
    }
    const entries = fs
      .readFileSync(ledger, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Entry);
    const most = maxOverlap(entries, killed);
    expect([...most.keys()].sort()).toEqual(["k0", "k1", "k2"]);
    for (const [key, max] of most) expect(max, `key ${key} (${name})`).toBeLessThanOrEqual(LIMIT);
    // The limit was reached (the test could not pass by running one at a time).
    expect(Math.max(...most.values())).toBe(LIMIT);
    // Every run's step ended at least once; only a step cut off by the kill ran twice.
    const ends = new Map<string, number>();
    for (const e of entries) if (e.event === "end") ends.set(e.run, (ends.get(e.run) ?? 0) + 1);
    expect(ends.size).toBe(RUNS);
  });
});
