// A worker with full slots takes the runs whose owner is gone before new due runs, with real
// processes on one SQLite file and on one Postgres schema: a worker is SIGKILLed inside the steps
// of two runs, eight new runs come due, then a second worker (concurrency 1) starts. Its first
// two steps are the two orphaned runs, the one claimed (last heard from) first leading; the new
// runs follow. The order of the claims is read from a ledger each step appends to as it begins.
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

const FIXTURE = new URL("./fixtures/order-worker.mjs", import.meta.url).pathname;
const NEW_RUNS = Array.from({ length: 8 }, (_, i) => `new-${i}`);

interface Entry {
  run: string;
  pid: number;
  t: number;
}

function readLedger(file: string): Entry[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.endsWith("}"))
    .map((line) => JSON.parse(line) as Entry);
}

describe.each(STORE_PLACES)("the order a worker takes runs in, across processes (%s)", (_name, place) => {
  it("runs whose owner was SIGKILLed are claimed before a backlog of new due runs, longest gone first", async () => {
    const where = place();
    const ledger = tmpDb("ledger.jsonl");
    const env = { LEDGER: ledger, STEPLOG_FAULT: "" };
    const due = async (...ids: string[]) => {
      const starter = await spawnNode(FIXTURE, [where, "due", ...ids], { env }).done;
      expect(starter.code, starter.stderr).toBe(0);
    };
    const began = (run: string, pid: number) => readLedger(ledger).some((e) => e.run === run && e.pid === pid);

    // The victim takes "gone-1", then "gone-2" (due only once "gone-1" runs), and hangs in both steps.
    await due("gone-1");
    const victim = spawnNode(FIXTURE, [where, "work", "2"], { env: { ...env, STEP_MS: "600000" } });
    await victim.ready;
    await until("the victim to begin gone-1's step", () => began("gone-1", victim.child.pid!));
    await due("gone-2");
    await until("the victim to begin gone-2's step", () => began("gone-2", victim.child.pid!));
    victim.child.kill("SIGKILL");
    expect((await victim.done).signal).toBe("SIGKILL");

    // A backlog of new due runs, then a worker with one slot.
    await due(...NEW_RUNS);
    const worker = spawnNode(FIXTURE, [where, "work", "1"], { env: { ...env, STEP_MS: "30" } });
    const store = where.startsWith("pg:") ? postgresStore({ connectionString: PG_URL!, schema: where.slice(3) }) : sqliteStore({ path: where });
    const engine = createEngine({ store });
    try {
      await until("every run to complete", async () => (await engine.list({ workflow: "job", status: "completed" })).length === NEW_RUNS.length + 2, 60_000);
    } finally {
      await engine.close();
      worker.child.kill("SIGTERM");
    }
    const ended = await worker.done;
    expect(ended.code, ended.stderr).toBe(0);

    const claims = readLedger(ledger)
      .filter((e) => e.pid === worker.child.pid)
      .map((e) => e.run);
    expect(claims.slice(0, 2)).toEqual(["gone-1", "gone-2"]);
    expect(claims.slice(2).sort()).toEqual([...NEW_RUNS].sort());
  }, 90_000);
});
