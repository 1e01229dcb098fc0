// Every call's error: a retried step keeps the error of each call that failed with its row
// (short, bounded, sealed by the codec like every error), and engine.get shows them decoded.
import crypto from "node:crypto";
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, encryptedCodec } from "../../src/entries/index.js";
import { EVERY_STORE } from "../helpers/stores.js";

const flaky = defineWorkflow({
  name: "flaky",
  async run(ctx, failures: number) {
    return ctx.step("fetch", { retry: { maxAttempts: 20, backoffMs: 1, factor: 1 } }, ({ retry }) => {
      if (retry < failures) throw Object.assign(new Error(`call ${retry + 1} timed out ${"!".repeat(retry === 0 ? 2000 : 1)}`), { code: "ETIMEDOUT" });
      return { ok: true, calls: retry + 1 };
    });
  },
});

describe.each(EVERY_STORE)("call errors (%s)", (_name, makeStore) => {
  it("a step that succeeded on its third call shows the first two calls' errors; a step that failed every call, each", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [flaky] });
    expect(await engine.start(flaky, 2, { id: "two" })).toMatchObject({ status: "completed", value: { ok: true, calls: 3 } });
    const step = (await engine.get("two")).steps[0]!;
    expect(step.calls).toBe(3);
    expect(step.callErrors!.map((c) => [c.call, c.error.code, c.error.message.slice(0, 20)])).toEqual([
      [1, "ETIMEDOUT", "call 1 timed out !!!"],
      [2, "ETIMEDOUT", "call 2 timed out !"],
    ]);
    // Short: the message bounded, no stack kept.
    expect(step.callErrors![0]!.error.message.length).toBeLessThanOrEqual(1001);
    expect(step.callErrors![0]!.error.stack).toBeUndefined();
    expect(step.resolution).toBeUndefined();

    const many = defineWorkflow({
      name: "hopeless",
      async run(ctx) {
        return ctx.step("fetch", { retry: { maxAttempts: 14, backoffMs: 1, factor: 1 } }, ({ retry }) => {
          throw new Error(`failure ${retry + 1}`);
        });
      },
    });
    expect(await engine.start(many, undefined, { id: "all" })).toMatchObject({ status: "failed", error: { message: "failure 14" } });
    const failed = (await engine.get("all")).steps[0]!;
    // At most 10 kept: the first, then the latest.
    expect(failed.callErrors!.map((c) => c.call)).toEqual([1, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    expect(failed.callErrors!.at(-1)!.error.message).toBe("failure 14");
    await engine.close();
  });

  it("with a codec the call errors are sealed in the store, and read back with the key", async () => {
    const keys = { k1: crypto.randomBytes(32) };
    const store = makeStore();
    const engine = createEngine({ store, workflows: [flaky], codec: encryptedCodec({ keys, current: "k1" }) });
    await engine.start(flaky, 1, { id: "sealed" });
    const row = (await engine.store.loadRun("sealed"))!.steps[0]!;
    expect(row.resolution).toContain("callErrors");
    expect(row.resolution).not.toContain("timed out");
    expect((await engine.get("sealed")).steps[0]!.callErrors![0]!.error.message).toMatch(/^call 1 timed out/);
    await engine.close();
  });
});
