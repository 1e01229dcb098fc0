// A succeeded irreversible step is never run again without consent: a continue whose start point
// comes before it stops there (REDO_IRREVERSIBLE) until it is told `redo` or `reuse`.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { testWorkflow } from "../../src/entries/testing.js";
import { STORES } from "../helpers/stores.js";

describe.each(STORES)("a succeeded irreversible step after the start point (%s)", (_name, makeStore) => {
  function shop() {
    const calls: string[] = [];
    const workflow = defineWorkflow({
      name: "shop",
      async run(ctx) {
        const plan = await ctx.step("plan", async () => (calls.push("plan"), "plan"));
        const charge = await ctx.step("charge", { effect: "irreversible" }, async ({ attempt }) => (calls.push("charge"), `charged in ${attempt}`));
        await ctx.step("ship", async () => calls.push("ship"));
        return [plan, charge];
      },
    });
    return { workflow, calls };
  }

  it("fromStep before it: the attempt stops before calling it, naming the step, when it ran and both ways on", async () => {
    const { workflow, calls } = shop();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "s" });
    const stopped = await engine.continue("s", { fromStep: "plan" });
    expect(stopped).toMatchObject({ status: "stopped", error: { code: "REDO_IRREVERSIBLE", step: "charge" } });
    expect(stopped.error!.message).toMatch(/already succeeded \(in attempt 1, at \d{4}-\d\d-\d\dT/);
    expect(stopped.error!.message).toContain(`engine.continue("s", { redo: ["charge"] })`);
    expect(stopped.error!.message).toContain(`engine.continue("s", { reuse: ["charge"] })`);
    expect(calls).toEqual(["plan", "charge", "ship", "plan"]);
    await engine.close();
  });

  it("redo: it runs again (a start point of its own), and the consent is recorded on the attempt", async () => {
    const { workflow, calls } = shop();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "s" });
    await engine.continue("s", { fromStep: "plan" });
    const redone = await engine.continue("s", { redo: ["charge"] });
    expect(redone).toMatchObject({ status: "completed", value: ["plan", "charged in 3"] });
    expect(calls).toEqual(["plan", "charge", "ship", "plan", "charge", "ship"]);
    const view = await engine.get("s");
    expect(view.attempts[2]).toMatchObject({ consent: { redo: ["charge"], reuse: [] } });
    expect(view.attempts[1]!.consent).toBeUndefined();
    await engine.close();
  });

  it("reuse: its record is handed back and the steps after it run", async () => {
    const { workflow, calls } = shop();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "s" });
    const reused = await engine.continue("s", { fromStep: "plan", reuse: ["charge"] });
    expect(reused).toMatchObject({ status: "completed", value: ["plan", "charged in 1"] });
    expect(calls).toEqual(["plan", "charge", "ship", "plan", "ship"]);
    expect((await engine.get("s")).attempts[1]).toMatchObject({ consent: { redo: [], reuse: ["charge"] }, reused: ["charge"] });
    await engine.close();
  });

  it("a step added before it (a code change) is the start point: the stop comes before the charge", async () => {
    const calls: string[] = [];
    let withCheck = false;
    let shipFails = true;
    const workflow = defineWorkflow({
      name: "added-step",
      async run(ctx) {
        if (withCheck) await ctx.step("fraud-check", async () => calls.push("fraud-check"));
        await ctx.step("charge", { effect: "irreversible" }, async () => calls.push("charge"));
        await ctx.step("ship", async () => {
          calls.push("ship");
          if (shipFails) throw new Error("no courier");
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "a" });
    withCheck = true;
    shipFails = false;
    expect(await engine.continue("a")).toMatchObject({ status: "stopped", error: { code: "REDO_IRREVERSIBLE", step: "charge" } });
    expect(calls).toEqual(["charge", "ship", "fraud-check"]);
    // Told nothing more, a continue stops there again (the charge is its start point), running nothing.
    expect(await engine.continue("a")).toMatchObject({ status: "stopped", error: { code: "REDO_IRREVERSIBLE", step: "charge" } });
    expect(calls).toEqual(["charge", "ship", "fraud-check"]);
    expect(await engine.continue("a", { reuse: ["charge"] })).toMatchObject({ status: "completed" });
    expect(calls).toEqual(["charge", "ship", "fraud-check", "ship"]);
    await engine.close();
  });

  it("after the stop, reuse keeps the charge and runs what follows it again (it was made from the redone steps)", async () => {
    let version = 1;
    const calls: string[] = [];
    const workflow = defineWorkflow({
      name: "plan-charge-ship",
      async run(ctx) {
        const plan = await ctx.step("plan", async () => `plan v${version}`);
        const charge = await ctx.step("charge", { effect: "irreversible" }, async () => (calls.push("charge"), "charged"));
        const ship = await ctx.step("ship", async () => `shipped per ${plan}`);
        return { plan, charge, ship };
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "p" });
    version = 2;
    expect(await engine.continue("p", { fromStep: "plan" })).toMatchObject({ status: "stopped", error: { code: "REDO_IRREVERSIBLE" } });
    expect(await engine.continue("p", { reuse: ["charge"] })).toMatchObject({
      status: "completed",
      value: { plan: "plan v2", charge: "charged", ship: "shipped per plan v2" },
    });
    expect(calls).toEqual(["charge"]);
    await engine.close();
  });

  it("fromStep naming the irreversible step itself is consent to redo it", async () => {
    const { workflow, calls } = shop();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "s" });
    expect(await engine.continue("s", { fromStep: "charge" })).toMatchObject({ status: "completed", value: ["plan", "charged in 2"] });
    expect(calls).toEqual(["plan", "charge", "ship", "charge", "ship"]);
    await engine.close();
  });

  it("redo and reuse must name recorded steps, and a step in both is refused; nothing is counted", async () => {
    const { workflow } = shop();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "s" });
    await expect(engine.continue("s", { fromStep: "plan", redo: ["chrage"] })).rejects.toMatchObject({
      code: "STEP_NOT_FOUND",
      message: expect.stringMatching(/no recorded step "chrage" \(redo\)/),
    });
    await expect(engine.continue("s", { fromStep: "plan", reuse: ["nope"] })).rejects.toMatchObject({ code: "STEP_NOT_FOUND" });
    // A completed run takes redo as it takes fromStep: the step named is redone, and what follows it.
    await expect(engine.continue("s", { reuse: ["charge"] })).rejects.toMatchObject({ code: "RUN_COMPLETED" });
    await expect(engine.continue("s", { redo: ["charge"], reuse: ["charge"] })).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringContaining("both redo and reuse"),
    });
    await expect(engine.continue("s", { redo: "charge" as never })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    expect((await engine.get("s")).attemptCount).toBe(1);
    expect(await engine.continue("s", { redo: ["charge"] })).toMatchObject({ status: "completed", value: ["plan", "charged in 2"] });
    await engine.close();
  });
});

describe("testWorkflow", () => {
  const workflow = defineWorkflow({
    name: "seeded-shop",
    async run(ctx) {
      const plan = await ctx.step("plan", async () => "new plan");
      const charge = await ctx.step("charge", { effect: "irreversible" }, async () => "charged again");
      return [plan, charge];
    },
  });
  const earlier = { steps: { plan: "old plan", charge: "charged" }, effects: { charge: "irreversible" as const } };

  it("shows the stop like any other", async () => {
    const run = await testWorkflow(workflow, { args: undefined, earlier, fromStep: "plan" });
    expect(run).toMatchObject({ status: "stopped", error: { code: "REDO_IRREVERSIBLE", step: "charge" }, ran: ["plan"] });
    expect(run.calls("charge")).toBe(0);
  });

  it("takes redo and reuse", async () => {
    expect(await testWorkflow(workflow, { args: undefined, earlier, fromStep: "plan", reuse: ["charge"] })).toMatchObject({
      status: "completed",
      value: ["new plan", "charged"],
      ran: ["plan"],
    });
    expect(await testWorkflow(workflow, { args: undefined, earlier, redo: ["charge"] })).toMatchObject({
      status: "completed",
      value: ["old plan", "charged again"],
      ran: ["charge"],
    });
  });
});
