import { describe, expect, it } from "vitest";
import { createEngine } from "../../../src/engine/engine.js";
import { defineWorkflow } from "../../../src/workflow/define-workflow.js";
import { memoryStore } from "../../../src/store/memory.js";

describe("saga after a compensated step is redone and fails", () => {
  it("does not compensate the already-compensated booking a second time", async () => {
    const log: string[] = [];
    const fail = { flight: false, later: true };
    const wf = defineWorkflow({
      name: "trip2",
      async run(ctx) {
        const f = await ctx.step(
          "flight",
          { effect: "compensatable", compensate: (v: unknown, { idempotencyKey }) => void log.push(`cancel ${String(v)} (${idempotencyKey})`) },
          async ({ idempotencyKey }) => {
            if (fail.flight) throw new Error("no seats");
            log.push(`book (${idempotencyKey})`);
            return `conf-${idempotencyKey}`;
          },
        );
        await ctx.step("later", async () => {
          if (fail.later) throw new Error("later failed");
        });
        return f;
      },
    });
    const engine = createEngine({ workflows: [wf], store: memoryStore() });
    expect((await engine.start(wf, undefined as never, { id: "t" })).status).toBe("failed");
    expect((await engine.compensate("t")).status).toBe("compensated");
    // Go forward again: the flight is booked anew (key t:flight:2) and that booking fails.
    fail.flight = true;
    expect((await engine.continue("t")).status).toBe("failed");
    log.length = 0;
    const saga = await engine.compensate("t");
    expect(saga.status).toBe("compensated");
    // Nothing is booked any more: the first booking was cancelled, the second never happened.
    expect(log).toEqual([]);
    await engine.close();
  });
});
