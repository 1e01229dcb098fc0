import { describe, expect, it } from "vitest";
import { createEngine } from "../../../src/engine/engine.js";
import { defineWorkflow } from "../../../src/workflow/define-workflow.js";
import { memoryStore } from "../../../src/store/memory.js";

describe("a wait before fromStep with nothing recorded", () => {
  it("stops for its value (VALUE_MISSING) like a step, or takes the value given", async () => {
    const store = memoryStore();
    const v1 = defineWorkflow({
      name: "w",
      async run(ctx) {
        await ctx.step("a", async () => "a");
        return ctx.step("b", async () => "b");
      },
    });
    await createEngine({ store, workflows: [v1] }).start(v1, undefined, { id: "r" });
    // The new code waits for an approval event between a and b.
    const v2 = defineWorkflow({
      name: "w",
      async run(ctx) {
        await ctx.step("a", async () => "a");
        const go = await ctx.waitForEvent("go");
        return ctx.step("b", async () => `b after ${String(go)}`);
      },
    });
    const engine = createEngine({ store, workflows: [v2] });
    expect(await engine.continue("r", { fromStep: "b" })).toMatchObject({ status: "stopped", error: { code: "VALUE_MISSING", step: "go" } });
    expect(await engine.continue("r", { fromStep: "b", values: { go: "yes" } })).toMatchObject({ status: "completed", value: "b after yes" });
  });
});
