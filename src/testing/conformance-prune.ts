/**
 * The conformance suite's prune cases (pruneRuns, what engine.prune deletes with; takeTurn, what
 * retention's one pruner holds): an approved group's every row gone (after a reopen too), a
 * refused group whole, the judge shown the runs as stored, a pruned id used again and the runs
 * around it written on as before. A store without them (they are optional) skips these cases.
 */

import assert from "node:assert/strict";
import type { Fence, Store, StoredRun } from "../store/types.js";
import { created, NOW, stepRow } from "./conformance-rows.js";
import type { SuiteCases } from "./conformance-types.js";

/** A run written through the step path and ended: `steps` succeeded steps, one event, its lease released. */
async function endedRun(store: Store, id: string, steps: number, parent: string | null = null): Promise<void> {
  const lease = await created(store, id, { parent });
  await writeSteps(store, lease, 1, steps);
  await store.updateRun(id, () => ({
    appendEvents: [{ runId: id, seq: 1, name: "note", payload: '"x"', sentAt: NOW, consumedBy: null, key: null }],
    result: null,
  }));
  await store.endAttempt(lease, { attempt: 1, ending: "completed", endedAt: NOW + 100, error: null, run: { status: "completed", value: '"ok"' } });
}

async function writeSteps(store: Store, fence: Fence, from: number, count: number): Promise<void> {
  for (let seq = from; seq < from + count; seq++) {
    await store.writeIntent(fence, stepRow(fence.runId, seq, `s#${seq}`, { position: seq - 1 }));
    await store.writeOutcome(fence, { seq, status: "succeeded", value: `"v${seq}"`, error: null, endedAt: NOW + seq, calls: 1, resolution: null, usage: null });
  }
}

export function pruneCases({ it, withStore, options }: SuiteCases): void {
  it(
    "pruneRuns reads each run with its child runs, deletes every row of each group its judge approves (after a reopen too), and keeps a refused group whole",
    withStore(async (store) => {
      if (!store.pruneRuns) return;
      await endedRun(store, "p-parent", 20);
      await endedRun(store, "p-child", 3, "p-parent");
      await endedRun(store, "p-kept", 2);
      const seen: string[][] = [];
      const rows = await store.pruneRuns(["p-parent", "p-missing", "p-kept"], (group: StoredRun[]) => {
        seen.push(group.map((r) => `${r.run.id}:${r.run.status}:${r.steps.length}:${r.events.length}`));
        return group[0]!.run.id === "p-parent";
      });
      assert.deepEqual(
        seen,
        [["p-parent:completed:20:1", "p-child:completed:3:1"], ["p-kept:completed:2:1"]],
        "each group: its first run, then its child runs, as stored; a missing id skipped",
      );
      assert.deepEqual(rows, { ids: ["p-parent", "p-child"], attempts: 2, steps: 23, events: 2 });
      const check = async (s: Store) => {
        assert.equal(await s.loadRun("p-parent"), undefined);
        assert.equal(await s.loadRun("p-child"), undefined);
        assert.deepEqual(
          (await s.listRuns({})).map((l) => l.run.id),
          ["p-kept"],
        );
        assert.deepEqual(
          (await s.listRuns({ parent: "p-parent" })).map((l) => l.run.id),
          [],
        );
        const kept = (await s.loadRun("p-kept"))!;
        assert.deepEqual([kept.steps.length, kept.events.length, kept.attempts.length, kept.lease?.attempt], [2, 1, 1, null]);
      };
      await check(store);
      assert.deepEqual(await store.pruneRuns(["p-parent"], () => true), { ids: [], attempts: 0, steps: 0, events: 0 }, "a run already gone");
      if (!options.reopen) return;
      await store.close();
      const again = await options.reopen(store);
      try {
        await check(again);
      } finally {
        await again.close();
      }
    }),
  );

  it(
    "after pruneRuns a pruned id starts afresh, and the runs written before and after it keep their steps apart",
    withStore(async (store) => {
      if (!store.pruneRuns) return;
      const live = await created(store, "q-live");
      await writeSteps(store, live, 1, 5);
      await endedRun(store, "q-gone", 40);
      await store.pruneRuns(["q-gone"], () => true);
      await writeSteps(store, live, 6, 20);
      const again = await created(store, "q-gone");
      await writeSteps(store, again, 1, 3);
      const other = await created(store, "q-other");
      await writeSteps(store, other, 1, 18);
      const seqs = async (id: string) => (await store.loadRun(id))!.steps.map((s) => `${s.runId}:${s.seq}:${s.value}`);
      const expect = (id: string, n: number) => Array.from({ length: n }, (_, i) => `${id}:${i + 1}:"v${i + 1}"`);
      assert.deepEqual(await seqs("q-live"), expect("q-live", 25));
      assert.deepEqual(await seqs("q-gone"), expect("q-gone", 3));
      assert.deepEqual(await seqs("q-other"), expect("q-other", 18));
      assert.deepEqual((await store.loadRun("q-gone"))!.events, []);
    }),
  );

  it(
    "takeTurn gives a named turn to one holder until it ends; the holder renews it and gives it back",
    withStore(async (store) => {
      if (!store.takeTurn) return;
      await created(store, "t-first"); // a store with no records yet (no file) may answer false: nothing to prune
      assert.equal(await store.takeTurn("retention", "a", NOW, NOW + 1000), true);
      assert.equal(await store.takeTurn("retention", "b", NOW + 10, NOW + 1010), false, "held by a");
      assert.equal(await store.takeTurn("other", "b", NOW + 10, NOW + 1010), true, "another turn is free");
      assert.equal(await store.takeTurn("retention", "a", NOW + 500, NOW + 1500), true, "renewed by a");
      assert.equal(await store.takeTurn("retention", "b", NOW + 1200, NOW + 2200), false, "still a's after the renewal");
      assert.equal(await store.takeTurn("retention", "b", NOW + 1500, NOW + 2500), true, "a's time is up");
      assert.equal(await store.takeTurn("retention", "b", NOW + 1600, NOW + 1600), true, "b gives it back");
      assert.equal(await store.takeTurn("retention", "a", NOW + 1600, NOW + 2600), true, "given back: a takes it");
    }),
  );
}
