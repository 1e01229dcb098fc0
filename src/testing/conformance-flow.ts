/**
 * The conformance suite's flow-control cases: runs queued for their turn (enqueueRun), a claim's
 * FlowQuery answered from the other runs, dedupe keys on createRun, and due listings by
 * priority. A store without enqueueRun (it is optional) skips the cases that need it.
 */

import assert from "node:assert/strict";
import type { StoredRun } from "../store/types.js";
import { attemptRow, created, NOW, runRow, takeIfFree } from "./conformance-rows.js";
import type { SuiteCases } from "./conformance-types.js";

export function flowCases({ it, withStore }: SuiteCases): void {
  it(
    "enqueueRun writes a run with no attempt and a free lease at epoch 0; a claim takes it at epoch 1; a taken id writes nothing",
    withStore(async (store) => {
      if (!store.enqueueRun) return;
      const queued = runRow("q", { status: "waiting", attempts: 0, budgetUsed: 0, waitingFor: '{"kind":"turn","step":""}', wakeAt: NOW });
      assert.deepEqual(await store.enqueueRun(queued, NOW), { queued: true });
      const again = await store.enqueueRun(runRow("q", { args: '"other"' }), NOW);
      assert.ok("exists" in again && again.exists.args === '{"n":1}');
      const stored = (await store.loadRun("q"))!;
      assert.deepEqual(stored.run, queued);
      assert.deepEqual(stored.attempts, []);
      assert.equal(stored.lease?.epoch, 0);
      assert.equal(stored.lease?.attempt, null);
      const claim = await store.claimRun("q", takeIfFree("q"));
      assert.equal(claim.kind, "taken");
      assert.deepEqual(claim.kind === "taken" && { epoch: claim.lease.epoch, attempt: claim.lease.attempt }, { epoch: 1, attempt: 1 });
    }),
  );

  it(
    "a claim's FlowQuery: the other runs of its concurrency key that hold their lease, and the attempts of its rate key started since a time",
    withStore(async (store) => {
      await created(store, "held", { concurrencyKey: "w:a", rateKey: "w" });
      await created(store, "other-key", { concurrencyKey: "w:b", rateKey: "w" });
      const released = await created(store, "released", { concurrencyKey: "w:a", rateKey: "w" });
      await store.endAttempt(released, { attempt: 1, ending: "completed", endedAt: NOW + 1, error: null, run: { status: "completed" } });
      await created(store, "old", { concurrencyKey: "w:a", rateKey: "w" }, { startedAt: NOW - 10_000 });
      await created(store, "me", { concurrencyKey: "w:a", rateKey: "w", status: "waiting" });
      let seen: StoredRun["flow"];
      await store
        .claimRun(
          "me",
          (current) => {
            seen = current.flow;
            return { kind: "refuse", error: new Error("just looking") };
          },
          { concurrencyKey: "w:a", rate: { key: "w", since: NOW - 5_000 } },
        )
        .catch(() => {});
      assert.ok(seen, "the claim's current.flow is set");
      assert.deepEqual(seen.holders.map((h) => h.lease.runId).sort(), ["held", "old"]);
      const held = seen.holders.find((h) => h.lease.runId === "held")!;
      assert.deepEqual(
        { epoch: held.lease.epoch, attempt: held.lease.attempt, pid: held.attempt.pid, number: held.attempt.number },
        { epoch: 1, attempt: 1, pid: attemptRow("held", 1).pid, number: 1 },
      );
      // Attempts started at or after NOW − 5 s among the rate key's runs: held, other-key, released, me (old started before).
      assert.equal(seen.started, 4);
    }),
  );

  it(
    "createRun (and enqueueRun) with a dedupe key that a run which has not ended holds: that run, nothing written; once it has ended, a new run",
    withStore(async (store) => {
      const first = await created(store, "d1", { dedupeKey: "w:evt" });
      const second = await store.createRun(runRow("d2", { dedupeKey: "w:evt" }), attemptRow("d2", 1), { expiresAt: NOW + 30_000, now: NOW });
      assert.ok("exists" in second && second.exists.id === "d1");
      if (store.enqueueRun) {
        const queued = await store.enqueueRun(runRow("d3", { dedupeKey: "w:evt" }), NOW);
        assert.ok("exists" in queued && queued.exists.id === "d1");
      }
      assert.equal(await store.loadRun("d2"), undefined);
      await store.endAttempt(first, { attempt: 1, ending: "completed", endedAt: NOW + 1, error: null, run: { status: "completed" } });
      const third = await store.createRun(runRow("d4", { dedupeKey: "w:evt" }), attemptRow("d4", 1), { expiresAt: NOW + 30_000, now: NOW });
      assert.ok(!("exists" in third));
    }),
  );

  it(
    "a due listing goes highest priority first, then oldest wake time",
    withStore(async (store) => {
      await created(store, "low-early", { status: "waiting", wakeAt: NOW + 1, priority: 0 });
      await created(store, "high-late", { status: "waiting", wakeAt: NOW + 3, priority: 5 });
      await created(store, "high-early", { status: "waiting", wakeAt: NOW + 2, priority: 5 });
      await created(store, "negative", { status: "waiting", wakeAt: NOW, priority: -1 });
      const due = await store.listRuns({ status: ["waiting"], dueBy: NOW + 10 });
      assert.deepEqual(
        due.map((l) => l.run.id),
        ["high-early", "high-late", "low-early", "negative"],
      );
    }),
  );
}
