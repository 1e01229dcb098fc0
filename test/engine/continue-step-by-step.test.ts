// DESIGN.md, "A continue, step by step".
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { untilAborted } from "../helpers/abort.js";
import { STORES } from "../helpers/stores.js";

function pipeline(failAt: { value: string | undefined }) {
  const calls: string[] = [];
  const step = (name: string) => async () => {
    calls.push(name);
    if (failAt.value === name) throw new Error(`${name} broke`);
    return { from: name, n: calls.length };
  };
  const workflow = defineWorkflow({
    name: "pipeline",
    async run(ctx) {
      const a = await ctx.step("a", { result: z.object({ from: z.string(), n: z.number() }) }, step("a"));
      const b = await ctx.step("b", step("b"));
      const c = await ctx.step("c", step("c"));
      const d = await ctx.step("d", step("d"));
      return [a, b, c, d].map((v) => v.from).join(">");
    },
  });
  return { workflow, calls };
}

describe.each(STORES)("a continue, step by step (%s)", (_name, makeStore) => {
  it("before the start point each succeeded step is reused: its value checked and handed back, its function not called", async () => {
    const failAt = { value: "c" as string | undefined };
    const { workflow, calls } = pipeline(failAt);
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "r" });
    failAt.value = undefined;
    const reused: string[] = [];
    const engine2 = createEngine({ store: engine.store, workflows: [workflow], onProgress: (e) => e.type === "step-reused" && reused.push(e.step) });
    const result = await engine2.continue("r");
    expect(result).toMatchObject({ status: "completed", value: "a>b>c>d" });
    expect(reused).toEqual(["a", "b"]);
    expect(calls).toEqual(["a", "b", "c", "c", "d"]);
    // Each attempt records what it reused, for timelines.
    expect((await engine2.get("r")).attempts.map((a) => a.reused)).toEqual([[], ["a", "b"]]);
  });

  it("the start point is the first step entered with no succeeded record; from there every step runs", async () => {
    const failAt = { value: "b" as string | undefined };
    const { workflow, calls } = pipeline(failAt);
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "r" });
    failAt.value = undefined;
    await engine.continue("r");
    expect(calls).toEqual(["a", "b", "b", "c", "d"]);
    const steps = (await engine.get("r")).steps;
    expect(steps.map((s) => `${s.key}@${s.attempt}:${s.status}`)).toEqual(["a@1:succeeded", "b@1:failed", "b@2:succeeded", "c@2:succeeded", "d@2:succeeded"]);
  });

  it("fromStep is the start point: that step and every step after it run again, even those that succeeded (their records stay)", async () => {
    const { workflow, calls } = pipeline({ value: undefined });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "r" });
    calls.length = 0;
    const result = await engine.continue("r", { fromStep: "b" });
    expect(result.status).toBe("completed");
    expect(calls).toEqual(["b", "c", "d"]);
    const steps = (await engine.get("r")).steps;
    expect(steps.filter((s) => s.key === "b").map((s) => s.attempt)).toEqual([1, 2]);
    expect(steps).toHaveLength(7);
  });

  it("fromStep takes a key (name#2) or a name (its first occurrence)", async () => {
    const calls: string[] = [];
    const workflow = defineWorkflow({
      name: "loop",
      async run(ctx) {
        for (let i = 0; i < 3; i++) await ctx.step("fetch", async (info) => calls.push(info.step));
        return "done";
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "r" });
    expect(calls).toEqual(["fetch", "fetch#2", "fetch#3"]);
    calls.length = 0;
    await engine.continue("r", { fromStep: "fetch#2" });
    expect(calls).toEqual(["fetch#2", "fetch#3"]);
    calls.length = 0;
    await engine.continue("r", { fromStep: "fetch" });
    expect(calls).toEqual(["fetch", "fetch#2", "fetch#3"]);
  });

  it("fromStep naming a step never reached: the attempt stops, listing the recorded steps it never reached", async () => {
    const store = makeStore();
    const { workflow } = pipeline({ value: undefined });
    const engine = createEngine({ store, workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "r" });
    // The code no longer has steps c and d.
    const shorter = defineWorkflow({
      name: "pipeline",
      async run(ctx) {
        await ctx.step("a", async () => ({ from: "a", n: 1 }));
        await ctx.step("b", async () => ({ from: "b", n: 2 }));
        return "shorter";
      },
    });
    const engine2 = createEngine({ store, workflows: [shorter] });
    const result = await engine2.continue("r", { fromStep: "c" });
    expect(result.status).toBe("stopped");
    expect(result.error).toMatchObject({ code: "FROM_STEP_NOT_REACHED", step: "c" });
    expect(result.error!.message).toContain(`never reached: "c", "d"`);
    expect((await engine2.get("r")).status).toBe("stopped");
  });

  it("fromStep past a renamed step: the attempt stops at the step with no record, listing the recorded steps not reached", async () => {
    const store = makeStore();
    const { workflow } = pipeline({ value: undefined });
    const engine = createEngine({ store, workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "r" });
    // c was renamed to "check".
    const renamed = defineWorkflow({
      name: "pipeline",
      async run(ctx) {
        await ctx.step("a", async () => ({ from: "a", n: 1 }));
        await ctx.step("b", async () => ({ from: "b", n: 2 }));
        await ctx.step("check", async () => "checked");
        return ctx.step("d", async () => "d");
      },
    });
    const engine2 = createEngine({ store, workflows: [renamed] });
    const result = await engine2.continue("r", { fromStep: "d" });
    expect(result).toMatchObject({ status: "stopped", error: { code: "VALUE_MISSING", step: "check" } });
    expect(result.error!.message).toContain(`not reached: "c", "d"`);
  });

  it("fromStep naming no recorded step is refused (STEP_NOT_FOUND) and counts no attempt", async () => {
    const { workflow } = pipeline({ value: undefined });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "r" });
    const refusal = await engine.continue("r", { fromStep: "nope" }).catch((e: unknown) => e);
    expect(refusal).toMatchObject({ code: "STEP_NOT_FOUND", runId: "r" });
    expect((refusal as Error).message).toContain(`"a", "b", "c", "d"`);
    expect((await engine.get("r")).attemptCount).toBe(1);
  });

  it("values hands a value to a step before fromStep that has no record; without it the attempt stops naming the step", async () => {
    const store = makeStore();
    const calls: string[] = [];
    const old = defineWorkflow({
      name: "grow",
      async run(ctx) {
        await ctx.step("a", async () => calls.push("a"));
        return ctx.step("c", async () => calls.push("c"));
      },
    });
    const engine = createEngine({ store, workflows: [old] });
    await engine.start(old, undefined, { id: "r" });
    // A new step "b" between a and c: redoing from c, b has no record.
    const grown = defineWorkflow({
      name: "grow",
      async run(ctx) {
        await ctx.step("a", async () => calls.push("a"));
        const b = await ctx.step("b", { result: z.string() }, async () => {
          calls.push("b");
          return "computed b";
        });
        return ctx.step("c", async () => `c after ${b}`);
      },
    });
    const engine2 = createEngine({ store, workflows: [grown] });
    const stopped = await engine2.continue("r", { fromStep: "c" });
    expect(stopped).toMatchObject({ status: "stopped", error: { code: "VALUE_MISSING", step: "b" } });
    expect(stopped.error!.message).toContain(`values: { "b": … }`);
    // The message's other way out, a plain continue, runs the new step: it works as written.
    expect(stopped.error!.message).toContain(`type engine.continue("r"): a continue without fromStep starts at the first step with no record`);
    // values without fromStep would be ignored (the new step is the start point): refused, nothing run.
    const refused = await engine2.continue("r", { values: { b: "given b" } }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "INVALID_OPTION", runId: "r" });
    expect((refused as Error).message).toContain("no fromStep was given");
    expect((await engine2.get("r")).attemptCount).toBe(2);
    const supplied = await engine2.continue("r", { fromStep: "c", values: { b: "given b" } });
    expect(supplied).toMatchObject({ status: "completed", value: "c after given b" });
    expect(calls).toEqual(["a", "c"]);
    const b = (await engine2.get("r")).steps.find((s) => s.key === "b");
    expect(b).toMatchObject({ status: "succeeded", value: "given b", resolution: { policy: "supplied" } });
  });

  it("a continue that ran no step and stopped where the last attempt did says which step to redo", async () => {
    let verdict = "bad";
    const workflow = defineWorkflow({
      name: "checked",
      async run(ctx) {
        const draft = await ctx.step("draft", async () => ({ quality: verdict }));
        // A check between steps: on a continue it runs on the reused value.
        if (draft.quality !== "good") ctx.stop(`draft quality is ${draft.quality}`);
        return ctx.step("send", async () => "sent");
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const first = await engine.start(workflow, undefined, { id: "r" });
    expect(first.error!.message).not.toContain("ran no step");
    verdict = "good"; // the fix is in the draft step, but the draft is reused
    const second = await engine.continue("r");
    expect(second).toMatchObject({ status: "stopped", error: { code: "STOPPED", step: "draft" } });
    expect(second.error!.message).toContain("ran no step and stopped where attempt 1 did");
    expect(second.error!.message).toContain(`fromStep: "draft"`);
    const third = await engine.continue("r", { fromStep: "draft" });
    expect(third).toMatchObject({ status: "completed", value: "sent" });
  });

  it("an existing run with no steps continues normally", async () => {
    let fail = true;
    const workflow = defineWorkflow({
      name: "no-steps-yet",
      async run(ctx) {
        if (fail) throw new Error("failed before any step");
        return ctx.step("only", async () => 42);
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect((await engine.start(workflow, undefined, { id: "r" })).status).toBe("failed");
    expect((await engine.get("r")).steps).toEqual([]);
    fail = false;
    expect(await engine.continue("r")).toMatchObject({ status: "completed", value: 42, attempt: 2 });
  });
});

describe("the attempt's error names the step that failed", () => {
  it("with steps running at once, the one that threw, not the last one entered", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const workflow = defineWorkflow({
      name: "fan-out",
      async run(ctx) {
        return Promise.all([
          ctx.step("post-slack", async () => {
            throw new Error("slack is down");
          }),
          ctx.step("send-email", () => new Promise((resolve) => setTimeout(() => resolve("sent"), 20))),
        ]);
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "f" });
    expect(result).toMatchObject({ status: "failed", error: { message: "slack is down", step: "post-slack" } });
  });
});

describe("steps launched beside the start point (siblings) are reused only while nothing new has happened", () => {
  it("a wait that takes a new event ends it: a step after the wait runs on the new payload", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const booked: string[] = [];
    let slowFails = true;
    const workflow = defineWorkflow({
      name: "order-beside",
      async run(ctx) {
        const slow = ctx.step("slow", async () => {
          await new Promise((resolve) => setTimeout(resolve, 50));
          if (slowFails) throw new Error("slow failed");
          return "slow ok";
        });
        const branch = (async () => {
          const order = await ctx.waitForEvent("order");
          return ctx.step("book", async () => (booked.push((order as { item: string }).item), `booked ${(order as { item: string }).item}`));
        })();
        return Promise.all([slow, branch]);
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "r" });
    await engine.send("r", "order", { item: "A" });
    expect(await engine.continue("r")).toMatchObject({ status: "failed" });
    await engine.send("r", "order", { item: "B" }, { keep: true });
    slowFails = false;
    expect(await engine.continue("r")).toMatchObject({ status: "completed", value: ["slow ok", "booked B"] });
    expect(booked).toEqual(["A", "B"]);
  });

  it("a cut-off sibling settled by its query ends it: a step after it runs on the value the query found", async () => {
    const { testWorkflow } = await import("../../src/entries/testing.js");
    const workflow = defineWorkflow({
      name: "query-beside",
      async run(ctx) {
        const slow = ctx.step("slow", () => new Promise((resolve) => setTimeout(() => resolve("slow ok"), 20)));
        const branch = (async () => {
          const u = await ctx.step("u", { effect: "irreversible", query: () => ({ done: true, value: "u from the query" }) }, async () => "u called again");
          return ctx.step("t", async () => `t(${u})`);
        })();
        return Promise.all([slow, branch]);
      },
    });
    const run = await testWorkflow(workflow, { args: undefined, earlier: { steps: { t: "t(u from attempt 1)" }, intended: ["u"] } });
    expect(run).toMatchObject({ status: "completed", value: ["slow ok", "t(u from the query)"] });
    expect(run.calls("u")).toBe(0);
  });

  it("a sibling's record older than a record handed back before it is run again: its inputs may have changed", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const sent: string[] = [];
    let plan = "A";
    let cut: AbortController | undefined;
    const workflow = defineWorkflow({
      name: "stale-sibling",
      async run(ctx) {
        const planned = await ctx.step("plan", async () => plan);
        const slow = ctx.step("slow", { effect: "read" }, async ({ signal }) => {
          if (cut) await untilAborted(signal);
          await new Promise((resolve) => setTimeout(resolve, 100));
          return "slow ok";
        });
        const branch = (async () => {
          const r = await ctx.step("r", async () => `r(${planned})`);
          await new Promise((resolve) => setTimeout(resolve, 20));
          cut?.abort(); // attempt 2 is cut off here: r ran anew, x was never entered
          await new Promise((resolve) => setTimeout(resolve, 20));
          return ctx.step("x", async () => (sent.push(r), `sent ${r}`));
        })();
        return Promise.all([slow, branch]);
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "r" });
    plan = "B";
    cut = new AbortController();
    expect(await engine.continue("r", { fromStep: "plan", signal: cut.signal })).toMatchObject({ status: "cancelled" });
    cut = undefined;
    expect(await engine.continue("r")).toMatchObject({ status: "completed", value: ["slow ok", "sent r(B)"] });
    expect(sent).toEqual(["r(A)", "r(B)"]);
  });
});
