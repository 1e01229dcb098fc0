import { describe, expect, it } from "vitest";
import { createEngine } from "../../../src/engine/engine.js";
import { defineWorkflow } from "../../../src/workflow/define-workflow.js";
import { memoryStore } from "../../../src/store/memory.js";

describe("deadline passes while an irreversible step's function runs, and the function then returns", () => {
  it("the charge is not made a second time by the next continue", async () => {
    let charges = 0;
    const wf = defineWorkflow({
      name: "dl",
      async run(ctx) {
        return ctx.step("charge", { effect: "irreversible" }, async () => {
          await new Promise((r) => setTimeout(r, 400)); // ignores its signal, as a payment SDK may (well past the deadline, even on a loaded machine)
          charges++;
          return "charged";
        });
      },
    });
    const engine = createEngine({ workflows: [wf], store: memoryStore() });
    const r1 = await engine.start(wf, undefined as never, { id: "d", timeoutMs: 20 });
    expect(r1.status).toBe("timed-out");
    expect(charges).toBe(1);
    await engine.continue("d");
    expect(charges).toBe(1);
    await engine.close();
  });
});
