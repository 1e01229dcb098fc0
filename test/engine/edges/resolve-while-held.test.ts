import { describe, expect, it } from "vitest";
import { createEngine } from "../../../src/engine/engine.js";
import { defineWorkflow } from "../../../src/workflow/define-workflow.js";
import { memoryStore } from "../../../src/store/memory.js";
import { attemptRow, runRow, stepRow } from "../../../src/testing/store-conformance.js";

describe("resolve while an attempt holds the run", () => {
  it("is refused with RUN_BUSY (the attempt would not see the answer), and works once the holder is gone", async () => {
    const store = memoryStore();
    const wf = defineWorkflow({
      name: "esc",
      async run(ctx) {
        return ctx.step("pay", { effect: "irreversible" }, async () => "paid");
      },
    });
    // A live attempt on another machine holds the run, which has an escalated step.
    const lease = await store.createRun(
      runRow("e", { workflow: "esc", version: null, args: '{"$type":"undefined"}' }),
      attemptRow("e", 1, { host: "elsewhere" }),
      {
        expiresAt: Date.now() + 60_000,
        now: Date.now(),
      },
    );
    if ("exists" in lease) throw new Error("exists");
    await store.writeIntent(lease, stepRow("e", 1, "pay", { version: null, status: "escalated", effect: "irreversible" }));
    const engine = createEngine({ store, workflows: [wf] });
    await expect(engine.resolve("e", "pay", { value: "paid" })).rejects.toMatchObject({ code: "RUN_BUSY" });
    await store.endAttempt(lease, { attempt: 1, ending: "escalated", endedAt: Date.now(), error: null, run: { status: "escalated" } });
    await engine.resolve("e", "pay", { value: "paid" });
    expect(await engine.continue("e")).toMatchObject({ status: "completed", value: "paid" });
  });
});
