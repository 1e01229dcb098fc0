// engine.cancel(id), info.usage() and the recorded source.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { STORES } from "../helpers/stores.js";

describe.each(STORES)("cancel, usage and source (%s)", (_name, makeStore) => {
  it("ctx.signal first read after the attempt ended early is already aborted, with the ending as its reason; `const { signal, step } = ctx` works", async () => {
    const seen: Array<[boolean, string | undefined]> = [];
    const workflow = defineWorkflow({
      name: "late-signal",
      async run(ctx) {
        const { step, stop } = ctx;
        await step("first", async () => 1);
        try {
          stop("enough for now");
        } catch {
          // The stop request is thrown through the code; caught here to read the signal after it.
        }
        // Nothing asked for the attempt's signal before the stop.
        const { signal } = ctx;
        seen.push([signal.aborted, (signal.reason as { code?: string } | undefined)?.code]);
        return null;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "late" })).toMatchObject({ status: "stopped", error: { code: "STOPPED" } });
    expect(seen).toEqual([[true, "STOPPED"]]);
  });

  it("a start whose signal is already aborted ends cancelled before any step's function is called; a continue runs it", async () => {
    let calls = 0;
    const workflow = defineWorkflow({
      name: "pre-aborted",
      async run(ctx) {
        return ctx.step("only", async () => ++calls);
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const controller = new AbortController();
    controller.abort(new Error("stopped before it began"));
    const result = await engine.start(workflow, undefined, { id: "pre", signal: controller.signal });
    expect(result).toMatchObject({ status: "cancelled", error: { code: "RUN_CANCELLED" } });
    expect(result.error!.message).toContain("stopped before it began");
    expect(calls).toBe(0);
    expect(await engine.continue("pre")).toMatchObject({ status: "completed", value: 1 });
    expect(calls).toBe(1);
  });

  it("cancel(id) of a run this engine runs: the attempt ends cancelled, the step's signal aborted; a continue goes on", async () => {
    let release = false;
    let entered!: () => void;
    const inStep = new Promise<void>((resolve) => (entered = resolve));
    const workflow = defineWorkflow({
      name: "long",
      async run(ctx) {
        return ctx.step("wait", ({ signal }) => {
          if (release) return "done";
          entered();
          return new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(new Error("aborted"))));
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const running = engine.start(workflow, undefined, { id: "c" });
    await inStep;
    expect(await engine.cancel("c", { reason: "operator said so" })).toBe("cancelled");
    expect(await running).toMatchObject({ status: "cancelled", error: { code: "RUN_CANCELLED", step: "wait" } });
    expect((await running).error!.message).toContain("operator said so");
    release = true;
    expect(await engine.continue("c")).toMatchObject({ status: "completed", value: "done" });
    await expect(engine.cancel("c")).rejects.toMatchObject({ code: "RUN_COMPLETED" });
    await expect(engine.cancel("missing")).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
  });

  it("cancel(id) of a parked run: it stops waiting; of a run held elsewhere: the holder is fenced out", async () => {
    const store = makeStore();
    const workflow = defineWorkflow({
      name: "parked",
      async run(ctx) {
        return ctx.waitForEvent("go");
      },
    });
    const engine = createEngine({ store, workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "p" });
    expect(await engine.cancel("p")).toBe("cancelled");
    expect(await engine.get("p")).toMatchObject({ status: "cancelled", error: { code: "RUN_CANCELLED" } });
    expect((await engine.get("p")).waitingFor).toBeUndefined();
    // Held by a live attempt of another engine (think: another process): it loses the lease.
    let started!: () => void;
    const inStep = new Promise<void>((resolve) => (started = resolve));
    const slow = defineWorkflow({
      name: "slow",
      async run(ctx) {
        await ctx.step("one", () => {
          started();
          return new Promise((resolve) => setTimeout(resolve, 150));
        });
        return ctx.step("two", async () => "never");
      },
    });
    const holder = createEngine({ store, workflows: [slow], leaseMs: 60 });
    const held = holder.start(slow, undefined, { id: "h" });
    await inStep;
    const other = createEngine({ store, workflows: [slow] });
    expect(await other.cancel("h")).toBe("cancelled");
    expect(await held).toMatchObject({ status: "failed", runStatus: "cancelled", error: { code: "LEASE_LOST" } });
    expect((await other.get("h")).steps.map((s) => s.key)).toEqual(["one"]);
  });

  it("info.usage() adds up per step (retries included) and per run", async () => {
    const workflow = defineWorkflow({
      name: "costly",
      async run(ctx) {
        await ctx.step("plan", { retry: { maxAttempts: 2, backoffMs: 1 } }, ({ usage, retry }) => {
          usage({ inputTokens: 100, outputTokens: 10, costUsd: 0.01 });
          if (retry === 0) throw new Error("flaky model");
          return "plan";
        });
        await ctx.step("search", ({ usage }) => {
          usage({ costUsd: 0.002, requests: 1 });
          return "hits";
        });
        return "ok";
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "u" });
    const view = await engine.get("u");
    expect(view.steps.map((s) => s.usage)).toEqual([
      { inputTokens: 200, outputTokens: 20, costUsd: 0.02 },
      { costUsd: 0.002, requests: 1 },
    ]);
    expect(view.usage.inputTokens).toBe(200);
    expect(view.usage.costUsd).toBeCloseTo(0.022);
  });

  it("info.usage survives a copy of info ({ ...info }) handed to a helper, and info shows nothing of the step's record", async () => {
    const report = (info: { usage(used: { inputTokens: number }): void }) => info.usage({ inputTokens: 7 });
    let keys: string[] = [];
    const workflow = defineWorkflow({
      name: "copied-info",
      async run(ctx) {
        return ctx.step("ask", (info) => {
          keys = Object.keys(info);
          report({ ...info });
          return "answer";
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "c" })).toMatchObject({ status: "completed", value: "answer" });
    expect((await engine.get("c")).steps[0]!.usage).toEqual({ inputTokens: 7 });
    // Exactly StepInfo's fields (signal is a getter on the prototype, as ctx.signal is): nothing
    // of the step's record or of how the call's signal is linked to the attempt's.
    expect(keys.sort()).toEqual(["attempt", "idempotencyKey", "previous", "retry", "runId", "step", "usage"]);
  });

  it("a step's timeout aborts its signal with STEP_TIMED_OUT, read before the timeout fired or after", async () => {
    const reasons: unknown[] = [];
    const workflow = defineWorkflow({
      name: "timed-signal",
      async run(ctx) {
        const early = ctx.step("early", { timeoutMs: 20 }, async (info) => {
          const signal = info.signal;
          await new Promise((resolve) => setTimeout(resolve, 60));
          reasons.push(signal.aborted ? signal.reason : "not aborted");
          return "early";
        });
        const late = ctx.step("late", { timeoutMs: 20 }, async (info) => {
          await new Promise((resolve) => setTimeout(resolve, 60));
          reasons.push(info.signal.aborted ? info.signal.reason : "not aborted");
          return "late";
        });
        return [await early, await late];
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    // A value that arrives after the timeout fired is still the call's result (its effect happened).
    expect(await engine.start(workflow, undefined, { id: "t" })).toMatchObject({ status: "completed", value: ["early", "late"] });
    expect(reasons).toHaveLength(2);
    for (const reason of reasons) expect(reason).toMatchObject({ code: "STEP_TIMED_OUT" });
  });

  it("the source given at the start is recorded and never overwritten", async () => {
    const workflow = defineWorkflow({
      name: "src",
      async run() {
        throw new Error("x");
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "s", source: "/app/workflows/src.ts" });
    await engine.continue("s");
    expect((await engine.get("s")).source).toBe("/app/workflows/src.ts");
  });
});
