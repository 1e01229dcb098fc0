// A step's function that cannot tell whether its effect happened (a connection lost after the
// request went out) throws OutcomeUnknown: the step is left intended, never recorded as a failure
// a continue would simply redo, and the next continue settles it by its policy, on every store.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, OutcomeUnknown, type StepInfo } from "../../src/entries/index.js";
import { STORES } from "../helpers/stores.js";

/** A payment service whose reply is lost on the first call: the charge is made, the caller cannot tell. */
function payments() {
  const charges: string[] = [];
  let replyLost = true;
  return {
    charges,
    async charge(key: string): Promise<string> {
      charges.push(key);
      if (replyLost) {
        replyLost = false;
        throw new OutcomeUnknown("the connection closed before the reply", { cause: new Error("ECONNRESET") });
      }
      return `ch_${charges.length}`;
    },
    find: (key: string) => (charges.includes(key) ? `ch_${charges.indexOf(key) + 1}` : undefined),
  };
}

describe.each(STORES)("a step whose outcome is unknown (%s)", (_name, makeStore) => {
  it("irreversible with a query: the attempt fails STEP_OUTCOME_UNKNOWN, not retried; a continue asks the query and never charges twice", async () => {
    const pay = payments();
    const workflow = defineWorkflow({
      name: "pay",
      async run(ctx) {
        return ctx.step(
          "charge",
          {
            effect: "irreversible",
            retry: { maxAttempts: 3, backoffMs: 1 },
            query: async ({ idempotencyKey }) => {
              const found = pay.find(idempotencyKey);
              return found ? { done: true, value: found } : { done: false };
            },
          },
          async ({ idempotencyKey }) => pay.charge(idempotencyKey),
        );
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const first = await engine.start(workflow, undefined, { id: "p" });
    expect(first).toMatchObject({ status: "failed", error: { code: "STEP_OUTCOME_UNKNOWN", step: "charge", name: "StepOutcomeUnknownError" } });
    expect(first.error!.message).toContain("the connection closed before the reply");
    expect(first.error!.message).toContain('engine.continue("p")');
    expect(first.error!.message).toContain("asking its query");
    expect(pay.charges).toHaveLength(1);
    expect((await engine.get("p")).steps.map((s) => s.status)).toEqual(["intended"]);
    expect(await engine.continue("p")).toMatchObject({ status: "completed", value: "ch_1" });
    expect(pay.charges).toHaveLength(1);
    expect((await engine.get("p")).steps[0]).toMatchObject({ status: "succeeded", resolution: { policy: "query", found: "done" } });
    await engine.close();
  });

  it("irreversible without a query: a continue escalates it; a person resolves it", async () => {
    const pay = payments();
    const workflow = defineWorkflow({
      name: "pay",
      async run(ctx) {
        return ctx.step("charge", { effect: "irreversible" }, async ({ idempotencyKey }) => pay.charge(idempotencyKey));
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "e" })).toMatchObject({ status: "failed", error: { code: "STEP_OUTCOME_UNKNOWN" } });
    expect(await engine.continue("e")).toMatchObject({ status: "escalated" });
    expect(pay.charges).toHaveLength(1);
    await engine.resolve("e", "charge", { value: "ch_1" });
    expect(await engine.continue("e")).toMatchObject({ status: "completed", value: "ch_1" });
    expect(pay.charges).toHaveLength(1);
    await engine.close();
  });

  it("idempotent: a continue re-drives it with the same idempotency key, told the earlier attempt", async () => {
    const pay = payments();
    const seen: Array<Pick<StepInfo, "idempotencyKey" | "previous">> = [];
    const workflow = defineWorkflow({
      name: "pay",
      async run(ctx) {
        const before = await ctx.step("quote", async () => 12);
        const charged = await ctx.step(
          "charge",
          async (info) => (seen.push({ idempotencyKey: info.idempotencyKey, previous: info.previous }), pay.charge(info.idempotencyKey)),
        );
        return { before, charged };
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "i" })).toMatchObject({ status: "failed", error: { code: "STEP_OUTCOME_UNKNOWN", step: "charge" } });
    expect(await engine.continue("i")).toMatchObject({ status: "completed", value: { before: 12, charged: "ch_2" } });
    expect(seen).toHaveLength(2);
    expect(seen[1]!.idempotencyKey).toBe(seen[0]!.idempotencyKey);
    expect(seen[1]!.previous).toMatchObject({ attempt: 1, idempotencyKey: seen[0]!.idempotencyKey });
    await engine.close();
  });

  it("the workflow cannot catch it and go on: the attempt has ended", async () => {
    let after = 0;
    const workflow = defineWorkflow({
      name: "caught",
      async run(ctx) {
        await ctx
          .step("send", { effect: "irreversible" }, async () => {
            throw new OutcomeUnknown("no reply");
          })
          .catch(() => "swallowed");
        await ctx.step("next", async () => after++);
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "k" })).toMatchObject({ status: "failed", error: { code: "STEP_OUTCOME_UNKNOWN", step: "send" } });
    expect(after).toBe(0);
    await engine.close();
  });
});
