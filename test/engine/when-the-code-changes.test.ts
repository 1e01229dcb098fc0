// DESIGN.md, "When the code changes": one test per row, on every store.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createEngine, defineWorkflow, type Store } from "../../src/entries/index.js";
import { STORES } from "../helpers/stores.js";

/** Run `first` to a failure in its last step, then continue with `second` on the same store. */
async function changeBetweenAttempts(store: Store, first: Parameters<typeof defineWorkflow>[0], second: Parameters<typeof defineWorkflow>[0], args?: unknown) {
  const w1 = defineWorkflow(first as never);
  const engine1 = createEngine({ store, workflows: [w1] });
  const firstResult = await engine1.start(w1 as never, args as never, { id: "r" });
  const w2 = defineWorkflow(second as never);
  const engine2 = createEngine({ store, workflows: [w2] });
  return { firstResult, engine: engine2 };
}

const REPORT = z.object({ title: z.string(), words: z.number() });

describe.each(STORES)("when the code changes (%s)", (_name, makeStore) => {
  it("args schema rejects the recorded args: continue refused (ARGS_REJECTED), no attempt counted", async () => {
    const { engine } = await changeBetweenAttempts(
      makeStore(),
      {
        name: "w",
        args: z.object({ issue: z.string() }),
        async run() {
          throw new Error("first attempt fails");
        },
      },
      {
        name: "w",
        args: z.object({ issue: z.number() }),
        async run() {
          return "never";
        },
      },
      { issue: "#212" },
    );
    const refusal = await engine.continue("r").catch((e: unknown) => e);
    expect(refusal).toMatchObject({ code: "ARGS_REJECTED", runId: "r" });
    expect((refusal as Error).message).toContain("start a new run");
    expect((await engine.get("r")).attemptCount).toBe(1);
  });

  it("version major changed: the attempt stops at the first step recorded by the other version, naming the fromStep to use", async () => {
    const calls: string[] = [];
    const { engine } = await changeBetweenAttempts(
      makeStore(),
      {
        name: "w",
        version: "1.4.0",
        async run(ctx) {
          await ctx.step("plan", async () => "p1");
          await ctx.step("build", async () => "b1");
          throw new Error("fails");
        },
      },
      {
        name: "w",
        version: "2.0.0",
        async run(ctx) {
          await ctx.step("plan", async () => calls.push("plan"));
          await ctx.step("build", async () => calls.push("build"));
          return "v2";
        },
      },
    );
    const result = await engine.continue("r");
    expect(result).toMatchObject({ status: "stopped", error: { code: "VERSION_CHANGED", step: "plan" } });
    expect(result.error!.message).toContain("1.4.0");
    expect(result.error!.message).toContain(`fromStep: "plan"`);
    expect(calls).toEqual([]);
    const redo = await engine.continue("r", { fromStep: "plan" });
    expect(redo).toMatchObject({ status: "completed", value: "v2" });
  });

  it("under 0.x a minor change is breaking; a minor change at 1.x or a patch is not", async () => {
    const zero = await changeBetweenAttempts(
      makeStore(),
      {
        name: "w",
        version: "0.3.1",
        async run(ctx) {
          await ctx.step("plan", async () => "p");
          throw new Error("x");
        },
      },
      {
        name: "w",
        version: "0.4.0",
        async run(ctx) {
          return ctx.step("plan", async () => "new");
        },
      },
    );
    expect(await zero.engine.continue("r")).toMatchObject({ status: "stopped", error: { code: "VERSION_CHANGED" } });
    const minor = await changeBetweenAttempts(
      makeStore(),
      {
        name: "w",
        version: "1.3.1",
        async run(ctx) {
          await ctx.step("plan", async () => "p");
          throw new Error("x");
        },
      },
      {
        name: "w",
        version: "1.9.0",
        async run(ctx) {
          return ctx.step("plan", async () => "new");
        },
      },
    );
    expect(await minor.engine.continue("r")).toMatchObject({ status: "completed", value: "p" });
    const unversioned = await changeBetweenAttempts(
      makeStore(),
      {
        name: "w",
        async run(ctx) {
          await ctx.step("plan", async () => "p");
          throw new Error("x");
        },
      },
      {
        name: "w",
        version: "3.0.0",
        async run(ctx) {
          return ctx.step("plan", async () => "new");
        },
      },
    );
    expect(await unversioned.engine.continue("r")).toMatchObject({ status: "completed", value: "p" });
  });

  it("a step's result schema rejects its recorded value: the attempt stops at that step, saying why", async () => {
    const { engine } = await changeBetweenAttempts(
      makeStore(),
      {
        name: "w",
        async run(ctx) {
          await ctx.step("report", async () => ({ title: "t" }));
          throw new Error("x");
        },
      },
      {
        name: "w",
        async run(ctx) {
          return ctx.step("report", { result: REPORT }, async () => ({ title: "new", words: 1 }));
        },
      },
    );
    const result = await engine.continue("r");
    expect(result).toMatchObject({ status: "stopped", error: { code: "RESULT_REJECTED", step: "report" } });
    expect(result.error!.message).toMatch(/words/);
    expect(result.error!.message).toContain(`fromStep: "report"`);
  });

  it("upcast turns a value recorded under an older shape into the current one, so a schema change need not redo work", async () => {
    const calls: string[] = [];
    const seen: Array<string | null> = [];
    const { engine } = await changeBetweenAttempts(
      makeStore(),
      {
        name: "w",
        version: "1.0.0",
        async run(ctx) {
          await ctx.step("report", async () => ({ title: "t", body: "one two three" }));
          throw new Error("x");
        },
      },
      {
        name: "w",
        version: "2.0.0",
        async run(ctx) {
          return ctx.step(
            "report",
            {
              result: REPORT,
              upcast: (value, { version }) => {
                seen.push(version);
                const v = value as { title: string; body?: string; words?: number };
                return v.words !== undefined ? v : { title: v.title, words: v.body!.split(" ").length };
              },
            },
            async () => {
              calls.push("report");
              return { title: "new", words: 0 };
            },
          );
        },
      },
    );
    // The version rule is skipped for a step that declares upcast.
    expect(await engine.continue("r")).toMatchObject({ status: "completed", value: { title: "t", words: 3 } });
    expect(seen).toEqual(["1.0.0"]);
    expect(calls).toEqual([]);
  });

  it("a step added or renamed has no record, so a continue starts there", async () => {
    const calls: string[] = [];
    const { engine } = await changeBetweenAttempts(
      makeStore(),
      {
        name: "w",
        async run(ctx) {
          await ctx.step("plan", async () => "p");
          await ctx.step("build", async () => "b");
          throw new Error("x");
        },
      },
      {
        name: "w",
        async run(ctx) {
          await ctx.step("plan", async () => calls.push("plan"));
          await ctx.step("lint", async () => calls.push("lint"));
          await ctx.step("build", async () => calls.push("build"));
          return "ok";
        },
      },
    );
    expect((await engine.continue("r")).status).toBe("completed");
    // Everything from the new step on runs, the recorded build included (its upstream changed).
    expect(calls).toEqual(["lint", "build"]);
  });

  it("a step removed: its record is never asked for and stays", async () => {
    const { engine } = await changeBetweenAttempts(
      makeStore(),
      {
        name: "w",
        async run(ctx) {
          await ctx.step("plan", async () => "p");
          await ctx.step("legacy", async () => "l");
          throw new Error("x");
        },
      },
      {
        name: "w",
        async run(ctx) {
          const p = await ctx.step("plan", async () => "new p");
          return ctx.step("ship", async () => `shipped ${p}`);
        },
      },
    );
    expect(await engine.continue("r")).toMatchObject({ status: "completed", value: "shipped p" });
    expect((await engine.get("r")).steps.map((s) => s.key)).toEqual(["plan", "legacy", "ship"]);
  });

  it("a prompt, a model, anything else changed: records are reused as they are", async () => {
    const { engine } = await changeBetweenAttempts(
      makeStore(),
      {
        name: "w",
        version: "1.0.0",
        async run(ctx) {
          await ctx.step("ask", async () => "answer from model-a");
          throw new Error("x");
        },
      },
      {
        name: "w",
        version: "1.1.0",
        async run(ctx) {
          return ctx.step("ask", async () => "answer from model-b");
        },
      },
    );
    expect(await engine.continue("r")).toMatchObject({ status: "completed", value: "answer from model-a" });
  });
});
