/**
 * The conformance suite's budget cases: a run's budget kept with it (createRun, updateRun), and
 * an outcome's `spend` added to the runs it names in the outcome's own write, by every write path
 * (an outcome awaited, one group-committed), and never by a refused outcome.
 */

import assert from "node:assert/strict";
import type { StepOutcome } from "../store/types.js";
import { created, NOW, stepRow } from "./conformance-rows.js";
import type { SuiteCases } from "./conformance-types.js";

const outcome = (seq: number, spend?: StepOutcome["spend"]): StepOutcome => ({
  seq,
  status: "succeeded",
  value: "1",
  error: null,
  endedAt: NOW + seq,
  calls: 1,
  resolution: null,
  usage: '{"costUsd":0.5,"inputTokens":100,"outputTokens":20}',
  ...(spend ? { spend } : {}),
});

export function spendCases({ it, withStore }: SuiteCases): void {
  it(
    "a run's budget is kept with it (createRun, updateRun); an outcome's spend is added to each run it names, in its write, once",
    withStore(async (store) => {
      await created(store, "owner", { costBudget: '{"usd":5}' });
      const lease = await created(store, "child", { costBudget: '{"parent":"owner"}', parent: "owner" });
      assert.equal((await store.loadRun("owner"))!.run.costBudget, '{"usd":5}');
      await store.writeIntent(lease, stepRow("child", 1, "a"));
      await store.writeOutcome(lease, outcome(1, { runs: ["child", "owner"], usd: 0.5, tokens: 120 }));
      await store.writeIntent(lease, stepRow("child", 2, "b"));
      // An outcome without spend adds nothing.
      await store.writeOutcome(lease, outcome(2));
      await store.writeIntent(lease, stepRow("child", 3, "c"));
      // A group-committed outcome adds its spend with its commit.
      await new Promise<void>((resolve, reject) => {
        const o = outcome(3, { runs: ["child", "owner"], usd: 0.25, tokens: 30 });
        if (store.writeOutcomeLater) store.writeOutcomeLater(lease, o, resolve, reject);
        else store.writeOutcome(lease, o).then(resolve, reject);
      });
      // A refused outcome (no open intent) adds nothing.
      await assert.rejects(store.writeOutcome(lease, outcome(3, { runs: ["child", "owner"], usd: 100, tokens: 100 })));
      const owner = (await store.loadRun("owner"))!.run;
      const child = (await store.loadRun("child"))!.run;
      assert.deepEqual([owner.spentUsd, owner.spentTokens], [0.75, 150]);
      assert.deepEqual([child.spentUsd, child.spentTokens], [0.75, 150]);
      const listed = (await store.listRuns({ parent: "owner" }))[0]?.run;
      assert.deepEqual([listed?.costBudget, listed?.spentUsd], ['{"parent":"owner"}', 0.75]);
      await store.updateRun("owner", () => ({ run: { costBudget: '{"usd":9}' }, result: true }));
      assert.deepEqual((await store.loadRun("owner"))!.run.costBudget, '{"usd":9}');
      // A stale holder's outcome is refused and adds nothing.
      await store.updateRun("child", () => ({ fenceOut: { now: NOW + 10 }, result: true }));
      await assert.rejects(store.writeOutcome(lease, outcome(3, { runs: ["owner"], usd: 7, tokens: 7 })));
      assert.equal((await store.loadRun("owner"))!.run.spentUsd, 0.75);
    }),
  );
}
