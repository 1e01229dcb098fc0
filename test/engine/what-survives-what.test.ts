// DESIGN.md, "What survives what": one test per row, on every store. (The crash row, which
// needs a real SIGKILL, is in test/crash/what-survives-a-crash.test.ts.)
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createEngine, defineWorkflow, type WorkflowContext } from "../../src/entries/index.js";
import { fakeClock } from "../../src/entries/testing.js";
import { STORES } from "../helpers/stores.js";

/** A three-step workflow whose step functions are swapped per test; counts every call. */
function threeSteps(
  behaviour: Partial<Record<"plan" | "build" | "review", (ctx: WorkflowContext) => unknown>>,
  between?: (ctx: WorkflowContext, built: unknown) => void,
) {
  const calls: string[] = [];
  const workflow = defineWorkflow({
    name: "three",
    args: z.object({ issue: z.string() }),
    async run(ctx, args) {
      const plan = await ctx.step("plan", async () => {
        calls.push("plan");
        return behaviour.plan ? behaviour.plan(ctx) : `plan for ${args.issue}`;
      });
      const built = await ctx.step("build", async () => {
        calls.push("build");
        return behaviour.build ? behaviour.build(ctx) : `built ${plan}`;
      });
      between?.(ctx, built);
      return ctx.step("review", async () => {
        calls.push("review");
        return behaviour.review ? behaviour.review(ctx) : `approved ${built}`;
      });
    },
  });
  return { workflow, calls };
}

describe.each(STORES)("what survives what (%s)", (_name, makeStore) => {
  it("a step's function throws (retries used up): attempt failed, succeeded steps kept, continue redoes this step then the rest", async () => {
    let fail = true;
    const { workflow, calls } = threeSteps({
      build: () => {
        if (fail) throw new Error("compiler crashed");
        return "binary";
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const first = await engine.start(workflow, { issue: "#1" }, { id: "r" });
    expect(first).toMatchObject({ status: "failed", runStatus: "failed", attempt: 1, error: { message: "compiler crashed", step: "build" } });
    const view = await engine.get("r");
    expect(view.steps.map((s) => [s.key, s.status])).toEqual([
      ["plan", "succeeded"],
      ["build", "failed"],
    ]);
    fail = false;
    const second = await engine.continue("r");
    expect(second).toMatchObject({ status: "completed", value: "approved binary", attempt: 2 });
    expect(calls).toEqual(["plan", "build", "build", "review"]);
    await engine.close();
  });

  it("ctx.stop(reason) inside a step: attempt stopped, the step recorded stopped, continue redoes this step", async () => {
    let stop = true;
    const { workflow, calls } = threeSteps({ build: (ctx) => (stop ? ctx.stop("no answer from the builder") : "binary") });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const first = await engine.start(workflow, { issue: "#2" }, { id: "r" });
    expect(first.status).toBe("stopped");
    expect(first.error).toMatchObject({ code: "STOPPED", step: "build" });
    expect(first.error!.message).toContain("no answer from the builder");
    expect(first.error!.message).toContain(`fromStep: "build"`);
    expect((await engine.get("r")).steps.map((s) => [s.key, s.status])).toEqual([
      ["plan", "succeeded"],
      ["build", "stopped"],
    ]);
    stop = false;
    const second = await engine.continue("r");
    expect(second.status).toBe("completed");
    expect(calls).toEqual(["plan", "build", "build", "review"]);
    await engine.close();
  });

  it("ctx.stop(reason) between steps: attempt stopped, every record kept, continue runs the code between steps again", async () => {
    let checks = 0;
    let pass = false;
    const { workflow, calls } = threeSteps({}, (ctx, built) => {
      checks++;
      if (!pass) ctx.stop(`check failed on ${String(built)}`);
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const first = await engine.start(workflow, { issue: "#3" }, { id: "r" });
    expect(first).toMatchObject({ status: "stopped", error: { code: "STOPPED", step: "build" } });
    expect((await engine.get("r")).steps.map((s) => [s.key, s.status])).toEqual([
      ["plan", "succeeded"],
      ["build", "succeeded"],
    ]);
    pass = true;
    const second = await engine.continue("r");
    expect(second.status).toBe("completed");
    expect(checks).toBe(2);
    expect(calls).toEqual(["plan", "build", "review"]);
    await engine.close();
  });

  it("run deadline passes: attempt timed-out, the step recorded failed, continue redoes that step with no deadline", async () => {
    let slow = true;
    // The deadline passes once "build" has begun (the clock is moved from inside it), however
    // slowly a loaded machine gets there.
    const clock = fakeClock();
    const { workflow, calls } = threeSteps({
      build: (ctx) =>
        new Promise((resolve, reject) => {
          if (!slow) return resolve("binary");
          clock.advance(1_000);
          const timer = setTimeout(() => resolve("too late"), 5_000);
          ctx.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(new Error("aborted by signal"));
          });
        }),
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow], clock });
    const first = await engine.start(workflow, { issue: "#4" }, { id: "r", timeoutMs: 150 });
    expect(first).toMatchObject({ status: "timed-out", runStatus: "timed-out", error: { code: "RUN_TIMED_OUT", step: "build" } });
    const view = await engine.get("r");
    expect(view.steps.at(-1)).toMatchObject({ key: "build", status: "failed", error: { code: "RUN_TIMED_OUT" } });
    slow = false;
    const second = await engine.continue("r");
    expect(second.status).toBe("completed");
    expect(calls).toEqual(["plan", "build", "build", "review"]);
    await engine.close();
  });

  it("abort signal / Ctrl-C: attempt cancelled, continue redoes that step", async () => {
    const controller = new AbortController();
    let hang = true;
    const { workflow, calls } = threeSteps({
      build: (ctx) =>
        new Promise((resolve, reject) => {
          if (!hang) return resolve("binary");
          setTimeout(() => controller.abort(new Error("Ctrl-C")), 20);
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
        }),
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const first = await engine.start(workflow, { issue: "#5" }, { id: "r", signal: controller.signal });
    expect(first).toMatchObject({ status: "cancelled", error: { code: "RUN_CANCELLED", step: "build" } });
    expect(first.error!.message).toContain("Ctrl-C");
    hang = false;
    const second = await engine.continue("r");
    expect(second.status).toBe("completed");
    expect(calls).toEqual(["plan", "build", "build", "review"]);
    await engine.close();
  });

  it("code changed between attempts: the new code runs, reusing records that still fit", async () => {
    const store = makeStore();
    const v1 = threeSteps({
      review: () => {
        throw new Error("reviewer bug");
      },
    });
    const engine1 = createEngine({ store, workflows: [v1.workflow] });
    expect((await engine1.start(v1.workflow, { issue: "#6" }, { id: "r" })).status).toBe("failed");
    // The fix: same workflow name, new code.
    const v2 = threeSteps({ review: () => "approved after the fix" });
    const engine2 = createEngine({ store, workflows: [v2.workflow] });
    const second = await engine2.continue("r");
    expect(second).toMatchObject({ status: "completed", value: "approved after the fix" });
    expect(v2.calls).toEqual(["review"]);
    await engine2.close();
  });

  it("run completed: a continue is refused (RUN_COMPLETED) unless fromStep names a step to redo", async () => {
    const { workflow, calls } = threeSteps({});
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect((await engine.start(workflow, { issue: "#7" }, { id: "r" })).status).toBe("completed");
    await expect(engine.continue("r")).rejects.toMatchObject({ code: "RUN_COMPLETED" });
    expect((await engine.get("r")).attemptCount).toBe(1);
    const redo = await engine.continue("r", { fromStep: "build" });
    expect(redo.status).toBe("completed");
    expect(calls).toEqual(["plan", "build", "review", "build", "review"]);
    await engine.close();
  });
});
