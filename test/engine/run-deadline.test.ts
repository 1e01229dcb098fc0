// A run's deadline (start's timeoutMs or deadline, or the workflow's timeoutMs) is recorded on
// the run and holds across attempts and parks: a run waiting past it is ended timed-out by a
// worker, with no process alive in between; a continue of a timed-out run takes a new one only
// when given one.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, type Engine } from "../../src/entries/index.js";
import { fakeClock } from "../../src/entries/testing.js";
import { EVERY_STORE } from "../helpers/stores.js";

const HOUR = 3_600_000;

async function workUntil(engine: Engine, until: () => Promise<boolean> | boolean) {
  const controller = new AbortController();
  const worker = engine.work({ pollMs: 10, signal: controller.signal });
  const started = Date.now();
  while (!(await until()) && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 5));
  controller.abort();
  return worker;
}

function waiter(name: string, calls: string[], options: { timeoutMs?: number } = {}) {
  return defineWorkflow({
    name,
    ...options,
    async run(ctx) {
      await ctx.step("before", () => calls.push("before"));
      const answer = await ctx.waitForEvent("answer");
      await ctx.step("after", () => calls.push("after"));
      return answer;
    },
  });
}

describe.each(EVERY_STORE)("a run deadline (%s)", (_name, makeStore) => {
  it("spans a park: a run waiting for an event past its deadline is ended timed-out by a worker, by a new engine", async () => {
    const clock = fakeClock();
    const calls: string[] = [];
    const workflow = waiter("deadline-event", calls);
    const store = makeStore();
    const first = createEngine({ store, workflows: [workflow], clock });
    const started = clock.now();
    expect(await first.start(workflow, undefined, { id: "d", timeoutMs: HOUR })).toMatchObject({ status: "waiting" });
    const parked = await first.get("d");
    // Due at the deadline, though the event has no timeout: a worker looks then.
    expect(parked.wakeAt).toBe(new Date(started + HOUR).toISOString());

    // Another engine (another process, say) with a worker; nothing ran in between.
    const second = createEngine({ store, workflows: [workflow], clock });
    clock.advance(HOUR - 1);
    const early = await workUntil(second, () => true);
    expect(early.attempts).toEqual([]);
    clock.advance(2);
    const summary = await workUntil(second, async () => (await second.get("d")).status === "timed-out");
    expect(summary.attempts).toMatchObject([{ id: "d", status: "timed-out", error: { code: "RUN_TIMED_OUT" } }]);
    expect(calls).toEqual(["before"]);
    const view = await second.get("d");
    expect(view.status).toBe("timed-out");
    expect(view.error).toMatchObject({ code: "RUN_TIMED_OUT", message: expect.stringContaining(new Date(started + HOUR).toISOString()) });

    // A continue of a timed-out run goes on with no deadline unless given one.
    await second.send("d", "answer", "late", { keep: true });
    expect(await second.continue("d")).toMatchObject({ status: "completed", value: "late" });
    expect(calls).toEqual(["before", "after"]);
    await first.close();
    await second.close();
  });

  it("holds across attempts: a continue after a failure keeps the run's deadline; one given replaces it", async () => {
    const clock = fakeClock();
    let fail = true;
    const workflow = defineWorkflow({
      name: "deadline-across",
      async run(ctx) {
        await ctx.step("a", () => {
          if (fail) throw new Error("flaky");
          return 1;
        });
        return ctx.waitForEvent("go");
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow], clock });
    const at = new Date(clock.now() + 10 * HOUR);
    expect(await engine.start(workflow, undefined, { id: "x", deadline: at })).toMatchObject({ status: "failed" });
    fail = false;
    expect(await engine.continue("x")).toMatchObject({ status: "waiting" });
    expect((await engine.get("x")).wakeAt).toBe(at.toISOString());
    // A new deadline replaces it.
    expect(await engine.continue("x", { timeoutMs: HOUR })).toMatchObject({ status: "waiting" });
    expect((await engine.get("x")).wakeAt).toBe(new Date(clock.now() + HOUR).toISOString());
    await engine.close();
  });

  it("the workflow's timeoutMs is every run's deadline unless start gives one; a sleep past it wakes at the deadline", async () => {
    const clock = fakeClock();
    const workflow = defineWorkflow({
      name: "deadline-default",
      timeoutMs: HOUR,
      async run(ctx) {
        await ctx.sleep("nap", 5 * HOUR);
        return "rested";
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow], clock });
    const now = clock.now();
    await engine.start(workflow, undefined, { id: "w1" });
    await engine.start(workflow, undefined, { id: "w2", timeoutMs: 10 * HOUR });
    expect((await engine.get("w1")).wakeAt).toBe(new Date(now + HOUR).toISOString());
    expect((await engine.get("w2")).wakeAt).toBe(new Date(now + 5 * HOUR).toISOString());
    clock.advance(5 * HOUR);
    await workUntil(engine, async () => (await engine.get("w1")).status === "timed-out" && (await engine.get("w2")).status === "completed");
    expect((await engine.get("w1")).status).toBe("timed-out");
    expect(await engine.get("w2")).toMatchObject({ status: "completed", value: "rested" });
    await engine.close();
  });

  it("bad deadlines are refused: both timeoutMs and deadline, an invalid Date, a workflow timeoutMs ≤ 0", async () => {
    const calls: string[] = [];
    const workflow = waiter("deadline-bad", calls);
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await expect(engine.start(workflow, undefined, { timeoutMs: 5, deadline: Date.now() + 5 })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(engine.start(workflow, undefined, { deadline: new Date("nope") })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    expect(() => defineWorkflow({ name: "zero", timeoutMs: 0, run: async () => 1 })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    expect(calls).toEqual([]);
    expect(await engine.list()).toEqual([]);
    await engine.close();
  });
});
