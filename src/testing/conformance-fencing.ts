/**
 * The conformance suite's fencing and concurrency cases: a superseded epoch writes nothing
 * (LEASE_LOST), alone or among writes issued together; an ending releases the lease; one of
 * many concurrent claimers wins; two handles on the same data share one storageId.
 */

import assert from "node:assert/strict";
import { isSteplogError } from "../base/errors.js";
import type { Lease } from "../store/types.js";
import { comparable, created, NOW, refusedWithLeaseLost, stepRow, takeIfFree } from "./conformance-rows.js";
import type { SuiteCases } from "./conformance-types.js";

/** Fencing by epoch, an ending's release, one winner among claimers, storageId across handles. */
export function fencingCases({ it, withStore, options }: SuiteCases): void {
  it(
    "fencing: every attempt write with a superseded epoch is refused (LEASE_LOST) and writes nothing",
    withStore(async (store) => {
      const stale = await created(store, "r");
      await store.writeIntent(stale, stepRow("r", 1, "a"));
      await store.updateRun("r", () => ({ fenceOut: { now: NOW }, result: true }));
      const before = comparable(await store.loadRun("r"));
      await refusedWithLeaseLost(store.writeIntent(stale, stepRow("r", 2, "b")), "writeIntent");
      await refusedWithLeaseLost(
        store.writeOutcome(stale, { seq: 1, status: "succeeded", value: "1", error: null, endedAt: NOW, calls: 1, resolution: null, usage: null }),
        "writeOutcome",
      );
      await refusedWithLeaseLost(store.renewLease(stale, NOW + 99_999, NOW), "renewLease");
      await refusedWithLeaseLost(
        store.endAttempt(stale, { attempt: 1, ending: "completed", endedAt: NOW, error: null, run: { status: "completed" } }),
        "endAttempt",
      );
      assert.deepEqual(comparable(await store.loadRun("r")), before);
      assert.equal(before!.lease!.epoch, 2);
    }),
  );

  it(
    "intents and outcomes issued together, no ending among them: the stale ones are refused alone; the rest commit",
    withStore(async (store) => {
      const a = await created(store, "a");
      const b = await created(store, "b");
      const stale = await created(store, "stale");
      await store.writeIntent(a, stepRow("a", 1, "one"));
      await store.writeIntent(stale, stepRow("stale", 1, "one"));
      await store.updateRun("stale", () => ({ fenceOut: { now: NOW }, result: true }));
      const outcome = (seq: number) => ({
        seq,
        status: "succeeded" as const,
        value: '"v"',
        error: null,
        endedAt: NOW + 1,
        calls: 1,
        resolution: null,
        usage: null,
      });
      const results = await Promise.allSettled([
        store.writeOutcome(a, outcome(1)),
        store.writeIntent(a, stepRow("a", 2, "two")),
        store.writeOutcome(stale, outcome(1)),
        store.writeIntent(stale, stepRow("stale", 2, "two")),
        store.writeIntent(b, stepRow("b", 1, "one")),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ["fulfilled", "fulfilled", "rejected", "rejected", "fulfilled"],
      );
      for (const i of [2, 3])
        assert.ok(isSteplogError((results[i] as PromiseRejectedResult).reason, "LEASE_LOST"), `write ${i} must be refused with LEASE_LOST`);
      const runA = (await store.loadRun("a"))!.steps;
      assert.deepEqual(
        runA.map((s) => [s.key, s.status]),
        [
          ["one", "succeeded"],
          ["two", "intended"],
        ],
      );
      assert.deepEqual(
        (await store.loadRun("stale"))!.steps.map((s) => [s.key, s.status]),
        [["one", "intended"]],
      );
      assert.deepEqual(
        (await store.loadRun("b"))!.steps.map((s) => s.key),
        ["one"],
      );
    }),
  );

  it(
    "writes issued together: a stale fence and a write after its own attempt's ending are refused alone; the rest commit",
    withStore(async (store) => {
      const live = await created(store, "live");
      const stale = await created(store, "stale");
      await store.updateRun("stale", () => ({ fenceOut: { now: NOW }, result: true }));
      const ending = await created(store, "ending");
      // Issued in one go, so a store that commits writes in groups holds them in one transaction.
      const results = await Promise.allSettled([
        store.writeIntent(live, stepRow("live", 1, "a")),
        store.writeIntent(stale, stepRow("stale", 1, "a")),
        store.writeIntent(ending, stepRow("ending", 1, "a")),
        store.endAttempt(ending, { attempt: 1, ending: "completed", endedAt: NOW, error: null, run: { status: "completed" } }),
        store.writeIntent(ending, stepRow("ending", 2, "b")),
        store.writeIntent(live, stepRow("live", 2, "b")),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ["fulfilled", "rejected", "fulfilled", "fulfilled", "rejected", "fulfilled"],
      );
      for (const i of [1, 4])
        assert.ok(isSteplogError((results[i] as PromiseRejectedResult).reason, "LEASE_LOST"), `write ${i} must be refused with LEASE_LOST`);
      assert.deepEqual(
        (await store.loadRun("live"))!.steps.map((s) => s.key),
        ["a", "b"],
      );
      assert.deepEqual((await store.loadRun("stale"))!.steps, []);
      assert.deepEqual(
        (await store.loadRun("ending"))!.steps.map((s) => s.key),
        ["a"],
      );
      assert.equal((await store.loadRun("ending"))!.run.status, "completed");
    }),
  );

  it(
    "writes issued together by two attempts of one run: the superseded one's are refused, before or after the live one's",
    withStore(async (store) => {
      const old = await created(store, "r");
      await store.updateRun("r", () => ({ fenceOut: { now: NOW }, result: true }));
      const claim = await store.claimRun("r", takeIfFree("r"));
      assert.equal(claim.kind, "taken");
      const live = (claim as { lease: Lease }).lease;
      const results = await Promise.allSettled([
        store.writeIntent(old, stepRow("r", 1, "stale-first")),
        store.writeIntent(live, stepRow("r", 1, "a")),
        store.writeIntent(old, stepRow("r", 2, "stale-after")),
        store.renewLease(old, NOW + 99_999, NOW),
        store.writeOutcome(old, { seq: 1, status: "failed", value: null, error: '"stale"', endedAt: NOW, calls: 1, resolution: null, usage: null }),
        store.writeOutcome(live, { seq: 1, status: "succeeded", value: "1", error: null, endedAt: NOW, calls: 1, resolution: null, usage: null }),
        store.endAttempt(live, { attempt: live.attempt, ending: "completed", endedAt: NOW, error: null, run: { status: "completed" } }),
        store.renewLease(live, NOW + 99_999, NOW),
        store.writeIntent(live, stepRow("r", 2, "after-the-end")),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ["rejected", "fulfilled", "rejected", "rejected", "rejected", "fulfilled", "fulfilled", "rejected", "rejected"],
      );
      for (const [i, r] of results.entries()) {
        if (r.status === "rejected") assert.ok(isSteplogError(r.reason, "LEASE_LOST"), `write ${i} must be refused with LEASE_LOST, got ${String(r.reason)}`);
      }
      const stored = (await store.loadRun("r"))!;
      assert.deepEqual(
        stored.steps.map((s) => [s.key, s.status]),
        [["a", "succeeded"]],
      );
      assert.equal(stored.run.status, "completed");
      assert.equal(stored.lease!.attempt, null);
    }),
  );

  it(
    "endAttempt records the ending, patches the run and releases the lease (its epoch kept); later writes on it are refused",
    withStore(async (store) => {
      const lease = await created(store, "r");
      await store.renewLease(lease, NOW + 90_000, NOW + 5);
      assert.equal((await store.loadRun("r"))!.lease!.expiresAt, NOW + 90_000);
      await store.endAttempt(lease, {
        attempt: 1,
        ending: "completed",
        endedAt: NOW + 9,
        error: null,
        run: { status: "completed", value: '"done"', updatedAt: NOW + 9 },
        reused: ["a", "b#2"],
      });
      const stored = (await store.loadRun("r"))!;
      assert.deepEqual(stored.attempts[0]!.reused, ["a", "b#2"]);
      assert.equal(stored.run.status, "completed");
      assert.equal(stored.run.value, '"done"');
      assert.deepEqual([stored.attempts[0]!.ending, stored.attempts[0]!.endedAt], ["completed", NOW + 9]);
      assert.deepEqual([stored.lease!.epoch, stored.lease!.attempt], [1, null]);
      await refusedWithLeaseLost(store.writeIntent(lease, stepRow("r", 1, "late")), "a write after the ending");
    }),
  );

  it(
    "a fence that held for earlier writes is refused once another handle has taken the run",
    withStore(async (store) => {
      const other = options.another ? await options.another(store) : store;
      try {
        const old = await created(store, "r");
        // Several writes of the old attempt commit first: a store may remember that its fence held.
        await store.writeIntent(old, stepRow("r", 1, "a"));
        await store.writeOutcome(old, { seq: 1, status: "succeeded", value: "1", error: null, endedAt: NOW, calls: 1, resolution: null, usage: null });
        await store.writeIntent(old, stepRow("r", 2, "b"));
        await other.updateRun("r", () => ({ fenceOut: { now: NOW }, result: true }));
        const claim = await other.claimRun("r", takeIfFree("r"));
        assert.equal(claim.kind, "taken");
        await refusedWithLeaseLost(store.writeIntent(old, stepRow("r", 3, "c")), "writeIntent");
        await refusedWithLeaseLost(
          store.writeOutcome(old, { seq: 2, status: "succeeded", value: "2", error: null, endedAt: NOW, calls: 1, resolution: null, usage: null }),
          "writeOutcome",
        );
        assert.deepEqual(
          (await store.loadRun("r"))!.steps.map((s) => [s.key, s.status]),
          [
            ["a", "succeeded"],
            ["b", "intended"],
          ],
        );
      } finally {
        if (other !== store) await other.close();
      }
    }),
  );

  it(
    "exactly one of many concurrent lease takers wins",
    withStore(async (store) => {
      const first = await created(store, "r");
      await store.endAttempt(first, { attempt: 1, ending: "failed", endedAt: NOW, error: null, run: { status: "failed" } });
      const handles = await Promise.all(Array.from({ length: 8 }, async () => (options.another ? options.another(store) : store)));
      const results = await Promise.allSettled(handles.map((handle) => handle.claimRun("r", takeIfFree("r"))));
      const winners = results.filter((r) => r.status === "fulfilled" && r.value.kind === "taken");
      const busy = results.filter((r) => r.status === "rejected" && isSteplogError(r.reason, "RUN_BUSY"));
      assert.equal(winners.length, 1, `exactly one claim must win, got ${winners.length}`);
      assert.equal(busy.length, 7);
      const stored = (await store.loadRun("r"))!;
      assert.deepEqual([stored.run.attempts, stored.attempts.length, stored.lease!.epoch], [2, 2, 2]);
      for (const handle of handles) if (handle !== store) await handle.close();
    }),
  );

  it(
    "storageId, if the store has one: the same for a second handle on the same data, another for other data",
    withStore(async (store) => {
      // Made first: a `create` that empties shared storage then has nothing of this test's to wipe.
      const elsewhere = await options.create();
      const elsewhereId = await elsewhere.storageId?.();
      await elsewhere.close();
      await created(store, "r");
      if (!store.storageId) {
        // Optional: this process's live attempts are then keyed by location, which must name the data.
        assert.ok(typeof store.location === "string" && store.location.length > 0, "a store without storageId needs a location");
        return;
      }
      const other = options.another ? await options.another(store) : store;
      try {
        const id = await store.storageId();
        assert.equal(typeof id, "string");
        assert.equal(await other.storageId!(), id, "two handles on the same data must give the same storageId");
        assert.notEqual(elsewhereId, id, "a store on other data must give another storageId");
      } finally {
        if (other !== store) await other.close();
      }
    }),
  );
}
