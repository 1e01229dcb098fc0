import { memoryStore } from "../../../src/store/memory.js";
import { runRow, attemptRow, stepRow } from "../../../src/testing/store-conformance.js";
import type { StepRow, Store } from "../../../src/store/types.js";

/** A run whose attempt 1 died (another host, lease expired) inside the given steps. */
export async function crashedRun(store: Store, id: string, workflow: string, steps: Array<Partial<StepRow> & { key: string }>) {
  const lease = await store.createRun(
    runRow(id, { workflow, version: null, args: '{"$type":"undefined"}', createdAt: Date.now(), updatedAt: Date.now() }),
    attemptRow(id, 1, { host: "elsewhere" }),
    { expiresAt: 1, now: 0 },
  );
  if ("exists" in lease) throw new Error("exists");
  let seq = 1;
  for (const s of steps) await store.writeIntent(lease, stepRow(id, seq++, s.key, { version: null, ...s }));
  return lease;
}
export { memoryStore };
