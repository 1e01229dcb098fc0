import { describe, expect, it } from "vitest";
import { createEngine } from "../../../src/engine/engine.js";
import { defineWorkflow } from "../../../src/workflow/define-workflow.js";
import { memoryStore } from "../../../src/store/memory.js";
import { fakeClock } from "../../../src/testing/fake-clock.js";

describe("deadline passes while an irreversible step's function runs, and the function then returns", () => {
  it("the charge is not made a second time by the next continue", async () => {
    // The deadline passes only once the charge has begun (the clock is moved by hand from inside
    // it), however slowly a loaded machine reaches the step: real time decides nothing here.
    const clock = fakeClock();
    let charges = 0;
    let sawDeadline = false;
    const wf = defineWorkflow({
      name: "dl",
      async run(ctx) {
        return ctx.step("charge", { effect: "irreversible" }, async ({ signal }) => {
          clock.advance(1_000);
          // The engine sees the deadline gone at its next check; the function ignores its signal
          // (as a payment SDK may) and finishes the charge after it.
          await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
          sawDeadline = true;
          await new Promise((r) => setTimeout(r, 50));
          charges++;
          return "charged";
        });
      },
    });
    const engine = createEngine({ workflows: [wf], store: memoryStore(), clock });
    const r1 = await engine.start(wf, undefined as never, { id: "d", timeoutMs: 20 });
    expect(sawDeadline).toBe(true);
    expect(r1.status).toBe("timed-out");
    // The attempt waited for the function it could not stop before it ended.
    expect(charges).toBe(1);
    await engine.continue("d");
    expect(charges).toBe(1);
    await engine.close();
  });
});
