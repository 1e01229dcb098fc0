// DESIGN.md, "Sagas and the pivot": three compensatable steps and an irreversible pivot,
// failed before and after the pivot; compensate(id), onFailure, PAST_PIVOT, PIVOT_ORDER.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { STORES } from "../helpers/stores.js";

function trip(failAt: { value: string | undefined }, log: string[], onFailure: "keep" | "compensate" = "keep") {
  const book = (what: string) => ({
    effect: "compensatable" as const,
    compensate: (value: string | undefined, { idempotencyKey }: { idempotencyKey: string }) => {
      log.push(`cancel ${what} ${String(value)} (${idempotencyKey})`);
    },
  });
  const act =
    (what: string) =>
    async ({ idempotencyKey }: { idempotencyKey: string }) => {
      if (failAt.value === what) throw new Error(`${what} failed`);
      log.push(`book ${what} (${idempotencyKey})`);
      return `${what}-confirmation`;
    };
  return defineWorkflow({
    name: "trip",
    onFailure,
    async run(ctx) {
      const flight = await ctx.step("flight", book("flight"), act("flight"));
      const hotel = await ctx.step("hotel", book("hotel"), act("hotel"));
      const car = await ctx.step("car", book("car"), act("car"));
      if (failAt.value === "between") throw new Error("failed between car and the pivot");
      await ctx.step("charge", { effect: "irreversible" }, act("charge"));
      await ctx.step("email", act("email"));
      return [flight, hotel, car];
    },
  });
}

describe.each(STORES)("sagas and the pivot (%s)", (_name, makeStore) => {
  it("failed before the pivot: compensate(id) runs each succeeded compensatable step's compensate, newest first, each recorded", async () => {
    const log: string[] = [];
    const failAt = { value: "between" as string | undefined };
    const workflow = trip(failAt, log);
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect((await engine.start(workflow, undefined, { id: "t" })).status).toBe("failed");
    log.length = 0;
    const result = await engine.compensate("t");
    expect(result).toEqual({ id: "t", status: "compensated", runStatus: "compensated", attempt: 2 });
    expect(log).toEqual(["cancel car car-confirmation (t:car)", "cancel hotel hotel-confirmation (t:hotel)", "cancel flight flight-confirmation (t:flight)"]);
    const view = await engine.get("t");
    expect(view.status).toBe("compensated");
    expect(view.steps.map((s) => `${s.key}:${s.status}@${s.attempt}`)).toEqual([
      "flight:succeeded@1",
      "hotel:succeeded@1",
      "car:succeeded@1",
      "car:compensated@2",
      "hotel:compensated@2",
      "flight:compensated@2",
    ]);
    // The saga counts no attempt, and a second one compensates nothing again.
    expect(view.attempts.map((a) => a.ending)).toEqual(["failed", "compensated"]);
    log.length = 0;
    expect((await engine.compensate("t")).status).toBe("compensated");
    expect(log).toEqual([]);
    // Going forward after a saga books again with new idempotency keys.
    failAt.value = undefined;
    expect((await engine.continue("t")).status).toBe("completed");
    expect(log).toContain("book flight (t:flight:2)");
  });

  it("failed in the middle: only the steps that succeeded are compensated", async () => {
    const log: string[] = [];
    const workflow = trip({ value: "car" }, log);
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "t" });
    log.length = 0;
    await engine.compensate("t");
    expect(log).toEqual(["cancel hotel hotel-confirmation (t:hotel)", "cancel flight flight-confirmation (t:flight)"]);
  });

  it("failed after the pivot: compensate(id) is refused with PAST_PIVOT, the run must go forward", async () => {
    const log: string[] = [];
    const failAt = { value: "email" as string | undefined };
    const workflow = trip(failAt, log);
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect((await engine.start(workflow, undefined, { id: "t" })).status).toBe("failed");
    log.length = 0;
    const refusal = await engine.compensate("t").catch((e: unknown) => e);
    expect(refusal).toMatchObject({ code: "PAST_PIVOT", step: "charge" });
    expect((refusal as Error).message).toContain(`engine.continue("t")`);
    expect(log).toEqual([]);
    expect((await engine.get("t")).attemptCount).toBe(1);
    failAt.value = undefined;
    expect((await engine.continue("t")).status).toBe("completed");
  });

  it("onFailure: 'compensate' runs the saga as soon as an attempt fails before the pivot, and keeps everything after it", async () => {
    const log: string[] = [];
    const engine = createEngine({ store: makeStore(), workflows: [] });
    const before = trip({ value: "between" }, log, "compensate");
    const result = await engine.start(before, undefined, { id: "before" });
    expect(result).toMatchObject({ status: "failed", runStatus: "compensated" });
    expect(log.filter((l) => l.startsWith("cancel"))).toHaveLength(3);
    log.length = 0;
    const engine2 = createEngine({ store: makeStore(), workflows: [] });
    const kept = await engine2.start(trip({ value: "email" }, log, "compensate"), undefined, { id: "after" });
    expect(kept).toMatchObject({ status: "failed", runStatus: "failed" });
    expect(log.filter((l) => l.startsWith("cancel"))).toEqual([]);
  });

  it("an irreversible step refuses to start while another step is in flight (PIVOT_ORDER)", async () => {
    const workflow = defineWorkflow({
      name: "eager",
      async run(ctx) {
        const draft = ctx.step("draft", () => new Promise((resolve) => setTimeout(() => resolve("d"), 20)));
        const validate = ctx.step("validate", () => new Promise((resolve) => setTimeout(() => resolve("v"), 20)));
        await ctx.step("send", { effect: "irreversible" }, async () => "sent");
        return Promise.all([draft, validate]);
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "e" });
    expect(result).toMatchObject({ status: "failed", error: { code: "PIVOT_ORDER", step: "send" } });
    expect(result.error!.message).toContain(`"draft", "validate" are still in flight`);
  });

  it("an irreversible step with approval: true checks again once its approval is found, so a step started meanwhile still makes it PIVOT_ORDER", async () => {
    const log: string[] = [];
    const workflow = defineWorkflow({
      name: "approved-pivot",
      async run(ctx) {
        return Promise.all([
          ctx.step("pay", { effect: "irreversible", approval: true }, async () => void log.push("pay")),
          ctx.step("other", () => new Promise<void>((resolve) => setTimeout(() => resolve(void log.push("other")), 20))),
        ]);
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "p" })).toMatchObject({ status: "waiting" });
    await engine.approve("p", "pay");
    const result = await engine.continue("p");
    expect(result).toMatchObject({ status: "failed", error: { code: "PIVOT_ORDER", step: "pay" } });
    expect(log).not.toContain("pay");
  });
});
