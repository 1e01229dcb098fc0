import { describe, expect, it } from "vitest";
import { createEngine } from "../../../src/engine/engine.js";
import { defineWorkflow } from "../../../src/workflow/define-workflow.js";
import { crashedRun, memoryStore } from "./helpers.js";

describe("continue of a cancelled run whose escalation is unresolved", () => {
  it("is refused RUN_ESCALATED in the claim (no attempt begins)", async () => {
    let before = 0;
    const wf = defineWorkflow({
      name: "esc2",
      async run(ctx) {
        await ctx.step("prep", async () => void before++);
        return ctx.step("pay", { effect: "irreversible" }, async () => "paid");
      },
    });
    const store = memoryStore();
    await crashedRun(store, "x", "esc2", [
      { key: "prep", status: "succeeded", value: '{"$type":"undefined"}' },
      { key: "pay", effect: "irreversible" },
    ]);
    const engine = createEngine({ workflows: [wf], store });
    expect((await engine.continue("x")).status).toBe("escalated");
    await engine.cancel("x");
    const attemptsBefore = (await engine.get("x")).attempts.length;
    await expect(engine.continue("x", { fromStep: "prep" })).rejects.toMatchObject({ code: "RUN_ESCALATED" });
    expect((await engine.get("x")).attempts.length).toBe(attemptsBefore);
    expect(before).toBe(0);
    await engine.close();
  });
});
