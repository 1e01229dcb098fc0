/**
 * The store conformance suite: every guarantee the engine relies on from a Store, as tests any
 * adapter can run. Memory, SQLite, JSONL and Postgres all run it; so can yours:
 *
 *   import { describe, it } from "vitest";            // or node:test, jest, mocha
 *   import { describeStore } from "steplog/testing";
 *   describeStore("my store", { create: () => myStore(freshDb()), reopen: (s) => myStore(s.location) }, { describe, it });
 *
 * Assertions use node:assert, so the suite needs only `describe` and `it` from your runner.
 */

import type { Store } from "../store/types.js";
import { attemptRow, NOW, runRow, stepRow } from "./conformance-rows.js";
import type { StoreConformanceOptions, SuiteCases, TestBody, TestFunctions } from "./conformance-types.js";
import { updateAndListCases, writeAndClaimCases } from "./conformance-basic.js";
import { fencingCases } from "./conformance-fencing.js";
import { durabilityCases } from "./conformance-durability.js";
import { flowCases } from "./conformance-flow.js";
import { listingCases } from "./conformance-listing.js";
import { importCases } from "./conformance-import.js";
import { spendCases } from "./conformance-spend.js";
import { streamCases } from "./conformance-streams.js";
import { pruneCases } from "./conformance-prune.js";

export { attemptRow, runRow, stepRow } from "./conformance-rows.js";
export type { AdditionalTests, StoreConformanceOptions, TestFunctions } from "./conformance-types.js";

function resolveTestFunctions(given?: TestFunctions): TestFunctions {
  if (given) return given;
  const g = globalThis as unknown as Partial<TestFunctions>;
  if (typeof g.describe === "function" && typeof g.it === "function") return { describe: g.describe, it: g.it };
  throw new Error('describeStore: pass { describe, it } from your test runner (for example `import { describe, it } from "vitest"`).');
}

export function describeStore(name: string, options: StoreConformanceOptions, testFunctions?: TestFunctions): void {
  const runner = resolveTestFunctions(testFunctions);
  const { describe } = runner;
  const skips = new Map(Object.entries(options.skip ?? {}));
  const skipped = (title: string, why: string) => {
    if (!runner.it.skip) throw new Error(`describeStore(${JSON.stringify(name)}): skipping ${JSON.stringify(title)} needs it.skip from your test runner.`);
    runner.it.skip(`${title} (skipped: ${why})`, () => {});
  };
  /** `it`, except a test named in `skip` is reported skipped. */
  const it = (title: string, body: TestBody, timeout?: number) => {
    const why = skips.get(title);
    if (why === undefined) return runner.it(title, body, timeout);
    skips.delete(title);
    return skipped(title, why);
  };
  const withStore = (body: (store: Store) => Promise<void>) => async () => {
    const store = await options.create();
    try {
      await body(store);
    } finally {
      await store.close();
    }
  };

  const suite: SuiteCases = { it, withStore, options };

  describe(`store conformance: ${name}`, () => {
    // In the suite's order: the basic cases, with the fencing ones between their two groups.
    writeAndClaimCases(suite);
    fencingCases(suite);
    updateAndListCases(suite);
    listingCases(suite);
    durabilityCases(suite);
    flowCases(suite);
    importCases(suite);
    spendCases(suite);
    streamCases(suite);
    pruneCases(suite);

    options.additionalTests?.({ it: runner.it, withStore, runRow, attemptRow, stepRow, now: NOW });

    if (skips.size > 0) {
      throw new Error(
        `describeStore(${JSON.stringify(name)}): skip names no test of the suite: ${[...skips.keys()].map((k) => JSON.stringify(k)).join(", ")}. Use a test's exact name.`,
      );
    }
  });
}
