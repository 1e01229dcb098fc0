/**
 * The conformance suite's listing cases: listRuns a page at a time after a cursor, countRuns,
 * the id filter, and the change marker. Both members are optional: they are asked through the
 * engine's wrapper (runtimeStore), which fills them in for a store without them, so what is
 * checked is what the engine gets from any store.
 */

import assert from "node:assert/strict";
import { runtimeStore } from "../store/runtime.js";
import type { RunCursor, RunFilter, RunStatus, WorkflowCount } from "../store/types.js";
import { created, NOW } from "./conformance-rows.js";
import type { SuiteCases } from "./conformance-types.js";

/** Ids, workflows, statuses and creation times with ties: the newest-first order is by time, then id. */
const RUNS: Array<[id: string, workflow: string, status: RunStatus, createdAt: number]> = [
  ["b", "w1", "failed", NOW],
  ["a", "w2", "failed", NOW],
  ["e%1", "w1", "completed", NOW - 1],
  ["c_2", "w2", "failed", NOW - 1],
  ["d", "w1", "failed", NOW - 1],
  ["f", "w1", "failed", NOW - 2],
  ["g", "w2", "completed", NOW - 3],
];
const NEWEST_FIRST = ["a", "b", "c_2", "d", "e%1", "f", "g"];

const sorted = (counts: WorkflowCount[]) => [...counts].sort((x, y) => (x.workflow < y.workflow ? -1 : 1));

export function listingCases({ it, withStore, options }: SuiteCases): void {
  it(
    "listRuns after a cursor pages through every run newest first (ties by id), under a filter; countRuns counts what it lists",
    withStore(async (raw) => {
      const store = runtimeStore(raw);
      for (const [id, workflow, status, createdAt] of RUNS) await created(raw, id, { workflow, status, createdAt, updatedAt: createdAt });
      /** Every page of `size` under `filter`, each after the last run of the one before. */
      const pages = async (filter: RunFilter, size: number) => {
        const all: string[][] = [];
        let after: RunCursor | undefined;
        // More pages than runs: the cursor was not honoured (the same page again).
        while (all.length <= RUNS.length) {
          const page = await store.listRuns({ ...filter, limit: size, ...(after ? { after } : {}) });
          if (page.length === 0) return all;
          all.push(page.map((l) => l.run.id));
          const last = page.at(-1)!.run;
          after = { createdAt: last.createdAt, id: last.id };
        }
        assert.fail(`listRuns(${JSON.stringify(filter)}) after a cursor gave pages without end: ${JSON.stringify(all.slice(0, 3))}…`);
      };
      assert.deepEqual((await pages({}, 2)).flat(), NEWEST_FIRST);
      assert.deepEqual(await pages({}, 3), [["a", "b", "c_2"], ["d", "e%1", "f"], ["g"]]);
      assert.deepEqual(await pages({ status: ["failed"] }, 2), [["a", "b"], ["c_2", "d"], ["f"]]);
      assert.deepEqual((await pages({ workflow: "w1", status: ["failed"] }, 1)).flat(), ["b", "d", "f"]);
      // A cursor inside a tie: the runs as old with a greater id come next.
      assert.deepEqual(
        (await store.listRuns({ after: { createdAt: NOW - 1, id: "c_2" } })).map((l) => l.run.id),
        ["d", "e%1", "f", "g"],
      );
      // The cursor's run need not match the filter: it is a place in the order.
      assert.deepEqual(
        (await store.listRuns({ status: ["completed"], after: { createdAt: NOW, id: "a" } })).map((l) => l.run.id),
        ["e%1", "g"],
      );
      // Text in the id, taken as it is: no wildcards, case-sensitive.
      assert.deepEqual(
        (await store.listRuns({ idContains: "%" })).map((l) => l.run.id),
        ["e%1"],
      );
      assert.deepEqual(
        (await store.listRuns({ idContains: "_" })).map((l) => l.run.id),
        ["c_2"],
      );
      assert.deepEqual(await store.listRuns({ idContains: "A" }), []);

      assert.deepEqual(sorted(await store.countRuns({})), [
        { workflow: "w1", runs: 4 },
        { workflow: "w2", runs: 3 },
      ]);
      assert.deepEqual(sorted(await store.countRuns({ status: ["failed"] })), [
        { workflow: "w1", runs: 3 },
        { workflow: "w2", runs: 2 },
      ]);
      // A limit is not counted; a cursor is (how many are left after a page).
      assert.deepEqual(sorted(await store.countRuns({ status: ["failed"], limit: 1, after: { createdAt: NOW - 1, id: "c_2" } })), [
        { workflow: "w1", runs: 2 },
      ]);
      assert.deepEqual(await store.countRuns({ workflow: "w3" }), []);
      assert.deepEqual(await store.countRuns({ idContains: "e%" }), [{ workflow: "w1", runs: 1 }]);
    }),
  );

  it(
    "changeMarker changes after a write, by this handle and by another",
    withStore(async (raw) => {
      const other = options.another ? await options.another(raw) : raw;
      try {
        const store = runtimeStore(raw);
        const before = await store.changeMarker();
        await created(raw, "m1");
        const mine = await store.changeMarker();
        assert.notEqual(mine, before, "a run created by this handle changes the marker");
        await other.updateRun("m1", () => ({ run: { updatedAt: NOW + 1 }, result: true }));
        assert.notEqual(await store.changeMarker(), mine, "a run updated by another handle changes the marker");
      } finally {
        if (other !== raw) await other.close();
      }
    }),
  );
}
