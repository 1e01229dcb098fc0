import { describe, expect, it } from "vitest";
import { createEngine } from "../../../src/engine/engine.js";
import { defineWorkflow } from "../../../src/workflow/define-workflow.js";
import { memoryStore } from "../../../src/store/memory.js";

describe("live-attempt registry", () => {
  it("a refused start(RUN_EXISTS) must not unregister the live attempt of that run", async () => {
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const wf = defineWorkflow({
      name: "reg",
      async run(ctx) {
        return ctx.step("pay", async () => {
          calls++;
          await gate;
          return "paid";
        });
      },
    });
    const engine = createEngine({ workflows: [wf], store: memoryStore() });
    const first = engine.start(wf, undefined as never, { id: "r1" });
    await new Promise((r) => setTimeout(r, 20)); // inside "pay"
    await expect(engine.start(wf, undefined as never, { id: "r1" })).rejects.toMatchObject({ code: "RUN_EXISTS" });
    // The first attempt is alive in this very process: a continue must be refused RUN_BUSY.
    const second = engine.continue("r1").then(
      (r) => ({ ok: true as const, r }),
      (e) => ({ ok: false as const, code: e.code }),
    );
    await new Promise((r) => setTimeout(r, 20));
    release();
    const s = await second;
    await first;
    expect(calls).toBe(1);
    expect(s).toEqual({ ok: false, code: "RUN_BUSY" });
    await engine.close();
  });
});
