/**
 * The conformance suite's import cases (importRuns, what engine.import writes with): every row
 * written as given and read back the same (its stream records too, on a store that keeps
 * streams; after a reopen too, with `reopen`), a taken place
 * refusing the whole import, and an imported run claimed and written on like any other. A store
 * without importRuns (it is optional) skips these cases.
 */

import assert from "node:assert/strict";
import type { ImportedRun, Store, StreamRecord } from "../store/types.js";
import { attemptRow, comparable, created, NOW, runRow, stepRow, takeIfFree } from "./conformance-rows.js";
import type { SuiteCases } from "./conformance-types.js";

const streamRecord = (runId: string, stream: string, seq: number, kind: StreamRecord["kind"], offset: number, attempt = 1): StreamRecord => ({
  runId,
  stream,
  seq,
  kind,
  offset,
  chunk: kind === "chunk" ? JSON.stringify(`${stream}${seq}`) : null,
  step: kind === "chunk" ? "a" : null,
  attempt,
  at: NOW + seq,
});

/** A run as an export holds one: two attempts (the second cut off), steps of both, two events, two streams (one reset, one closed), a released lease. */
function imported(id: string, patch: Partial<ImportedRun["run"]> = {}): ImportedRun {
  return {
    run: runRow(id, { status: "interrupted", attempts: 2, budgetUsed: 2, updatedAt: NOW + 20, ...patch }),
    attempts: [
      attemptRow(id, 1, { endedAt: NOW + 5, ending: "failed", error: '{"name":"Error","message":"boom"}', reused: [] }),
      attemptRow(id, 2, { startedAt: NOW + 10, fromStep: "b", consent: { redo: [], reuse: ["a"] } }),
    ],
    steps: [
      stepRow(id, 1, "a", { status: "succeeded", value: '{"a":1}', endedAt: NOW + 2, calls: 1, usage: '{"tokens":3}' }),
      stepRow(id, 2, "b", { status: "failed", error: '{"name":"Error","message":"boom"}', endedAt: NOW + 4, calls: 2, resolution: '{"policy":"redrive"}' }),
      stepRow(id, 3, "b", { attempt: 2, position: 0, intendedAt: NOW + 11 }),
    ],
    events: [
      { runId: id, seq: 1, name: "go", payload: '"x"', sentAt: NOW + 1, consumedBy: "wait", key: "k1" },
      { runId: id, seq: 2, name: "go", payload: '"y"', sentAt: NOW + 12, consumedBy: null, key: null },
    ],
    streams: [
      streamRecord(id, "answer", 0, "chunk", 0),
      streamRecord(id, "answer", 1, "chunk", 1),
      streamRecord(id, "answer", 2, "reset", 1, 2),
      streamRecord(id, "answer", 3, "chunk", 1, 2),
      streamRecord(id, "log", 0, "chunk", 0),
      streamRecord(id, "log", 1, "close", 1),
    ],
    lease: { runId: id, epoch: 1, attempt: null, expiresAt: 0, heartbeatAt: NOW + 20 },
  };
}

async function readBack(store: Store, runs: ImportedRun[]): Promise<void> {
  for (const { run, attempts, steps, events, streams, lease } of runs) {
    assert.deepEqual(comparable(await store.loadRun(run.id)), { run, attempts, steps, lease, events }, `run ${run.id} as imported`);
    if (!store.readStream) continue;
    for (const name of ["answer", "log"]) {
      const records = (streams ?? []).filter((r) => r.stream === name);
      assert.deepEqual(await store.readStream(run.id, name, -1, 100), records, `run ${run.id}'s stream ${name} as imported`);
    }
  }
}

export function importCases({ it, withStore, options }: SuiteCases): void {
  it(
    "importRuns writes each run with every row as given (its lease too) and reads them back the same; a child run is listed under its parent",
    withStore(async (store) => {
      if (!store.importRuns) return;
      const parent = imported("imp");
      const child = imported("imp-child", { parent: "imp", status: "completed", value: '"done"' });
      child.lease = { runId: "imp-child", epoch: 0, attempt: null, expiresAt: 0, heartbeatAt: NOW };
      const cut = imported("imp-cut", { status: "running" });
      cut.lease = { runId: "imp-cut", epoch: 1, attempt: 2, expiresAt: NOW + 20, heartbeatAt: NOW + 20 };
      assert.deepEqual(await store.importRuns([parent, child, cut]), { imported: true });
      await readBack(store, [parent, child, cut]);
      assert.deepEqual(
        (await store.listRuns({ parent: "imp" })).map((l) => l.run.id),
        ["imp-child"],
      );
      if (!options.reopen) return;
      await store.close();
      const again = await options.reopen(store);
      try {
        await readBack(again, [parent, child, cut]);
      } finally {
        await again.close();
      }
    }),
  );

  it(
    "importRuns refuses with { exists } and writes nothing of any run when one's id is taken, or its dedupe key is held by a run that has not ended",
    withStore(async (store) => {
      if (!store.importRuns) return;
      const there = await created(store, "there", { dedupeKey: "order-7" });
      const taken = await store.importRuns([imported("new-1"), imported("there", { args: '"other"' })]);
      assert.ok("exists" in taken && taken.exists.id === "there" && taken.exists.args === '{"n":1}', "the run whose id is taken");
      assert.equal(await store.loadRun("new-1"), undefined, "nothing of the import was written");
      if (store.readStream) assert.deepEqual(await store.readStream("new-1", "answer", -1, 10), [], "not its stream records either");
      const keyed = await store.importRuns([imported("new-2", { dedupeKey: "order-7", status: "waiting" })]);
      assert.ok("exists" in keyed && keyed.exists.id === "there", "the run that holds the dedupe key");
      assert.equal(await store.loadRun("new-2"), undefined);
      // Once that run has ended its key is free: the import goes through.
      await store.endAttempt(there, { attempt: 1, ending: "completed", endedAt: NOW + 1, error: null, run: { status: "completed" } });
      assert.deepEqual(await store.importRuns([imported("new-3", { dedupeKey: "order-7", status: "completed" })]), { imported: true });
    }),
  );

  it(
    "an imported run is claimed at its lease's epoch + 1, and the new attempt's steps follow the imported ones",
    withStore(async (store) => {
      if (!store.importRuns) return;
      const run = imported("go-on");
      await store.importRuns([run]);
      const claim = await store.claimRun("go-on", takeIfFree("go-on"));
      assert.equal(claim.kind, "taken");
      if (claim.kind !== "taken") return;
      assert.deepEqual({ epoch: claim.lease.epoch, attempt: claim.lease.attempt }, { epoch: 2, attempt: 3 });
      if (store.appendStream && store.readStream) {
        // The imported stream goes on at the seq after its last record.
        const next = { ...streamRecord("go-on", "answer", 4, "chunk", 2, 3), at: NOW + 30 };
        await store.appendStream(claim.lease, [next]);
        assert.deepEqual(await store.readStream("go-on", "answer", 3, 10), [next]);
      }
      await store.writeIntent(claim.lease, stepRow("go-on", 4, "b", { attempt: 3, position: 1 }));
      await store.writeOutcome(claim.lease, {
        seq: 4,
        status: "succeeded",
        value: "2",
        error: null,
        endedAt: NOW + 30,
        calls: 1,
        resolution: null,
        usage: null,
      });
      await store.endAttempt(claim.lease, { attempt: 3, ending: "completed", endedAt: NOW + 31, error: null, run: { status: "completed", value: "2" } });
      const after = (await store.loadRun("go-on"))!;
      assert.deepEqual(
        after.steps.map((s) => [s.seq, s.key, s.status]),
        [
          [1, "a", "succeeded"],
          [2, "b", "failed"],
          [3, "b", "intended"],
          [4, "b", "succeeded"],
        ],
      );
      assert.equal(after.run.status, "completed");
      assert.deepEqual(after.attempts.at(-1)?.ending, "completed");
    }),
  );
}
