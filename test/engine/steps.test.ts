// ctx.step itself: keys, idempotency keys, what the function receives, retries, timeouts, the intent.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, StoreWriteFailedError, type StepInfo } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import type { StepRow, Store } from "../../src/store/types.js";
import { fakeClock } from "../../src/entries/testing.js";
import { STORES, withOverrides } from "../helpers/stores.js";

describe.each(STORES)("ctx.step (%s)", (_name, makeStore) => {
  it("a name used again in one run becomes name#2, name#3 in call order; idempotency keys are runId:key", async () => {
    const infos: StepInfo[] = [];
    const workflow = defineWorkflow({
      name: "keys",
      async run(ctx) {
        for (let i = 0; i < 3; i++) await ctx.step("fetch", async (info) => infos.push(info));
        await ctx.step("other", async (info) => infos.push(info));
        return null;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "run-7" });
    expect(infos.map((i) => [i.step, i.idempotencyKey])).toEqual([
      ["fetch", "run-7:fetch"],
      ["fetch#2", "run-7:fetch#2"],
      ["fetch#3", "run-7:fetch#3"],
      ["other", "run-7:other"],
    ]);
    expect(infos[0]).toMatchObject({ runId: "run-7", attempt: 1, retry: 0 });
    expect(infos[0]!.signal).toBeInstanceOf(AbortSignal);
    expect(infos[0]!.previous).toBeUndefined();
    const view = await engine.get("run-7");
    expect(view.steps.map((s) => [s.key, s.name, s.idempotencyKey])).toEqual([
      ["fetch", "fetch", "run-7:fetch"],
      ["fetch#2", "fetch", "run-7:fetch#2"],
      ["fetch#3", "fetch", "run-7:fetch#3"],
      ["other", "other", "run-7:other"],
    ]);
  });

  it("a failed step keeps its idempotency key when it is redone on a continue", async () => {
    const keys: string[] = [];
    let fail = true;
    const workflow = defineWorkflow({
      name: "redo-key",
      async run(ctx) {
        return ctx.step("charge", async ({ idempotencyKey }) => {
          keys.push(idempotencyKey);
          if (fail) throw new Error("gateway 502");
          return "charged";
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "r" });
    fail = false;
    await engine.continue("r");
    expect(keys).toEqual(["r:charge", "r:charge"]);
  });

  it("retry: calls the function up to maxAttempts times with backoff; info.retry counts; the row counts the calls", async () => {
    const seen: Array<{ retry: number; at: number }> = [];
    const workflow = defineWorkflow({
      name: "retry",
      async run(ctx) {
        return ctx.step("flaky", { retry: { maxAttempts: 4, backoffMs: 20, factor: 2 } }, async ({ retry }) => {
          seen.push({ retry, at: Date.now() });
          if (retry < 2) throw new Error(`flake ${retry}`);
          return "third time lucky";
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "r" });
    expect(result).toMatchObject({ status: "completed", value: "third time lucky" });
    expect(seen.map((s) => s.retry)).toEqual([0, 1, 2]);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(15);
    expect(seen[2]!.at - seen[1]!.at).toBeGreaterThanOrEqual(35);
    const [row] = (await engine.get("r")).steps;
    expect(row).toMatchObject({ status: "succeeded", calls: 3 });
  });

  it("retry: used up, the step fails with the last error; retryIf can refuse a retry", async () => {
    let calls = 0;
    const workflow = defineWorkflow({
      name: "retry-out",
      async run(ctx) {
        await ctx.step("a", { retry: { maxAttempts: 3, backoffMs: 1 } }, async () => {
          calls++;
          throw new Error(`attempt ${calls}`);
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "r" });
    expect(result).toMatchObject({ status: "failed", error: { message: "attempt 3", step: "a" } });
    expect(calls).toBe(3);
    let fatalCalls = 0;
    const fatal = defineWorkflow({
      name: "retry-if",
      async run(ctx) {
        await ctx.step("a", { retry: { maxAttempts: 5, backoffMs: 1, retryIf: (e) => !(e as Error).message.includes("400") } }, async () => {
          fatalCalls++;
          throw new Error("HTTP 400");
        });
      },
    });
    const engine2 = createEngine({ store: makeStore(), workflows: [fatal] });
    expect((await engine2.start(fatal, undefined, { id: "r" })).status).toBe("failed");
    expect(fatalCalls).toBe(1);
  });

  it("timeoutMs aborts the step's signal and fails the call with STEP_TIMED_OUT (retried like any error)", async () => {
    const signals: AbortSignal[] = [];
    const workflow = defineWorkflow({
      name: "timeout",
      async run(ctx) {
        return ctx.step("slow", { timeoutMs: 30, retry: { maxAttempts: 2, backoffMs: 1 } }, ({ signal, retry }) => {
          signals.push(signal);
          if (retry === 1) return "fast enough";
          return new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(new Error("aborted"))));
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "completed", value: "fast enough" });
    expect(signals[0]!.aborted).toBe(true);
    const once = defineWorkflow({
      name: "timeout-once",
      async run(ctx) {
        return ctx.step(
          "slow",
          { timeoutMs: 20 },
          ({ signal }) => new Promise((_r, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))),
        );
      },
    });
    const engine2 = createEngine({ store: makeStore(), workflows: [once] });
    const result = await engine2.start(once, undefined, { id: "r" });
    expect(result).toMatchObject({ status: "failed", error: { code: "STEP_TIMED_OUT", step: "slow" } });
  });

  it("a function that ignores its signal: the engine waits for it and records what it returned (its effect happened); the attempt still ends timed-out", async () => {
    let charges = 0;
    // The deadline passes once the charge has begun (the clock is moved from inside it), however
    // slowly a loaded machine gets there; the charge finishes after it, ignoring its signal.
    const clock = fakeClock();
    const late = defineWorkflow({
      name: "late",
      async run(ctx) {
        const receipt = await ctx.step("charge", { effect: "irreversible" }, ({ signal }) => {
          clock.advance(1_000);
          return new Promise((resolve) => signal.addEventListener("abort", () => setTimeout(() => resolve(`receipt ${++charges}`), 30), { once: true }));
        });
        return ctx.step("email", async () => `sent ${String(receipt)}`);
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [late], clock });
    const result = await engine.start(late, undefined, { id: "r", timeoutMs: 100 });
    expect(result).toMatchObject({ status: "timed-out", error: { code: "RUN_TIMED_OUT", step: "charge" } });
    expect((await engine.get("r")).steps.map((s) => [s.key, s.status, s.value])).toEqual([["charge", "succeeded", "receipt 1"]]);
    // The continue reuses the charge: it is never made twice.
    expect(await engine.continue("r")).toMatchObject({ status: "completed", value: "sent receipt 1" });
    expect(charges).toBe(1);
    const perStep = defineWorkflow({
      name: "late-step",
      async run(ctx) {
        return ctx.step("stubborn", { timeoutMs: 20 }, () => new Promise((resolve) => setTimeout(() => resolve("finished anyway"), 60)));
      },
    });
    const engine2 = createEngine({ store: makeStore(), workflows: [perStep] });
    expect(await engine2.start(perStep, undefined, { id: "r" })).toMatchObject({ status: "completed", value: "finished anyway" });
    const rejecting = defineWorkflow({
      name: "late-reject",
      async run(ctx) {
        return ctx.step(
          "slow",
          { timeoutMs: 20 },
          ({ signal }) => new Promise((_r, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))),
        );
      },
    });
    const engine3 = createEngine({ store: makeStore(), workflows: [rejecting] });
    expect(await engine3.start(rejecting, undefined, { id: "r" })).toMatchObject({ status: "failed", error: { code: "STEP_TIMED_OUT" } });
  });

  it("a step that returns while another step of the attempt stops or escalates is recorded, not lost", async () => {
    let slowCalls = 0;
    let stopNow = true;
    const workflow = defineWorkflow({
      name: "stop-par",
      async run(ctx) {
        const [a] = await Promise.all([
          ctx.step("slow", async () => {
            slowCalls++;
            await new Promise((resolve) => setTimeout(resolve, 30));
            return "slow-done";
          }),
          ctx.step("check", async () => {
            if (stopNow) ctx.stop("not yet");
            return 1;
          }),
        ]);
        return a;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect((await engine.start(workflow, undefined, { id: "s" })).status).toBe("stopped");
    expect((await engine.get("s")).steps.map((s) => [s.key, s.status])).toEqual([
      ["slow", "succeeded"],
      ["check", "stopped"],
    ]);
    stopNow = false;
    expect(await engine.continue("s")).toMatchObject({ status: "completed", value: "slow-done" });
    expect(slowCalls).toBe(1);
  });

  it("ctx.runId, ctx.attempt and ctx.signal describe the attempt", async () => {
    const seen: Array<[string, number, boolean]> = [];
    let fail = true;
    const workflow = defineWorkflow({
      name: "ctx",
      async run(ctx) {
        seen.push([ctx.runId, ctx.attempt, ctx.signal.aborted]);
        if (fail) throw new Error("x");
        return "ok";
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "abc" });
    fail = false;
    await engine.continue("abc");
    expect(seen).toEqual([
      ["abc", 1, false],
      ["abc", 2, false],
    ]);
  });

  it("invalid step names and options are refused with a clear error before any record is written", async () => {
    const workflow = defineWorkflow({
      name: "bad-names",
      async run(ctx) {
        return ctx.step("has#hash", async () => 1);
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "r" });
    expect(result).toMatchObject({ status: "failed", error: { code: "INVALID_NAME" } });
    expect(result.error!.message).toContain(`no "#"`);
    expect((await engine.get("r")).steps).toEqual([]);
    const badEffect = defineWorkflow({
      name: "bad-effect",
      async run(ctx) {
        return ctx.step("x", { effect: "sometimes" as never }, async () => 1);
      },
    });
    const engine2 = createEngine({ store: makeStore(), workflows: [badEffect] });
    expect(await engine2.start(badEffect, undefined, { id: "r" })).toMatchObject({ status: "failed", error: { code: "INVALID_OPTION" } });
  });

  it("an irreversible step refuses to start while another step of the run is in flight (PIVOT_ORDER), writing no intent", async () => {
    const workflow = defineWorkflow({
      name: "pivot",
      async run(ctx) {
        const slow = ctx.step("draft", () => new Promise((resolve) => setTimeout(() => resolve("d"), 30)));
        await ctx.step("send", { effect: "irreversible" }, async () => "sent");
        return slow;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "r" });
    expect(result).toMatchObject({ status: "failed", error: { code: "PIVOT_ORDER", step: "send" } });
    expect(result.error!.message).toContain(`"draft"`);
    const steps = (await engine.get("r")).steps;
    expect(steps.map((s) => s.key)).toEqual(["draft"]);
  });
});

describe("the intent is durable before the function runs", () => {
  it("when the function is called, the store already holds its intended row", async () => {
    const store = memoryStore();
    let seenByFunction: StepRow | undefined;
    const workflow = defineWorkflow({
      name: "intent-first",
      async run(ctx) {
        return ctx.step("effect", async () => {
          seenByFunction = (await store.loadRun("r"))!.steps[0];
          return "done";
        });
      },
    });
    const engine = createEngine({ store, workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "r" });
    expect(seenByFunction).toMatchObject({ key: "effect", status: "intended", attempt: 1 });
  });

  it("when the intent cannot be written the function is not called", async () => {
    const inner = memoryStore();
    const failing: Store = Object.assign(Object.create(Object.getPrototypeOf(inner)), inner, {
      writeIntent: async () => {
        throw new Error("disk full");
      },
    });
    // Bind the memory store's methods so the copy keeps working.
    for (const key of [
      "createRun",
      "claimRun",
      "updateRun",
      "loadRun",
      "listRuns",
      "writeOutcome",
      "renewLease",
      "endAttempt",
      "close",
      "storageId",
    ] as const) {
      (failing as unknown as Record<string, unknown>)[key] = (inner[key] as (...a: unknown[]) => unknown).bind(inner);
    }
    Object.defineProperty(failing, "location", { value: inner.location });
    let called = false;
    const workflow = defineWorkflow({
      name: "no-intent",
      async run(ctx) {
        return ctx.step("effect", async () => {
          called = true;
        });
      },
    });
    const engine = createEngine({ store: failing, workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "r" });
    expect(result).toMatchObject({ status: "failed", error: { message: "disk full" } });
    expect(called).toBe(false);
  });
});

describe("a group-committed outcome that fails", () => {
  it("is never lost: the attempt ends failed (STORE_WRITE_FAILED), not completed, and the step stays intended", async () => {
    const { StoreWriteFailedError } = await import("../../src/base/errors.js");
    const inner = memoryStore();
    const store = withOverrides(inner, {
      writeOutcome: (original, fence, outcome) =>
        outcome.seq === 2
          ? Promise.reject(new StoreWriteFailedError(inner.location, "a step outcome", { runId: fence.runId, cause: new Error("disk full") }))
          : original(fence, outcome),
    });
    const workflow = defineWorkflow({
      name: "last-outcome-lost",
      async run(ctx) {
        await ctx.step("first", async () => 1);
        return ctx.step("last", async () => 2); // idempotent: its outcome is group-committed
      },
    });
    const engine = createEngine({ store, workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "r" });
    expect(result).toMatchObject({ status: "failed", error: { code: "STORE_WRITE_FAILED" } });
    const view = await engine.get("r");
    expect(view.status).not.toBe("completed");
    expect(view.steps.map((s) => [s.key, s.status])).toEqual([
      ["first", "succeeded"],
      ["last", "intended"],
    ]);
  });
});

describe("a step's signal", () => {
  it("is its own per call: listeners a step adds do not pile up on the attempt (no MaxListeners warning over many steps)", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on("warning", onWarning);
    const seen = new Set<AbortSignal>();
    const workflow = defineWorkflow({
      name: "listeners",
      async run(ctx) {
        for (let i = 0; i < 40; i++) {
          await ctx.step("s", ({ signal }) => {
            seen.add(signal);
            signal.addEventListener("abort", () => {});
            return i;
          });
        }
        return "done";
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "l" })).toMatchObject({ status: "completed" });
    await new Promise((resolve) => setTimeout(resolve, 10));
    process.off("warning", onWarning);
    expect(seen.size).toBe(40);
    expect(warnings).not.toContain("MaxListenersExceededWarning");
  });
});

describe("a store that fails every write from some point on (a full disk)", () => {
  it("the attempt's error names the first write that failed, the step's, not the attempt's ending", async () => {
    const inner = memoryStore();
    let full = false;
    const diskFull = (what: string, runId: string) => new StoreWriteFailedError(inner.location, what, { runId, cause: new Error("database or disk is full") });
    const store = withOverrides(inner, {
      writeIntent: (original, fence, step) =>
        full ? Promise.reject(diskFull(`the intent of step ${JSON.stringify(step.key)}`, fence.runId)) : original(fence, step),
      endAttempt: (original, fence, end) => (full ? Promise.reject(diskFull("the attempt's ending", fence.runId)) : original(fence, end)),
    });
    const workflow = defineWorkflow({
      name: "fills-up",
      async run(ctx) {
        await ctx.step("a", async () => 1);
        full = true;
        return ctx.step("b", async () => 2);
      },
    });
    const engine = createEngine({ store, workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "d" });
    expect(result).toMatchObject({ status: "failed", runStatus: "running", error: { code: "STORE_WRITE_FAILED", step: "b" } });
    expect(result.error!.message).toContain(`Could not record the intent of step "b"`);
    await engine.close();
  });
});
