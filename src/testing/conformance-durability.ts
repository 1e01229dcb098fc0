/**
 * The conformance suite's cases on what outlasts a handle and what a store declares: records
 * survive close and reopen (with `reopen`), a lease's age is given exactly when declared, and
 * damaged data reads STORE_UNREADABLE (with `corrupt`). The optional ones run only when given.
 */

import assert from "node:assert/strict";
import { isSteplogError } from "../base/errors.js";
import { comparable, created, NOW, stepRow } from "./conformance-rows.js";
import type { SuiteCases } from "./conformance-types.js";

/** Close and reopen, leaseAge, an unreadable store. */
export function durabilityCases({ it, withStore, options }: SuiteCases): void {
  if (options.reopen) {
    const reopen = options.reopen;
    it("records survive close and reopen", async () => {
      const store = await options.create();
      const lease = await created(store, "r");
      await store.writeIntent(lease, stepRow("r", 1, "a"));
      await store.writeOutcome(lease, {
        seq: 1,
        status: "succeeded",
        value: '{"kept":true}',
        error: null,
        endedAt: NOW + 1,
        calls: 1,
        resolution: null,
        usage: null,
      });
      await store.updateRun("r", () => ({
        appendEvents: [{ runId: "r", seq: 1, name: "e", payload: "1", sentAt: NOW, consumedBy: null, key: null }],
        result: true,
      }));
      await store.endAttempt(lease, { attempt: 1, ending: "completed", endedAt: NOW + 2, error: null, run: { status: "completed", value: '"v"' } });
      const before = comparable(await store.loadRun("r"));
      await store.close();
      const again = await reopen(store);
      try {
        assert.deepEqual(comparable(await again.loadRun("r")), before);
      } finally {
        await again.close();
      }
    });
  }

  it(
    "leaseAge: a store that declares it gives every loaded lease its age (ms ≥ 0); one that does not gives none",
    withStore(async (store) => {
      await created(store, "r");
      const { lease } = (await store.loadRun("r"))!;
      const [listed] = await store.listRuns({});
      for (const [where, got] of [
        ["loadRun", lease],
        ["listRuns", listed?.lease],
      ] as const) {
        if (store.leaseAge === true)
          assert.ok(typeof got?.ageMs === "number" && got.ageMs >= 0, `${where}: lease.ageMs must be a number of ms ≥ 0, got ${String(got?.ageMs)}`);
        else
          assert.ok(
            got && !("ageMs" in got),
            `${where}: a store without leaseAge: true gives no lease.ageMs (declare leaseAge if its clock is shared by every claimer)`,
          );
      }
    }),
  );

  if (options.corrupt) {
    const corrupt = options.corrupt;
    it("an unreadable store is reported as unreadable (STORE_UNREADABLE)", async () => {
      const store = await options.create();
      await created(store, "r");
      await store.close();
      const broken = await corrupt(store);
      try {
        await assert.rejects(broken.loadRun("r"), (error: unknown) => isSteplogError(error, "STORE_UNREADABLE"));
      } finally {
        await broken.close().catch(() => {});
      }
    });
  }
}
