// An effectful step whose function returned but whose value cannot be recorded (rejected by its
// result schema, too large, not serialisable) is left intended, an unknown outcome, on every store.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { STORES } from "../helpers/stores.js";

describe.each(STORES)("an effect whose value cannot be recorded (%s)", (_name, makeStore) => {
  it.each([
    ["rejected by its result schema", "RESULT_REJECTED", { result: z.object({ id: z.string() }) }, () => ({ id: 42 })],
    ["too large", "VALUE_TOO_LARGE", {}, () => "x".repeat(5000)],
    ["not serialisable", "VALUE_NOT_SERIALIZABLE", {}, () => ({ at: new URL("https://pay.example") })],
  ])("%s: the attempt fails, the step stays intended, and a continue escalates it instead of charging again", async (_what, code, options, make) => {
    let charges = 0;
    const workflow = defineWorkflow({
      name: "charge-once",
      async run(ctx) {
        return ctx.step("charge", { effect: "irreversible", ...options }, async () => (charges++, make()) as never);
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow], maxValueBytes: 4096 });
    const first = await engine.start(workflow, undefined, { id: "c" });
    expect(first).toMatchObject({ status: "failed", error: { code, step: "charge", name: "EffectUnrecordedError" } });
    expect(first.error!.message).toContain("its effect has already happened");
    expect((await engine.get("c")).steps.map((s) => s.status)).toEqual(["intended"]);
    expect(await engine.continue("c")).toMatchObject({ status: "escalated" });
    expect(charges).toBe(1);
    await engine.resolve("c", "charge", { value: { id: "ch_1" } });
    expect(await engine.continue("c")).toMatchObject({ status: "completed", value: { id: "ch_1" } });
    expect(charges).toBe(1);
    await engine.close();
  });

  it("the workflow cannot catch it and go on: the attempt has ended", async () => {
    let after = 0;
    const workflow = defineWorkflow({
      name: "caught",
      async run(ctx) {
        await ctx.step("charge", { effect: "irreversible" }, async () => (() => 1) as never).catch(() => "swallowed");
        await ctx.step("ship", async () => after++);
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "k" })).toMatchObject({ status: "failed", error: { code: "VALUE_NOT_SERIALIZABLE", step: "charge" } });
    expect(after).toBe(0);
    await engine.close();
  });
});
