// engine.send with a key: an event is recorded once however often it is sent (a webhook
// delivered twice, a retried request), on every store and between store handles.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { postgresStore } from "../../src/entries/postgres.js";
import { memoryStore } from "../../src/entries/memory.js";
import { EVERY_STORE } from "../helpers/stores.js";
import { tmpDb } from "../helpers/tmp.js";
import type { Store } from "../../src/store/types.js";

const PG_URL = process.env.STEPLOG_PG_URL;

const payment = defineWorkflow({
  name: "payment",
  async run(ctx) {
    const paid = await ctx.waitForEvent("paid");
    const note = await ctx.waitForEvent("note");
    return { paid, note };
  },
});

describe.each(EVERY_STORE)("send with a key (%s)", (_name, makeStore) => {
  it("a second send with the key is accepted and changes nothing: the first delivery, duplicate", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [payment] });
    await engine.start(payment, undefined, { id: "p" });
    const first = await engine.send("p", "paid", { amount: 12 }, { key: "evt_1" });
    expect(first).toMatchObject({ runId: "p", event: "paid", seq: 1, duplicate: false });
    expect(Date.parse(first.sentAt)).toBeGreaterThan(0);
    const again = await engine.send("p", "paid", { amount: 99 }, { key: "evt_1" });
    expect(again).toEqual({ ...first, duplicate: true });
    // Even as another event, and when the run no longer waits for anything of that name.
    expect(await engine.send("p", "refund", "x", { key: "evt_1" })).toEqual({ ...first, duplicate: true });
    expect((await engine.store.loadRun("p"))!.events).toHaveLength(1);

    expect(await engine.continue("p")).toMatchObject({ status: "waiting" });
    await engine.send("p", "note", "hello", { key: "evt_2" });
    const done = await engine.continue("p");
    expect(done).toMatchObject({ status: "completed", value: { paid: { amount: 12 }, note: "hello" } });
    // After the run ended: still accepted, still nothing new.
    expect(await engine.send("p", "note", "late", { key: "evt_2" })).toMatchObject({ event: "note", seq: 2, duplicate: true });
    await expect(engine.send("p", "note", "late", { key: "evt_3" })).rejects.toMatchObject({ code: "NOT_WAITING" });
    expect((await engine.store.loadRun("p"))!.events.map((e) => [e.seq, e.name, e.key])).toEqual([
      [1, "paid", "evt_1"],
      [2, "note", "evt_2"],
    ]);
    await engine.close();
  });

  it("keys are per run; with keep; sends without a key are not deduplicated", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [payment] });
    await engine.start(payment, undefined, { id: "a" });
    await engine.start(payment, undefined, { id: "b" });
    expect(await engine.send("a", "note", "n", { key: "k", keep: true })).toMatchObject({ seq: 1, duplicate: false });
    expect(await engine.send("b", "note", "n", { key: "k", keep: true })).toMatchObject({ seq: 1, duplicate: false });
    expect(await engine.send("a", "note", "n", { keep: true })).toMatchObject({ seq: 2, duplicate: false });
    expect(await engine.send("a", "note", "n", { keep: true })).toMatchObject({ seq: 3, duplicate: false });
    await engine.close();
  });

  it("a bad key or an unknown option is refused, and nothing is delivered", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [payment] });
    await engine.start(payment, undefined, { id: "p" });
    await expect(engine.send("p", "paid", { amount: 1 }, { key: "" })).rejects.toMatchObject({ code: "INVALID_NAME" });
    await expect(engine.send("p", "paid", { amount: 1 }, { key: "a\u0007b" })).rejects.toMatchObject({ code: "INVALID_NAME" });
    await expect(engine.send("p", "paid", { amount: 1 }, { key: 7 as unknown as string })).rejects.toMatchObject({ code: "INVALID_NAME" });
    await expect(engine.send("p", "paid", { amount: 1 }, { dedupeKey: "x" } as never)).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringContaining("key"),
    });
    expect((await engine.store.loadRun("p"))!.events).toEqual([]);
    await engine.close();
  });
});

/** Pairs of store handles on the same data: a race between them is a race between processes' connections. */
const HANDLES: Array<[string, () => [Store, Store]]> = [
  [
    "memory (one object)",
    () => {
      const s = memoryStore();
      return [s, s];
    },
  ],
  [
    "sqlite (two connections)",
    () => {
      const file = tmpDb();
      return [sqliteStore({ path: file }), sqliteStore({ path: file })];
    },
  ],
  ...(PG_URL
    ? ([
        [
          "postgres (two pools)",
          () => {
            const schema = `send_once_${process.pid}_${Date.now()}`;
            return [postgresStore({ connectionString: PG_URL, schema }), postgresStore({ connectionString: PG_URL, schema })];
          },
        ],
      ] as Array<[string, () => [Store, Store]]>)
    : []),
];

describe.each(HANDLES)("the same key sent at once through two handles (%s)", (_name, make) => {
  it("is recorded once; every send but one says duplicate", async () => {
    const [one, two] = make();
    const a = createEngine({ store: one, workflows: [payment] });
    const b = createEngine({ store: two, workflows: [payment] });
    await a.start(payment, undefined, { id: "p" });
    const sends = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).send("p", "note", i, { key: "once", keep: true })));
    expect(sends.filter((s) => !s.duplicate)).toHaveLength(1);
    expect(new Set(sends.map((s) => s.seq))).toEqual(new Set([1]));
    expect((await a.store.loadRun("p"))!.events).toHaveLength(1);
    await a.close();
    if (two !== one) await b.close();
  });
});
