// engine.list a page at a time (`after` the last run shown, `limit`) and engine.count under the
// same filter, on every store: every run reached once, in order, ties by id; `interrupted` (a
// running row whose owner is gone) judged on the way, so pages and counts stay honest.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, type Engine, type ListFilter } from "../../src/entries/index.js";
import { currentOwner } from "../../src/ownership/owner.js";
import type { OwnerRow, RunStatus, Store } from "../../src/store/types.js";
import { EVERY_STORE } from "../helpers/stores.js";

const noop = defineWorkflow({
  name: "noop",
  async run(ctx) {
    return ctx.step("only", async () => "done");
  },
});

const T = Date.UTC(2031, 0, 1);
const hour = 3_600_000;

/** A run as a store holds it: `status`, created at `createdAt`, its attempt 1 by `owner` (ended unless running). */
async function put(store: Store, id: string, workflow: string, status: RunStatus, createdAt: number, owner: OwnerRow): Promise<void> {
  const lease = await store.createRun(
    {
      ...{ id, workflow, version: null, args: '{"$type":"undefined"}', status, attempts: 1, budgetUsed: 1, source: null, deadline: null },
      ...{ value: null, error: null, waitingFor: null, wakeAt: null, parent: null, createdAt, updatedAt: createdAt },
    },
    { runId: id, number: 1, ...owner, startedAt: createdAt, endedAt: null, ending: null, fromStep: null, forced: false, error: null },
    { expiresAt: Date.now() + hour, now: Date.now() },
  );
  if ("exists" in lease) throw new Error("exists");
  if (status !== "running") await store.endAttempt(lease, { attempt: 1, ending: "failed", endedAt: createdAt, error: null, run: { status } });
}

/** Every page of `size` under `filter`, each after the last run of the one before; fails rather than loop. */
async function pages(engine: Engine, filter: ListFilter, size: number): Promise<string[][]> {
  const all: string[][] = [];
  for (let after: string | undefined; all.length < 100;) {
    const page = await engine.list({ ...filter, limit: size, ...(after !== undefined ? { after } : {}) });
    if (page.length === 0) return all;
    all.push(page.map((r) => r.id));
    after = page.at(-1)!.id;
  }
  throw new Error(`pages without end: ${JSON.stringify(all.slice(0, 3))}`);
}

describe.each(EVERY_STORE)("engine.list pages and engine.count (%s)", (_name, makeStore) => {
  const me = currentOwner();
  const dead = { ...me, pid: 2 ** 22 + 17, processStart: 1 };
  const liveElsewhere = { host: "another-host", bootId: "b", pid: 1, processStart: 1 };

  it("pages through every run after the last one shown, newest first with ties by id, and counts them per workflow", async () => {
    const store = makeStore();
    // 30 runs, three to a millisecond; every third failed, the others completed; two workflows.
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const id = `run-${String(29 - i).padStart(2, "0")}`;
      ids.push(id);
      await put(store, id, i % 2 ? "odd" : "even", i % 3 === 0 ? "failed" : "completed", T - Math.floor(i / 3), me);
    }
    const engine = createEngine({ store, workflows: [noop] });
    try {
      const newestFirst = (await engine.list()).map((r) => r.id);
      // Ties by id: within a millisecond the smaller id first.
      expect(newestFirst.slice(0, 3)).toEqual(["run-27", "run-28", "run-29"]);
      expect(newestFirst).toHaveLength(30);
      expect((await pages(engine, {}, 7)).flat()).toEqual(newestFirst);
      const failed = newestFirst.filter((id) => ids.indexOf(id) % 3 === 0);
      const failedPages = await pages(engine, { status: "failed" }, 4);
      expect(failedPages.map((p) => p.length)).toEqual([4, 4, 2]);
      expect(failedPages.flat()).toEqual(failed);
      expect(await engine.count({ status: "failed" })).toEqual({
        runs: 10,
        workflows: [
          { workflow: "even", runs: 5 },
          { workflow: "odd", runs: 5 },
        ],
      });
      // How many are left after a page: the slice a page shows is honest.
      expect((await engine.count({ status: "failed", after: failedPages[0]!.at(-1)! })).runs).toBe(6);
      expect((await engine.count({ workflow: "odd" })).runs).toBe(15);
      expect((await engine.count({ idContains: "run-2" })).runs).toBe(10);
      expect((await engine.list({ idContains: "-0", limit: 3 })).map((r) => r.id)).toEqual(["run-09", "run-06", "run-07"]);
      await expect(engine.list({ after: "no-such-run" })).rejects.toMatchObject({ code: "INVALID_OPTION", message: expect.stringContaining("to list after") });
      await expect(engine.count({ after: "no-such-run" })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    } finally {
      await engine.close();
    }
  });

  it("judges running rows on the way: `interrupted` and `running` pages and counts leave out what the other is", async () => {
    const store = makeStore();
    // Newest first: gone-0, live-0, done-0, gone-1, live-1, done-1, …
    for (let i = 0; i < 6; i++) {
      await put(store, `gone-${i}`, "noop", "running", T - 3 * i, dead);
      await put(store, `live-${i}`, "noop", "running", T - 3 * i - 1, liveElsewhere);
      await put(store, `done-${i}`, "noop", "completed", T - 3 * i - 2, me);
    }
    await put(store, "marked", "noop", "interrupted", T - 100, me); // recorded as interrupted by a recover
    const engine = createEngine({ store, workflows: [noop] });
    try {
      const gone = ["gone-0", "gone-1", "gone-2", "gone-3", "gone-4", "gone-5", "marked"];
      expect(await pages(engine, { status: "interrupted" }, 2)).toEqual([["gone-0", "gone-1"], ["gone-2", "gone-3"], ["gone-4", "gone-5"], ["marked"]]);
      expect((await pages(engine, { status: "running" }, 4)).flat()).toEqual(["live-0", "live-1", "live-2", "live-3", "live-4", "live-5"]);
      expect((await engine.count({ status: "interrupted" })).runs).toBe(gone.length);
      expect((await engine.count({ status: "running" })).runs).toBe(6);
      expect((await engine.count({ status: ["running", "interrupted"] })).runs).toBe(13);
      expect((await engine.count({ status: ["interrupted", "completed"] })).runs).toBe(13);
      expect((await engine.count({ status: "interrupted", after: "gone-3" })).runs).toBe(3);
      expect((await engine.count()).runs).toBe(19);
      expect(await engine.list({ status: "interrupted", limit: 0 })).toEqual([]);
    } finally {
      await engine.close();
    }
  });

  it("on a store without countRuns (an adapter older than it): the engine pages and counts by listing every run", async () => {
    const inner = makeStore();
    // Only the members every adapter has: no countRuns, no changeMarker, and a listRuns that knows neither `after` nor `idContains`.
    const older: Store = {
      kind: "older",
      location: "an older adapter",
      durable: inner.durable,
      createRun: (...a) => inner.createRun(...a),
      claimRun: (...a) => inner.claimRun(...a),
      updateRun: (...a) => inner.updateRun(...a),
      loadRun: (...a) => inner.loadRun(...a),
      listRuns: ({ after: _after, idContains: _idContains, ...filter }) => inner.listRuns(filter),
      writeIntent: (...a) => inner.writeIntent(...a),
      writeOutcome: (...a) => inner.writeOutcome(...a),
      renewLease: (...a) => inner.renewLease(...a),
      endAttempt: (...a) => inner.endAttempt(...a),
      close: () => inner.close(),
    };
    for (let i = 0; i < 9; i++) await put(inner, `r-${i}`, i % 2 ? "odd" : "even", i % 3 ? "completed" : "failed", T + Math.floor(i / 2), me);
    const engine = createEngine({ store: older, workflows: [noop] });
    try {
      const newestFirst = (await engine.list()).map((r) => r.id);
      expect(newestFirst).toEqual(["r-8", "r-6", "r-7", "r-4", "r-5", "r-2", "r-3", "r-0", "r-1"]);
      expect((await pages(engine, {}, 2)).flat()).toEqual(newestFirst);
      expect((await pages(engine, { status: "failed" }, 2)).flat()).toEqual(["r-6", "r-3", "r-0"]);
      expect((await engine.list({ idContains: "-3" })).map((r) => r.id)).toEqual(["r-3"]);
      expect((await engine.count({ idContains: "-3" })).runs).toBe(1);
      expect(await engine.count({ status: "failed", after: "r-6" })).toEqual({
        runs: 2,
        workflows: [
          { workflow: "even", runs: 1 },
          { workflow: "odd", runs: 1 },
        ],
      });
    } finally {
      await engine.close();
    }
  });
});
