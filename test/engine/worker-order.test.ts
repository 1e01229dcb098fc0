// The order in which a worker fills its slots: runs whose owner is gone first (longest gone
// first), then the ticks of schedules, then due runs. On every store (the order is the worker's,
// from what any store lists). The same with real processes and a SIGKILL: test/crash/worker-order.test.ts.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, type Engine } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { attemptRow, fakeClock, runRow } from "../../src/entries/testing.js";
import type { Store } from "../../src/store/types.js";
import { EVERY_STORE, withOverrides } from "../helpers/stores.js";

/** Leave a run of `workflow` interrupted: an attempt with no ending, on a host that is gone, its lease expired; its owner last heard from at `heardAt`. */
async function orphan(store: Store, id: string, workflow: string, heardAt: number): Promise<void> {
  const run = runRow(id, { workflow, version: null, args: '{"$type":"undefined"}', createdAt: heardAt, updatedAt: heardAt });
  const attempt = attemptRow(id, 1, { host: "gone-host", bootId: null, pid: 1, processStart: null, startedAt: heardAt });
  await store.createRun(run, attempt, { expiresAt: 0, now: heardAt });
}

/** Run a worker until `until` says so (or a few seconds pass), then stop it. */
async function workUntil(engine: Engine, until: () => Promise<boolean> | boolean, concurrency: number) {
  const controller = new AbortController();
  const worker = engine.work({ concurrency, pollMs: 10, signal: controller.signal });
  const started = Date.now();
  while (!(await until()) && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 5));
  controller.abort();
  return worker;
}

describe.each(EVERY_STORE)("the order a worker takes runs in (%s)", (_name, makeStore) => {
  it("runs whose owner is gone come before due runs, the one whose owner was last heard from longest ago first", async () => {
    const store = makeStore();
    const order: string[] = [];
    const resumed = defineWorkflow({ name: "resumed", autoResume: true, run: (ctx) => ctx.step("work", async () => void order.push(ctx.runId)) });
    const fresh = defineWorkflow({
      name: "fresh",
      async run(ctx) {
        await ctx.waitForEvent("go");
        return ctx.step("work", async () => void order.push(ctx.runId));
      },
    });
    const engine = createEngine({ store, workflows: [resumed, fresh] });
    try {
      // Five due runs: parked on an event that has arrived.
      const due = ["due-0", "due-1", "due-2", "due-3", "due-4"];
      for (const id of due) expect(await engine.start(fresh, undefined, { id })).toMatchObject({ status: "waiting" });
      for (const id of due) await engine.send(id, "go", null);
      // Two runs whose owner is gone: "gone-late" was created first, but its owner was heard from
      // after "gone-early"'s (ids and creation times run against the order expected).
      await orphan(store, "gone-late", "resumed", Date.now() - 1_000);
      await orphan(store, "gone-early", "resumed", Date.now() - 60_000);
      const all = [...due, "gone-late", "gone-early"];
      const summary = await workUntil(engine, async () => (await engine.list({ status: "completed" })).length === all.length, 1);
      expect(summary.attempts.map((a) => a.status)).toEqual(all.map(() => "completed"));
      expect(order).toEqual(["gone-early", "gone-late", ...due]);
    } finally {
      await engine.close();
    }
  });
});

describe("the order a worker takes runs in: schedules", () => {
  it("a run whose owner is gone comes before a tick due at the same time", async () => {
    const store = memoryStore();
    const clock = fakeClock(Date.UTC(2030, 0, 1, 0, 30));
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const hourly = defineWorkflow({ name: "hourly", schedule: { cron: "0 * * * *" }, run: (ctx) => ctx.step("work", async () => void order.push(ctx.runId)) });
    const resumed = defineWorkflow({ name: "resumed", autoResume: true, run: (ctx) => ctx.step("work", async () => void order.push(ctx.runId)) });
    const blocking = defineWorkflow({
      name: "blocking",
      async run(ctx) {
        await ctx.waitForEvent("go");
        return ctx.step("work", async () => (order.push(ctx.runId), gate));
      },
    });
    const engine = createEngine({ store, workflows: [hourly, resumed, blocking], clock });
    try {
      await engine.start(blocking, undefined, { id: "blocker" });
      await engine.send("blocker", "go", null);
      const controller = new AbortController();
      const worker = engine.work({ concurrency: 1, pollMs: 10, signal: controller.signal });
      // The one slot is taken by the blocker; meanwhile a tick comes due and a run's owner is gone.
      while (!order.includes("blocker")) await new Promise((resolve) => setTimeout(resolve, 5));
      clock.set(Date.UTC(2030, 0, 1, 1, 0, 1));
      await orphan(store, "gone", "resumed", clock.now() - 60_000);
      release();
      const started = Date.now();
      while (order.length < 3 && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 5));
      controller.abort();
      await worker;
      expect(order).toEqual(["blocker", "gone", "hourly@2030-01-01T01:00Z"]);
    } finally {
      await engine.close();
    }
  });

  it("a tick due while the worker's first listing of ready runs is slow is still started (it began before)", async () => {
    let listed!: () => void;
    const slow = new Promise<void>((resolve) => (listed = resolve));
    const store = withOverrides(memoryStore(), { listRuns: async (original, filter) => (await slow, original(filter)) });
    const clock = fakeClock(Date.UTC(2030, 0, 1, 0, 59, 59));
    const hourly = defineWorkflow({ name: "hourly", schedule: { cron: "0 * * * *" }, run: async () => "ok" });
    const engine = createEngine({ store, workflows: [hourly], clock });
    try {
      const controller = new AbortController();
      const worker = engine.work({ pollMs: 10, signal: controller.signal });
      await new Promise((resolve) => setTimeout(resolve, 20));
      // The tick comes due while the worker still waits for its first listing.
      clock.set(Date.UTC(2030, 0, 1, 1, 0, 1));
      listed();
      const started = Date.now();
      while ((await store.loadRun("hourly@2030-01-01T01:00Z")) === undefined && Date.now() - started < 2000)
        await new Promise((resolve) => setTimeout(resolve, 5));
      controller.abort();
      expect((await worker).attempts.map((a) => [a.id, a.status])).toEqual([["hourly@2030-01-01T01:00Z", "completed"]]);
    } finally {
      await engine.close();
    }
  });
});
