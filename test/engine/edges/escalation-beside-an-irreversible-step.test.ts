import { describe, expect, it } from "vitest";
import { createEngine } from "../../../src/engine/engine.js";
import { defineWorkflow } from "../../../src/workflow/define-workflow.js";
import { crashedRun, memoryStore } from "./helpers.js";

describe("a parallel step escalates while an irreversible step's function runs and returns", () => {
  it("the charge that returned is recorded, not redone after the escalation is resolved", async () => {
    let charges = 0;
    const wf = defineWorkflow({
      name: "par-esc",
      async run(ctx) {
        const [c] = await Promise.all([
          ctx.step("charge", { effect: "irreversible" }, async () => {
            await new Promise((r) => setTimeout(r, 30));
            charges++;
            return "charged";
          }),
          ctx.step("ship", { onUnknown: "escalate" }, async () => "shipped"),
        ]);
        return c;
      },
    });
    const store = memoryStore();
    await crashedRun(store, "pe", "par-esc", [{ key: "ship" }]);
    const engine = createEngine({ workflows: [wf], store });
    expect((await engine.continue("pe")).status).toBe("escalated");
    expect(charges).toBe(1);
    await engine.resolve("pe", "ship", { value: "shipped" });
    const r = await engine.continue("pe");
    console.log(
      JSON.stringify(r),
      charges,
      (await engine.get("pe")).steps.map((s) => s.key + ":" + s.status + "@" + s.attempt),
    );
    expect(r.status).toBe("completed");
    expect(charges).toBe(1);
    await engine.close();
  });
});
