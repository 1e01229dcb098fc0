// engine.resolve settles an escalated step with a person's answer and keeps the input the step was
// recorded with: a later continue still compares the step's input (STEP_INPUT_CHANGED), and
// durableClaudeQuery still matches a resumed session's repeat of the call by it.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";

describe("engine.resolve and a step's recorded input", () => {
  it("keeps the input and its digest on the resolved row", async () => {
    const store = memoryStore();
    const engine = createEngine({ store });
    const workflow = defineWorkflow({
      name: "send",
      async run(ctx) {
        return ctx.step("send", { effect: "irreversible", input: { to: "ann@example.com" } }, async () => "sent");
      },
    });
    await engine.start(workflow, undefined, { id: "r" });
    // As if the process had died inside the send: its row intended, the run not ended.
    await store.updateRun("r", (current) => {
      const row = current.steps.find((s) => s.key === "send")!;
      return { updateSteps: [{ seq: row.seq, patch: { status: "intended", value: null, endedAt: null } }], run: { status: "failed" }, result: true };
    });
    const recorded = (await engine.get("r")).steps.find((s) => s.key === "send")!.inputDigest;
    expect(recorded).toMatch(/^sha256:/);
    expect(await engine.continue("r")).toMatchObject({ status: "escalated" });
    await engine.resolve("r", "send", { value: "sent (checked by a person)" });
    const resolved = (await engine.get("r")).steps.filter((s) => s.key === "send").at(-1)!;
    expect(resolved).toMatchObject({ status: "succeeded", value: "sent (checked by a person)", inputDigest: recorded, input: { to: "ann@example.com" } });
    await engine.close();
  });
});
