// A rolling key rotation: a worker that still has only the old key meets a run whose later records
// are sealed with the new one. Its continue is refused before the claim — no attempt counted, the
// run not dead-lettered — and an engine with both keys goes on.
import crypto from "node:crypto";
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, encryptedCodec } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { tmpDb } from "../helpers/tmp.js";

describe("a continue without the key some records need", () => {
  it("is refused with CODEC_KEY_MISSING naming the run and step, before the claim: no attempt counted, nothing dead-lettered", async () => {
    const file = tmpDb();
    const k1 = crypto.randomBytes(32);
    const k2 = crypto.randomBytes(32);
    let failB = true;
    const flow = defineWorkflow({
      name: "rotating",
      maxAttempts: 5,
      async run(ctx) {
        await ctx.step("a", async () => "a");
        await ctx.step("b", async () => {
          if (failB) throw new Error("b fails until fixed");
          return "b";
        });
        return ctx.step("c", async () => "c");
      },
    });
    const engine = (keys: Record<string, Buffer>, current: string) =>
      createEngine({ store: sqliteStore({ path: file }), workflows: [flow], codec: encryptedCodec({ keys, current }) });
    const old = engine({ k1 }, "k1");
    expect(await old.start(flow, undefined, { id: "r" })).toMatchObject({ status: "failed" });
    await old.close();
    // Attempt 2 on a worker that already has the new key: b's new failure is sealed with k2.
    const both = engine({ k1, k2 }, "k2");
    expect(await both.continue("r")).toMatchObject({ status: "failed", attempt: 2 });
    // A worker with only k1 is refused at once, as many times as it tries.
    const lagging = engine({ k1 }, "k1");
    for (let i = 0; i < 3; i++) {
      const refused = await lagging.continue("r").catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: "CODEC_KEY_MISSING", runId: "r", step: "b" });
      expect((refused as Error).message).toContain(`Run "r": the record of step "b" was sealed with key "k2"`);
    }
    expect((await both.get("r")).attemptCount).toBe(2);
    await lagging.close();
    failB = false;
    expect(await both.continue("r")).toMatchObject({ status: "completed", value: "c", attempt: 3 });
    await both.close();
  });
});

describe("a key under the right id that is not the one that sealed the payload", () => {
  it("is STORE_UNREADABLE saying to check that key, not to look for another store file", async () => {
    const sealedWith = encryptedCodec({ keys: { k1: crypto.randomBytes(32) }, current: "k1" });
    const other = encryptedCodec({ keys: { k1: crypto.randomBytes(32) }, current: "k1" });
    const stored = await sealedWith.encode('"secret"');
    const error = await Promise.resolve()
      .then(() => other.decode(stored))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "STORE_UNREADABLE" });
    expect((error as Error).message).toContain(
      `Check that key "k1" in encryptedCodec({ keys }) (for the steplog command, STEPLOG_KEYS) is the key that sealed it`,
    );
    expect((error as Error).message).not.toContain("Point the engine at the right file");
  });
});
