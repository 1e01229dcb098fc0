import { describe, expect, it } from "vitest";
import { createEngine } from "../../../src/engine/engine.js";
import { defineWorkflow } from "../../../src/workflow/define-workflow.js";
import { crashedRun, memoryStore } from "./helpers.js";

describe("cancel while an unknown outcome is being compensated", () => {
  it("the attempt does not end (and release the lease) while compensate() still runs", async () => {
    let running = 0;
    let maxConcurrent = 0;
    const wf = defineWorkflow({
      name: "comp",
      async run(ctx) {
        return ctx.step(
          "book",
          {
            effect: "compensatable",
            compensate: async () => {
              running++;
              maxConcurrent = Math.max(maxConcurrent, running);
              await new Promise((r) => setTimeout(r, 50));
              running--;
            },
          },
          async () => "booked",
        );
      },
    });
    const store = memoryStore();
    await crashedRun(store, "c", "comp", [{ key: "book", effect: "compensatable" }]);
    const engine = createEngine({ workflows: [wf], store });
    const ac = new AbortController();
    const first = engine.continue("c", { signal: ac.signal });
    while (running === 0) await new Promise((r) => setTimeout(r, 1)); // inside compensate
    ac.abort();
    const r1 = await first;
    expect(r1.status).toBe("cancelled");
    expect(running).toBe(0); // DESIGN: "the engine waits for the function to settle"
    const r2 = await engine.continue("c");
    expect(maxConcurrent).toBe(1);
    expect(r2.status).toBe("completed");
    await new Promise((r) => setTimeout(r, 80));
    await engine.close();
  });
});
