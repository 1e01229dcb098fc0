/**
 * The conformance suite's stream cases (appendStream and readStream, what ctx.stream and
 * engine.readStream work with): records read back in seq order, by page after a seq, per
 * (run, stream); an append fenced like any attempt write; appends issued together with a
 * step's intent committed with it, in order; one append of many records of several streams (a
 * burst of chunks written in one turn) read back whole; records durable across a reopen (with
 * `reopen`).
 * A store without the optional methods skips these cases.
 */

import assert from "node:assert/strict";
import type { Store, StreamRecord } from "../store/types.js";
import { created, NOW, refusedWithLeaseLost, stepRow } from "./conformance-rows.js";
import type { SuiteCases } from "./conformance-types.js";

function record(runId: string, stream: string, seq: number, patch: Partial<StreamRecord> = {}): StreamRecord {
  return { runId, stream, seq, kind: "chunk", offset: seq, chunk: JSON.stringify(`c${seq}`), step: "a", attempt: 1, at: NOW + seq, ...patch };
}

const hasStreams = (store: Store) => typeof store.appendStream === "function" && typeof store.readStream === "function";

export function streamCases({ it, withStore, options }: SuiteCases): void {
  it(
    "streams: records are read back in seq order, after a seq and a page at a time, apart per run and stream",
    withStore(async (store) => {
      if (!hasStreams(store)) return;
      const lease = await created(store, "s");
      const other = await created(store, "t");
      const written = [
        record("s", "out", 0, { step: null }),
        record("s", "out", 1, { step: "a\nb" }),
        record("s", "out", 2, { kind: "reset", offset: 1, chunk: null }),
        record("s", "out", 3, { offset: 1 }),
        record("s", "out", 4, { kind: "close", offset: 2, chunk: null, step: null }),
      ];
      // Issued together, as an attempt's writes are, beside another run's and another stream's.
      await Promise.all([
        store.appendStream!(lease, written.slice(0, 2)),
        store.writeIntent(lease, stepRow("s", 1, "a")),
        store.appendStream!(lease, written.slice(2)),
        store.appendStream!(lease, [record("s", "log", 0)]),
        store.appendStream!(other, [record("t", "out", 0, { chunk: '"other"' })]),
      ]);
      assert.deepEqual(await store.readStream!("s", "out", -1, 100), written);
      assert.deepEqual(await store.readStream!("s", "out", 1, 2), written.slice(2, 4));
      assert.deepEqual(await store.readStream!("s", "out", 4, 100), []);
      assert.deepEqual(await store.readStream!("s", "log", -1, 100), [record("s", "log", 0)]);
      assert.deepEqual(await store.readStream!("t", "out", -1, 100), [record("t", "out", 0, { chunk: '"other"' })]);
      assert.deepEqual(await store.readStream!("none", "out", -1, 100), []);
      if (store.streamNames) {
        assert.deepEqual(await store.streamNames("s"), ["log", "out"], "the run's stream names, in name order");
        assert.deepEqual(await store.streamNames("none"), []);
      }
      if (!options.reopen) return;
      await store.close();
      const again = await options.reopen(store);
      try {
        assert.deepEqual(await again.readStream!("s", "out", -1, 100), written, "stream records after a reopen");
      } finally {
        await again.close();
      }
    }),
  );

  it(
    "streams: one append of many records, of two streams (a burst written in one turn), is read back whole and in order",
    withStore(async (store) => {
      if (!hasStreams(store)) return;
      const lease = await created(store, "s");
      // Texts a store might mangle on the way: quotes, backslashes, braces and commas, NULL, a newline, non-ASCII.
      const text = (i: number) => (i === 5 ? "NULL" : i === 6 ? "" : JSON.stringify(`chunk ${i} "q" \\ {a,b} NULL\n é 😀`));
      const out = Array.from({ length: 70 }, (_, i) => record("s", "out", i, { chunk: text(i) }));
      const log = Array.from({ length: 40 }, (_, i) => record("s", "log", i, { step: i % 2 === 0 ? null : "a\nb" }));
      // Interleaved, as chunks of two streams written in one loop are.
      const burst = out.flatMap((r, i) => (i < log.length ? [r, log[i]!] : [r]));
      await Promise.all([store.appendStream!(lease, burst), store.writeIntent(lease, stepRow("s", 1, "a"))]);
      await store.appendStream!(lease, [record("s", "out", 70, { kind: "close", offset: 70, chunk: null })]);
      assert.deepEqual(await store.readStream!("s", "out", -1, 1000), [...out, record("s", "out", 70, { kind: "close", offset: 70, chunk: null })]);
      assert.deepEqual(await store.readStream!("s", "log", -1, 1000), log);
      assert.deepEqual(await store.readStream!("s", "out", 31, 33), out.slice(32, 65), "a page after a seq, across the rows of one append");
    }),
  );

  it(
    "streams: an append with a superseded epoch is refused (LEASE_LOST) and writes nothing",
    withStore(async (store) => {
      if (!hasStreams(store)) return;
      const stale = await created(store, "s");
      await store.appendStream!(stale, [record("s", "out", 0)]);
      await store.updateRun("s", () => ({ fenceOut: { now: NOW }, result: true }));
      await refusedWithLeaseLost(store.appendStream!(stale, [record("s", "out", 1)]), "appendStream");
      assert.deepEqual(await store.readStream!("s", "out", -1, 100), [record("s", "out", 0)]);
    }),
  );
}
