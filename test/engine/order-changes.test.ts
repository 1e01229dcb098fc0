// Records are matched by key, and keys of a repeated name are numbered in call order: a loop over
// a list reordered between attempts hands one item's record to another. A continue that hands
// records back in another order than they were recorded in warns (STEPLOG_ORDER_CHANGED, once
// per attempt), or stops with onOrderChange: "stop".
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { STORES } from "../helpers/stores.js";

let warnings: Error[] = [];
const onWarning = (warning: Error) => warnings.push(warning);
beforeEach(() => {
  warnings = [];
  process.on("warning", onWarning);
});
afterEach(() => {
  process.off("warning", onWarning);
});
const orderWarnings = () => warnings.filter((w) => (w as Error & { code?: string }).code === "STEPLOG_ORDER_CHANGED");
/** process.emitWarning reports on the next tick. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe.each(STORES)("order changes (%s)", (_name, makeStore) => {
  function greeter(onOrderChange?: "warn" | "stop", named = false) {
    let users = [{ id: "alice" }, { id: "bob" }];
    let failLast = true;
    const workflow = defineWorkflow({
      name: "greet",
      ...(onOrderChange ? { onOrderChange } : {}),
      async run(ctx) {
        const out: string[] = [];
        for (const user of users) {
          const profile = await ctx.step(named ? `fetch:${user.id}` : "fetch", async () => `profile of ${user.id}`);
          out.push(await ctx.step(`greet:${user.id}`, async () => `hi ${profile}`));
        }
        await ctx.step("last", async () => {
          if (failLast) throw new Error("later");
        });
        return out;
      },
    });
    return { workflow, reorder: () => (users = [users[1]!, users[0]!]), fix: () => (failLast = false) };
  }

  it("a reordered list with numbered keys: warned once, naming the keys, with the fromStep that redoes them", async () => {
    const { workflow, reorder, fix } = greeter();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "g" });
    reorder();
    fix();
    expect(await engine.continue("g")).toMatchObject({ status: "completed" });
    await settle();
    expect(orderWarnings()).toHaveLength(1);
    expect(orderWarnings()[0]!.message).toMatch(/attempt 2 handed back step "fetch#2" \(recorded at position 2\) after "greet:bob" \(position 3\)/);
    expect(orderWarnings()[0]!.message).toContain(`{ fromStep: "fetch" }`);
    await engine.close();
  });

  it('onOrderChange: "stop": the attempt stops there (ORDER_CHANGED), before handing the record over', async () => {
    const { workflow, reorder, fix } = greeter("stop");
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "g" });
    reorder();
    fix();
    const stopped = await engine.continue("g");
    expect(stopped).toMatchObject({ status: "stopped", error: { code: "ORDER_CHANGED", step: "fetch#2" } });
    expect(stopped.error!.message).toContain(`engine.continue("g", { fromStep: "fetch" })`);
    expect(await engine.continue("g", { fromStep: "fetch" })).toMatchObject({ status: "completed", value: ["hi profile of bob", "hi profile of alice"] });
    await settle();
    expect(orderWarnings()).toEqual([]);
    await engine.close();
  });

  it("keys named after their item survive a reorder: right values, no warning", async () => {
    const { workflow, reorder, fix } = greeter("stop", true);
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "g" });
    reorder();
    fix();
    expect(await engine.continue("g")).toMatchObject({ status: "completed", value: ["hi profile of bob", "hi profile of alice"] });
    await settle();
    expect(orderWarnings()).toEqual([]);
    await engine.close();
  });

  it("steps entered together are checked in the order they were entered, though one of them is handed back later (a result schema, a replayed failure)", async () => {
    let failLast = true;
    const workflow = defineWorkflow({
      name: "entered-together",
      onOrderChange: "stop",
      async run(ctx) {
        const got = await Promise.all([
          ctx.step("fetch", { result: z.number() }, async () => 1),
          ctx.step("fetch", async () => 2),
          ctx.step("fetch", async () => Promise.reject(new Error("404"))).catch(() => 0),
          ctx.step("fetch", async () => 4),
        ]);
        await ctx.step("after", async () => "went on");
        await ctx.step("last", async () => {
          if (failLast) throw new Error("later");
        });
        return got;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "t" });
    failLast = false;
    expect(await engine.continue("t")).toMatchObject({ status: "completed", value: [1, 2, 0, 4] });
    await settle();
    expect(orderWarnings()).toEqual([]);
    await engine.close();
  });

  it("steps launched together, one redone on a continue and one reused: recorded in call order, so no warning later", async () => {
    let xFails = true;
    let zFails = 1;
    const workflow = defineWorkflow({
      name: "parallel",
      onOrderChange: "stop",
      async run(ctx) {
        const pair = await Promise.all([
          // Two calls of one tool: keys "call" and "call#2", in call order.
          ctx.step("call", async () => {
            if (xFails) throw new Error("x down");
            return "x";
          }),
          ctx.step("call", async () => new Promise((resolve) => setTimeout(() => resolve("y"), 10))),
        ]);
        await ctx.step("z", async () => {
          if (zFails-- > 0) throw new Error("z down");
        });
        return pair;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "p" })).toMatchObject({ status: "failed", error: { step: "call" } });
    xFails = false;
    expect(await engine.continue("p")).toMatchObject({ status: "failed", error: { step: "z" } });
    expect(await engine.continue("p")).toMatchObject({ status: "completed", value: ["x", "y"] });
    await settle();
    expect(orderWarnings()).toEqual([]);
    const view = await engine.get("p");
    // "call" was redone in attempt 2 (a row written after "call#2"'s), "call#2" reused from attempt 1.
    expect(view.steps.filter((s) => s.key.startsWith("call")).map((s) => `${s.key}@${s.attempt}`)).toEqual(["call@1", "call#2@1", "call@2"]);
    await engine.close();
  });
});
