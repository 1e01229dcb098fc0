import { describe, expect, it } from "vitest";
import { createEngine } from "../../../src/engine/engine.js";
import { defineWorkflow } from "../../../src/workflow/define-workflow.js";
import { memoryStore } from "../../../src/store/memory.js";

describe("PAST_PIVOT", () => {
  it("is refused once the pivot has ever succeeded, even if a later redo of it failed", async () => {
    const log: string[] = [];
    const fail = { charge: false, email: true };
    const wf = defineWorkflow({
      name: "pivot",
      async run(ctx) {
        await ctx.step("hotel", { effect: "compensatable", compensate: () => void log.push("cancel hotel") }, async () => "h");
        await ctx.step("charge", { effect: "irreversible" }, async () => {
          if (fail.charge) throw new Error("declined");
          log.push("charged");
          return "c";
        });
        await ctx.step("email", async () => {
          if (fail.email) throw new Error("smtp down");
        });
      },
    });
    const engine = createEngine({ workflows: [wf], store: memoryStore() });
    expect((await engine.start(wf, undefined as never, { id: "p" })).status).toBe("failed");
    await expect(engine.compensate("p")).rejects.toMatchObject({ code: "PAST_PIVOT" });
    fail.charge = true;
    expect((await engine.continue("p", { fromStep: "charge" })).status).toBe("failed");
    // The first charge happened and was never undone: the saga must still be refused.
    await expect(engine.compensate("p")).rejects.toMatchObject({ code: "PAST_PIVOT" });
    expect(log).not.toContain("cancel hotel");
    await engine.close();
  });
});
