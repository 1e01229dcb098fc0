// Child runs: ctx.child and ctx.startChild start a run of another workflow as a step of the
// parent. The child's id is in the parent's log before the child exists, a continue of the parent
// finds the same child, a parent waiting for a child parks and is woken when it ends, a child's
// failure reaches the parent as CHILD_FAILED, and a cancel can cascade. On every store.
import { describe, expect, it } from "vitest";
import { ChildFailedError, createEngine, defineWorkflow, isSteplogError } from "../../src/entries/index.js";
import { fakeClock } from "../../src/entries/testing.js";
import { EVERY_STORE } from "../helpers/stores.js";
import { until } from "../helpers/until.js";
import { untilAborted } from "../helpers/abort.js";

const calls: string[] = [];

const review = defineWorkflow({
  name: "review",
  async run(ctx, args: { pr: number; wait?: boolean; fail?: boolean }) {
    const lint = await ctx.step("lint", () => {
      calls.push(`${ctx.runId}:lint`);
      return `lint ok for #${args.pr}`;
    });
    if (args.wait) await ctx.waitForEvent("verdict");
    await ctx.step("judge", () => {
      calls.push(`${ctx.runId}:judge`);
      if (args.fail && ctx.attempt === 1) throw new Error(`judge cannot read #${args.pr}`);
    });
    return { pr: args.pr, lint };
  },
});

const release = defineWorkflow({
  name: "release",
  async run(ctx, args: { wait?: boolean; fail?: boolean }) {
    const before = await ctx.step("prepare", () => {
      calls.push(`${ctx.runId}:prepare`);
      return "prepared";
    });
    const reviewed = await ctx.child("review", review, { pr: 7, ...args });
    await ctx.step("ship", () => calls.push(`${ctx.runId}:ship`));
    return { before, reviewed };
  },
});

const fanOut = defineWorkflow({
  name: "fan-out",
  async run(ctx) {
    const a = await ctx.startChild("a", review, { pr: 1 });
    const b = await ctx.startChild("b", review, { pr: 2 }, { id: "review-two" });
    return [await a.result(), await b.result(), a.runId, b.runId];
  },
});

/** How long the slow child's first step runs when nothing aborts it: far longer than a prompt cancel. */
const LONG_MS = 4_000;

/** A step function that runs until its signal aborts, or LONG_MS has passed. */
async function longCall(signal: AbortSignal): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([untilAborted(signal), new Promise((resolve) => (timer = setTimeout(resolve, LONG_MS)))]);
  } finally {
    clearTimeout(timer);
  }
}

const slowReview = defineWorkflow({
  name: "slow-review",
  async run(ctx) {
    await ctx.step("read", async ({ signal }) => {
      calls.push(`${ctx.runId}:read`);
      if (ctx.attempt === 1) await longCall(signal);
    });
    await ctx.step("after", () => calls.push(`${ctx.runId}:after`));
    return "read";
  },
});

const slowRelease = defineWorkflow({
  name: "slow-release",
  async run(ctx) {
    const read = await ctx.child("review", slowReview, {});
    await ctx.step("ship", () => calls.push(`${ctx.runId}:ship`));
    return read;
  },
});

describe.each(EVERY_STORE)("child runs (%s)", (_name, makeStore) => {
  it("ctx.child runs the child here and resolves with its value; get shows parent and children", async () => {
    calls.length = 0;
    const engine = createEngine({ store: makeStore(), workflows: [release] });
    const done = await engine.start(release, {}, { id: "r1" });
    expect(done).toMatchObject({ status: "completed", value: { before: "prepared", reviewed: { pr: 7, lint: "lint ok for #7" } } });
    const parent = await engine.get("r1");
    expect(parent.parent).toBeNull();
    expect(parent.children).toMatchObject([{ id: "r1/review", workflow: "review", status: "completed" }]);
    const row = parent.steps.find((s) => s.key === "review")!;
    expect(row).toMatchObject({ status: "succeeded", value: { pr: 7, lint: "lint ok for #7" }, resolution: { wait: { kind: "child", child: "r1/review" } } });
    const child = await engine.get("r1/review");
    expect(child).toMatchObject({ parent: "r1", children: [], workflow: "review", status: "completed" });
    expect(await engine.list({ parent: "r1" })).toMatchObject([{ id: "r1/review" }]);
    expect(calls).toEqual(["r1:prepare", "r1/review:lint", "r1/review:judge", "r1:ship"]);
    // A continue from the start reuses the child's value: no second child, nothing called again.
    calls.length = 0;
    expect(await engine.continue("r1", { fromStep: "ship" })).toMatchObject({ status: "completed" });
    expect(calls).toEqual(["r1:ship"]);
    expect(await engine.list({ workflow: "review" })).toHaveLength(1);
    await engine.close();
  });

  it("a child that waits parks its parent, and the child's end wakes the parent for a worker", async () => {
    calls.length = 0;
    const engine = createEngine({ store: makeStore(), workflows: [release] });
    const first = await engine.start(release, { wait: true }, { id: "r2" });
    expect(first).toMatchObject({ status: "waiting", waitingFor: { kind: "child", step: "review", child: "r2/review" } });
    expect((await engine.get("r2/review")).status).toBe("waiting");
    expect((await engine.get("r2")).wakeAt).toBeUndefined();
    await engine.send("r2/review", "verdict", "lgtm");
    const stop = new AbortController();
    const working = engine.work({ pollMs: 20, signal: stop.signal });
    try {
      await until("the worker to complete r2", async () => (await engine.get("r2")).status === "completed");
    } finally {
      stop.abort();
    }
    const { attempts } = await working;
    expect(attempts.map((a) => [a.id, a.status])).toEqual([
      ["r2/review", "completed"],
      ["r2", "completed"],
    ]);
    expect((await engine.get("r2")).value).toEqual({ before: "prepared", reviewed: { pr: 7, lint: "lint ok for #7" } });
    // Each function once: the parent's second attempt reused prepare and took the child's value.
    expect(calls).toEqual(["r2:prepare", "r2/review:lint", "r2/review:judge", "r2:ship"]);
    await engine.close();
  });

  it("a child's failure reaches the parent as CHILD_FAILED; a continue of the parent continues the child", async () => {
    calls.length = 0;
    const engine = createEngine({ store: makeStore(), workflows: [release] });
    const failed = await engine.start(release, { fail: true }, { id: "r3" });
    expect(failed).toMatchObject({ status: "failed", error: { code: "CHILD_FAILED", step: "review" } });
    expect(failed.error!.message).toContain('child run "r3/review" (workflow "review") ended failed: judge cannot read #7');
    expect(failed.error!.message).toContain('engine.continue("r3")');
    expect((await engine.get("r3/review")).status).toBe("failed");
    const again = await engine.continue("r3");
    expect(again).toMatchObject({ status: "completed", value: { reviewed: { pr: 7 } } });
    // The child's second attempt reused lint; no second child run.
    expect(calls).toEqual(["r3:prepare", "r3/review:lint", "r3/review:judge", "r3/review:judge", "r3:ship"]);
    expect((await engine.get("r3/review")).attemptCount).toBe(2);
    await engine.close();
  });

  it("a workflow can catch CHILD_FAILED and go on; the child's error is its cause", async () => {
    const careful = defineWorkflow({
      name: "careful",
      async run(ctx) {
        try {
          return await ctx.child("review", review, { pr: 9, fail: true });
        } catch (error) {
          if (!isSteplogError(error, "CHILD_FAILED")) throw error;
          return { gaveUp: (error as ChildFailedError).childRunId, cause: ((error as Error).cause as Error).message };
        }
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [careful] });
    expect(await engine.start(careful, undefined, { id: "c1" })).toMatchObject({
      status: "completed",
      value: { gaveUp: "c1/review", cause: "judge cannot read #9" },
    });
    await engine.close();
  });

  it("a caught CHILD_FAILED keeps the child's error as its cause on a continue: the handler takes the same branch", async () => {
    calls.length = 0;
    const seen: unknown[] = [];
    const branching = defineWorkflow({
      name: "branching",
      async run(ctx) {
        try {
          await ctx.child("review", review, { pr: 11, fail: true });
        } catch (error) {
          if (!isSteplogError(error, "CHILD_FAILED")) throw error;
          const cause = (error as Error).cause as Error | undefined;
          seen.push(cause && { name: cause.name, message: cause.message });
          if (cause?.message.includes("cannot read")) await ctx.step("ask-a-human", () => calls.push(`${ctx.runId}:ask-a-human`));
          else await ctx.step("give-up", () => calls.push(`${ctx.runId}:give-up`));
        }
        await ctx.step("publish", () => {
          calls.push(`${ctx.runId}:publish`);
          if (ctx.attempt === 1) throw new Error("publisher down");
        });
        return "published";
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [branching] });
    expect(await engine.start(branching, undefined, { id: "b1" })).toMatchObject({ status: "failed", error: { message: "publisher down" } });
    // The continue throws the recorded CHILD_FAILED again (the child is not continued) with the same cause.
    expect(await engine.continue("b1")).toMatchObject({ status: "completed", value: "published" });
    const first = { name: "Error", message: "judge cannot read #11" };
    expect(seen).toEqual([first, first]);
    expect(calls).toEqual(["b1/review:lint", "b1/review:judge", "b1:ask-a-human", "b1:publish", "b1:publish"]);
    const row = (await engine.get("b1")).steps.find((s) => s.key === "review")!;
    expect(row).toMatchObject({ status: "failed", handled: true, error: { code: "CHILD_FAILED", cause: { name: "Error", message: "judge cannot read #11" } } });
    expect((await engine.get("b1/review")).attemptCount).toBe(1);
    await engine.close();
  });

  it("a caught CHILD_FAILED of a cancelled child: its cause is the child's RUN_CANCELLED, naming the child's run, on a continue too", async () => {
    const seen: unknown[] = [];
    const watching = defineWorkflow({
      name: "watching",
      async run(ctx) {
        try {
          await ctx.child("review", review, { pr: 12, wait: true });
        } catch (error) {
          if (!isSteplogError(error, "CHILD_FAILED")) throw error;
          const cause = (error as Error).cause as { code?: string; runId?: string; name?: string } | undefined;
          seen.push({ name: cause?.name, code: cause?.code, runId: cause?.runId });
        }
        await ctx.step("report", () => {
          if (ctx.attempt === 2) throw new Error("reporter down");
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [watching] });
    expect(await engine.start(watching, undefined, { id: "w1" })).toMatchObject({ status: "waiting" });
    await engine.cancel("w1/review");
    expect(await engine.continue("w1")).toMatchObject({ status: "failed", error: { message: "reporter down" } });
    expect(await engine.continue("w1")).toMatchObject({ status: "completed" });
    const first = { name: "RunCancelledError", code: "RUN_CANCELLED", runId: "w1/review" };
    expect(seen).toEqual([first, first]);
    await engine.close();
  });

  it("a CHILD_FAILED's recorded cause is bounded: a long chain is cut, huge messages are shortened", async () => {
    const deep = defineWorkflow({
      name: "deep-failure",
      async run(ctx) {
        await ctx.step("fail", () => {
          let error = new Error(`level 0 ${"m".repeat(50_000)}`);
          for (let i = 1; i <= 8; i++) error = new Error(`level ${i} ${"m".repeat(50_000)}`, { cause: error });
          throw error;
        });
      },
    });
    const parent = defineWorkflow({
      name: "deep-parent",
      async run(ctx) {
        return ctx.child("deep", deep, {});
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [parent] });
    const { error } = await engine.start(parent, undefined, { id: "dp" });
    expect(error).toMatchObject({ code: "CHILD_FAILED", cause: { message: expect.stringMatching(/^level 8 m+… \(\d+ more characters\)$/) } });
    let depth = 0;
    for (let e = error!.cause; e; e = e.cause) depth++;
    expect(depth).toBe(4);
    // The whole record (the step's row and the run's error): the child's message quoted, the cause's bounded.
    const row = (await engine.get("dp")).steps.find((s) => s.key === "deep")!;
    expect(JSON.stringify(row.error).length).toBeLessThan(12_000);
    expect(JSON.stringify(error).length).toBeLessThan(12_000);
    await engine.close();
  });

  it("startChild returns at once; result() waits; ids given or derived", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [fanOut] });
    const done = await engine.start(fanOut, undefined, { id: "f" });
    expect(done).toMatchObject({
      status: "completed",
      value: [{ pr: 1, lint: "lint ok for #1" }, { pr: 2, lint: "lint ok for #2" }, "f/a", "review-two"],
    });
    const view = await engine.get("f");
    expect(view.steps.map((s) => [s.key, s.status])).toEqual([
      ["a", "succeeded"],
      ["b", "succeeded"],
      ["a.result", "succeeded"],
      ["b.result", "succeeded"],
    ]);
    expect(view.children.map((c) => c.id).sort()).toEqual(["f/a", "review-two"]);
    await engine.close();
  });

  it("a run with the child's id that is not its child, or with other args, is refused: RUN_EXISTS", async () => {
    const taken = defineWorkflow({
      name: "taken",
      async run(ctx) {
        return ctx.child("review", review, { pr: 3 }, { id: "someone-else" });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [taken, review] });
    await engine.start(review, { pr: 3 }, { id: "someone-else" });
    const refused = await engine.start(taken, undefined, { id: "t" });
    expect(refused).toMatchObject({ status: "failed", error: { code: "RUN_EXISTS", step: "review" } });
    expect(refused.error!.message).toContain('is not a child of run "t"');
    await engine.close();
  });

  it("cancel(parent, { children: true }) cancels the waiting child too; a continue of the parent continues it", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [release] });
    await engine.start(release, { wait: true }, { id: "r4" });
    expect(await engine.cancel("r4", { children: true })).toBe("cancelled");
    expect((await engine.get("r4/review")).status).toBe("cancelled");
    expect((await engine.get("r4/review")).error!.message).toContain('its parent run "r4" was cancelled');
    // Without children: true the child is left alone.
    await engine.start(release, { wait: true }, { id: "r5" });
    await engine.cancel("r5");
    expect((await engine.get("r5/review")).status).toBe("waiting");
    // The cancelled parent's continue continues its cancelled child, which waits again.
    expect(await engine.continue("r4")).toMatchObject({ status: "waiting", waitingFor: { kind: "child", child: "r4/review" } });
    expect((await engine.get("r4/review")).status).toBe("waiting");
    await expect(engine.cancel("r4", { children: "yes" as never })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await engine.close();
  });

  it("cancel(parent, { children: true }) while the child runs in this engine: the child's attempt ends cancelled at once, its next step not run", async () => {
    calls.length = 0;
    const engine = createEngine({ store: makeStore(), workflows: [slowRelease] });
    const started = engine.start(slowRelease, {}, { id: "s1" });
    await until("the child's long step to run", () => calls.includes("s1/review:read"));
    const before = Date.now();
    expect(await engine.cancel("s1", { children: true })).toBe("cancelled");
    expect(Date.now() - before).toBeLessThan(LONG_MS / 2);
    expect(await started).toMatchObject({ status: "cancelled" });
    const child = await engine.get("s1/review");
    expect(child).toMatchObject({ status: "cancelled", error: { code: "RUN_CANCELLED" } });
    expect(child.error!.message).toContain('its parent run "s1" was cancelled');
    // Its running step saw its signal abort and is recorded failed; the step after it never ran.
    expect(child.steps.map((s) => [s.key, s.status, s.error?.code])).toEqual([["read", "failed", "RUN_CANCELLED"]]);
    expect(calls).toEqual(["s1/review:read"]);
    // The parent's child step stays open with the child's id: a continue of the parent takes up that child.
    const parent = await engine.get("s1");
    expect(parent.status).toBe("cancelled");
    expect(parent.steps.map((s) => [s.key, s.status, s.resolution])).toEqual([
      ["review", "intended", { wait: { kind: "child", step: "review", child: "s1/review" } }],
    ]);
    expect(await engine.continue("s1")).toMatchObject({ status: "completed", value: "read" });
    expect(calls).toEqual(["s1/review:read", "s1/review:read", "s1/review:after", "s1:ship"]);
    expect(await engine.list({ workflow: "slow-review" })).toHaveLength(1);
    await engine.close();
  });

  it("cancel(parent) without children while the child runs in this engine: the parent ends at once, the child goes on", async () => {
    calls.length = 0;
    const engine = createEngine({ store: makeStore(), workflows: [slowRelease] });
    const started = engine.start(slowRelease, {}, { id: "s2" });
    await until("the child's long step to run", () => calls.includes("s2/review:read"));
    const before = Date.now();
    expect(await engine.cancel("s2")).toBe("cancelled");
    expect(Date.now() - before).toBeLessThan(LONG_MS / 2);
    expect(await started).toMatchObject({ status: "cancelled" });
    expect((await engine.get("s2/review")).status).toBe("running");
    await until("the child to complete", async () => (await engine.get("s2/review")).status === "completed", LONG_MS * 3);
    expect(calls).toEqual(["s2/review:read", "s2/review:after"]);
    // A continue of the parent takes the completed child's value.
    expect(await engine.continue("s2")).toMatchObject({ status: "completed", value: "read" });
    await engine.close();
  });

  it("a parent's deadline passes while its child runs in this engine: the parent ends timed-out at once, the child goes on", async () => {
    calls.length = 0;
    const clock = fakeClock(Date.UTC(2030, 0, 1));
    const engine = createEngine({ store: makeStore(), workflows: [slowRelease], clock });
    const started = engine.start(slowRelease, {}, { id: "s3", timeoutMs: 60_000 });
    await until("the child's long step to run", () => calls.includes("s3/review:read"));
    clock.advance(61_000);
    const before = Date.now();
    const ended = await started;
    // The deadline is looked at again at least every second.
    expect(Date.now() - before).toBeLessThan(LONG_MS / 2);
    expect(ended).toMatchObject({ status: "timed-out", error: { code: "RUN_TIMED_OUT" } });
    expect((await engine.get("s3/review")).status).toBe("running");
    expect((await engine.get("s3")).steps.map((s) => [s.key, s.status])).toEqual([["review", "intended"]]);
    expect(await engine.cancel("s3/review")).toBe("cancelled");
    expect(calls).toEqual(["s3/review:read"]);
    await engine.close();
  });

  it("a parent's deadline passes while it waits for a child: a worker ends it timed-out", async () => {
    const clock = fakeClock(Date.UTC(2030, 0, 1));
    const engine = createEngine({ store: makeStore(), workflows: [release], clock });
    expect(await engine.start(release, { wait: true }, { id: "r6", timeoutMs: 60_000 })).toMatchObject({ status: "waiting" });
    expect((await engine.get("r6")).wakeAt).toBe(new Date(Date.UTC(2030, 0, 1) + 60_000).toISOString());
    clock.advance(61_000);
    const stop = new AbortController();
    const working = engine.work({ pollMs: 20, signal: stop.signal });
    try {
      await until("the worker to end r6 timed-out", async () => (await engine.get("r6")).status === "timed-out");
    } finally {
      stop.abort();
    }
    await working;
    expect(await engine.get("r6")).toMatchObject({ status: "timed-out", error: { code: "RUN_TIMED_OUT" } });
    expect((await engine.get("r6/review")).status).toBe("waiting");
    await engine.close();
  });

  it("bad calls are refused before anything is written", async () => {
    const bad = defineWorkflow({
      name: "bad",
      async run(ctx, which: string) {
        if (which === "not-a-workflow") return ctx.child("x", { name: "nope" } as never, {});
        if (which === "option") return ctx.child("x", review, { pr: 1 }, { idd: "x" } as never);
        if (which === "id") return ctx.child("x", review, { pr: 1 }, { id: "bad\u0000id" });
        return ctx.child("x#1", review, { pr: 1 });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [bad] });
    for (const [which, code] of [
      ["not-a-workflow", "INVALID_OPTION"],
      ["option", "INVALID_OPTION"],
      ["id", "INVALID_NAME"],
      ["name", "INVALID_NAME"],
    ] as const) {
      const result = await engine.start(bad, which, { id: `bad-${which}` });
      expect(result, which).toMatchObject({ status: "failed", error: { code } });
      expect((await engine.get(`bad-${which}`)).steps).toEqual([]);
    }
    expect(await engine.list({ workflow: "review" })).toEqual([]);
    await engine.close();
  });
});

describe("child runs in testWorkflow", () => {
  it("a seeded child step is reused; a mocked one is called instead of starting a child; an unmocked one runs the child", async () => {
    const { testWorkflow } = await import("../../src/entries/testing.js");
    calls.length = 0;
    const seeded = await testWorkflow(release, { args: {}, earlier: { steps: { prepare: "prepared", review: { pr: 7, lint: "seeded" } } } });
    expect(seeded).toMatchObject({ status: "completed", reused: ["prepare", "review"], ran: ["ship"] });
    expect(calls).toEqual(["test-run:ship"]);

    calls.length = 0;
    const mocked = await testWorkflow(release, { args: {}, mocks: { review: () => ({ pr: 7, lint: "mocked" }) } });
    expect(mocked).toMatchObject({ status: "completed", value: { reviewed: { lint: "mocked" } }, ran: ["prepare", "review", "ship"] });
    expect(mocked.calls("review")).toBe(1);
    expect(calls).toEqual(["test-run:prepare", "test-run:ship"]);

    calls.length = 0;
    const real = await testWorkflow(release, { args: {} });
    expect(real).toMatchObject({ status: "completed", value: { reviewed: { lint: "lint ok for #7" } } });
    expect(calls).toEqual(["test-run:prepare", "test-run/review:lint", "test-run/review:judge", "test-run:ship"]);
  });
});
