// A read or idempotent step's outcome commits with the next write (group commit). When that
// write fails, nothing after the step may run in the attempt: the next continue re-drives the
// step, and would then run everything after it a second time.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { StoreWriteFailedError } from "../../src/base/errors.js";
import { withOverrides } from "../helpers/stores.js";

function twoSteps(calls: string[]) {
  return defineWorkflow({
    name: "two",
    async run(ctx) {
      const a = await ctx.step("a", () => (calls.push("a"), 1));
      const b = await ctx.step("b", () => (calls.push("b"), a + 1));
      return b;
    },
  });
}

describe("a group-committed outcome that fails to be written", () => {
  for (const [what, failure] of [
    [
      "a steplog store error",
      () => new StoreWriteFailedError("memory store", 'the outcome of step "a"', { runId: "r", step: "a", cause: new Error("SQLITE_BUSY") }),
    ],
    ["a custom store's plain Error", () => new Error("connection reset")],
  ] as const) {
    it(`(${what}) ends the attempt before the next step's function: a continue re-drives that step and runs the rest once`, async () => {
      const calls: string[] = [];
      const workflow = twoSteps(calls);
      let failed = false;
      const store = withOverrides(memoryStore(), {
        writeOutcome: (original, fence, outcome) => {
          if (!failed) {
            failed = true;
            return Promise.reject(failure());
          }
          return original(fence, outcome);
        },
      });
      const engine = createEngine({ store, workflows: [workflow] });
      const first = await engine.start(workflow, undefined, { id: "r" });
      expect(first).toMatchObject({ status: "failed", error: { code: "STORE_WRITE_FAILED" } });
      expect(calls).toEqual(["a"]);
      const view = await engine.get("r");
      expect(view.steps.map((s) => [s.key, s.status])).toEqual([
        ["a", "intended"],
        ["b", "failed"],
      ]);
      expect(await engine.continue("r")).toMatchObject({ status: "completed", value: 2 });
      // a was cut off (its outcome lost): re-driven with the same key, as an idempotent step allows; b ran once.
      expect(calls).toEqual(["a", "a", "b"]);
      await engine.close();
    });
  }
});
