// Budgets (docs/budgets.md) through the public API on every store: a retried paid loop parks at
// its budget before the next step's intent, raiseBudget lets it go on (a worker picks it up),
// children that draw on their parent's budget count toward it, and a run without one is unchanged.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, isSteplogError, type Engine } from "../../src/entries/index.js";
import { modelTurn } from "../../src/entries/agents.js";
import { EVERY_STORE, sameDataStores } from "../helpers/stores.js";

/** Run a worker until `until` says so (or a few seconds pass), then stop it. */
async function workUntil(engine: Engine, until: () => Promise<boolean> | boolean) {
  const controller = new AbortController();
  const worker = engine.work({ pollMs: 10, signal: controller.signal });
  const started = Date.now();
  while (!(await until()) && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 5));
  controller.abort();
  return worker;
}

const refusal = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error("expected a refusal");
};

/**
 * An agent loop: each turn is a paid model call ($0.25, 100 input + 50 output tokens) whose first
 * call fails after reporting its usage (a retry), until `turns` turns have answered.
 */
const calls: Record<string, number> = {};
const looping = defineWorkflow({
  name: "budget-loop",
  async run(ctx, turns: number) {
    const answers: string[] = [];
    for (let i = 0; i < turns; i++) {
      const answer = await modelTurn(
        ctx,
        async (info) => {
          calls[`${ctx.runId}:${i}`] = (calls[`${ctx.runId}:${i}`] ?? 0) + 1;
          if (info.retry === 0) {
            // A paid call that failed: its usage is recorded with the row, and counts.
            info.usage({ inputTokens: 100, outputTokens: 50, costUsd: 0.25 });
            throw new Error("overloaded");
          }
          return { text: `turn ${i}`, usage: { inputTokens: 100, outputTokens: 50 } };
        },
        { retry: { maxAttempts: 2, backoffMs: 1 }, costUsd: () => 0.25 },
      );
      answers.push(answer.text);
    }
    return answers;
  },
});

describe.each(EVERY_STORE)("budgets (%s)", (name, makeStore) => {
  it("a retried paid loop parks at its budget before the next step's intent; raiseBudget and a worker go on; spend counts every call", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [looping] });
    // Each turn spends $0.50 and 300 tokens (two calls). $1.00 allows two turns, then parks.
    const id = `loop-${name}`;
    const first = await engine.start(looping, 5, { id, budget: { usd: 1 } });
    expect(first).toMatchObject({
      status: "waiting",
      waitingFor: { kind: "budget", step: "model#3", spent: { usd: 1, tokens: 600 }, budget: { usd: 1 } },
    });
    const parked = await engine.get(id);
    // Parked before the intent: no row for the third turn.
    expect(parked.steps.map((s) => s.key)).toEqual(["model", "model#2"]);
    expect(parked.waitingFor?.kind).toBe("budget");
    expect(calls[`${id}:2`]).toBeUndefined();

    // Not above the spend: refused, nothing changed.
    const low = await refusal(engine.raiseBudget(id, { usd: 1 }));
    expect(low.code).toBe("BUDGET_TOO_LOW");
    expect(low.message).toContain("$1");
    expect((await engine.get(id)).waitingFor?.kind).toBe("budget");

    expect(await engine.raiseBudget(id, { usd: 2, tokens: 100_000 })).toEqual({ usd: 2, tokens: 100_000 });
    await workUntil(engine, async () => (await engine.get(id)).status !== "waiting" || (await engine.get(id)).waitingFor?.kind === "budget");
    // $2 allows two more turns; the fifth parks again.
    const again = await engine.get(id);
    expect(again.waitingFor).toMatchObject({ kind: "budget", step: "model#5", spent: { usd: 2, tokens: 1200 }, budget: { usd: 2, tokens: 100_000 } });
    await engine.raiseBudget(id, { usd: 10 });
    await workUntil(engine, async () => (await engine.get(id)).status === "completed");
    expect((await engine.get(id)).status).toBe("completed");
    expect(calls[`${id}:4`]).toBe(2);
    await engine.close();
  });

  it("a continue past the budget parks again; the workflow's budget applies unless start gives one", async () => {
    const capped = defineWorkflow({
      name: "budget-capped",
      budget: { tokens: 150 },
      async run(ctx) {
        await ctx.step("one", async (info) => info.usage({ inputTokens: 100, outputTokens: 50 }));
        return ctx.step("two", async () => "done");
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [capped] });
    expect(await engine.start(capped, undefined, { id: "c" })).toMatchObject({ waitingFor: { kind: "budget", step: "two", budget: { tokens: 150 } } });
    expect(await engine.continue("c")).toMatchObject({ status: "waiting", waitingFor: { kind: "budget", step: "two" } });
    expect(await engine.start(capped, undefined, { id: "own", budget: { tokens: 1000 } })).toMatchObject({ status: "completed", value: "done" });
    await engine.close();
  });

  it("a run without a budget is unchanged, and raiseBudget on it (or one not parked) is NOT_WAITING; an unknown run RUN_NOT_FOUND", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [looping] });
    expect(await engine.start(looping, 2, { id: "free" })).toMatchObject({ status: "completed", value: ["turn 0", "turn 1"] });
    const view = await engine.get("free");
    expect(view.waitingFor).toBeUndefined();
    expect(view.usage).toMatchObject({ costUsd: 1, inputTokens: 400, outputTokens: 200 });
    const notParked = await refusal(engine.raiseBudget("free", { usd: 5 }));
    expect(notParked.code).toBe("NOT_WAITING");
    expect(notParked.message).toContain("has no budget");
    expect(await engine.start(looping, 1, { id: "under", budget: { usd: 5 } })).toMatchObject({ status: "completed" });
    const done = await refusal(engine.raiseBudget("under", { usd: 9 }));
    expect(done.code).toBe("NOT_WAITING");
    expect(done.message).toContain("is completed");
    expect((await refusal(engine.raiseBudget("nobody", { usd: 1 }))).code).toBe("RUN_NOT_FOUND");
    await engine.close();
  });

  it("budget options are checked: positive finite numbers, known keys", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [looping] });
    for (const budget of [{ usd: 0 }, { usd: -1 }, { tokens: Infinity }, { usd: "5" }, {}, { dollars: 5 }, null]) {
      const error = await refusal(engine.start(looping, 1, { budget: budget as never }));
      expect(error.code, JSON.stringify(budget)).toBe("INVALID_OPTION");
      expect(error.message).toContain("budget");
    }
    expect(() => defineWorkflow({ name: "bad-budget", budget: { usd: NaN }, run: async () => 1 })).toThrow(/budget usd must be a positive finite number/);
    await engine.close();
  });

  it('children with budget: "parent" count toward the parent\'s budget and park on it; raising the parent wakes them', async () => {
    const paid = defineWorkflow({
      name: "budget-child",
      async run(ctx, n: number) {
        for (let i = 0; i < n; i++) await ctx.step(`pay-${i}`, async (info) => info.usage({ costUsd: 1 }));
        return n;
      },
    });
    const parent = defineWorkflow({
      name: "budget-parent",
      async run(ctx) {
        const a = await ctx.child("a", paid, 2, { budget: "parent" });
        const b = await ctx.child("b", paid, 2, { budget: "parent" });
        // Not drawing on it: its own spend, not counted.
        const c = await ctx.child("c", paid, 5);
        return ctx.step("sum", async () => a + b + c);
      },
    });
    const same = sameDataStores(name, makeStore);
    const engine = createEngine({ store: same(), workflows: [parent, paid] });
    const first = await engine.start(parent, undefined, { id: "p", budget: { usd: 3 } });
    // a spent 2, b spends 1 more and parks before its second step: the shared spend reached 3.
    expect(first).toMatchObject({ status: "waiting", waitingFor: { kind: "child", child: "p/b" } });
    const child = await engine.get("p/b");
    expect(child.waitingFor).toMatchObject({ kind: "budget", step: "pay-1", budgetRun: "p", spent: { usd: 3 }, budget: { usd: 3 } });
    expect((await refusal(engine.raiseBudget("p/b", { usd: 10 }))).code).toBe("BUDGET_OF_PARENT");
    // The parent is parked on its child, but a child drawing on its budget is parked on it: accepted.
    await engine.raiseBudget("p", { usd: 4 });
    // b goes on (spend 4); c spends 5 of its own, not counted; the parent's next step finds its budget reached.
    await workUntil(engine, async () => (await engine.get("p")).waitingFor?.kind === "budget");
    const parked = await engine.get("p");
    expect(parked).toMatchObject({
      status: "waiting",
      waitingFor: { kind: "budget", step: "sum", spent: { usd: 4 } },
      budget: { usd: 4 },
      spent: { usd: 4, tokens: 0 },
    });
    expect(await engine.get("p/b")).toMatchObject({ status: "completed", budgetRun: "p", spent: { usd: 2 } });
    expect((await engine.get("p/c")).spent).toBeUndefined();
    await engine.raiseBudget("p", { usd: 5 });
    await workUntil(engine, async () => (await engine.get("p")).status === "completed");
    expect(await engine.get("p")).toMatchObject({ status: "completed", value: 9 });
    await engine.close();
  });

  it('a parent whose child (startChild, budget "parent") spends while the parent\'s attempt runs sees that spend at its next step', async () => {
    const paid = defineWorkflow({
      name: "budget-beside",
      async run(ctx, n: number) {
        for (let i = 0; i < n; i++) await ctx.step(`pay-${i}`, async (info) => info.usage({ costUsd: 1, outputTokens: 10 }));
        return n;
      },
    });
    const ran: string[] = [];
    const parent = defineWorkflow({
      name: "budget-beside-parent",
      async run(ctx) {
        const handle = await ctx.startChild("c", paid, 2, { budget: "parent" });
        const n = await handle.result();
        // Claimed with nothing spent; the child's $2 reached the budget meanwhile, in this attempt.
        await ctx.step("after", async () => ran.push("after"));
        return n;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [parent, paid] });
    const result = await engine.start(parent, undefined, { id: "bp", budget: { usd: 2 } });
    expect(result).toMatchObject({ status: "waiting", waitingFor: { kind: "budget", step: "after", spent: { usd: 2, tokens: 20 } } });
    expect(ran).toEqual([]);
    expect(await engine.get("bp")).toMatchObject({ spent: { usd: 2, tokens: 20 } });
    await engine.raiseBudget("bp", { usd: 3 });
    expect(await engine.continue("bp")).toMatchObject({ status: "completed", value: 2 });
    expect(ran).toEqual(["after"]);
    await engine.close();
  });

  it('budget: "parent" without a budget on the parent is INVALID_OPTION', async () => {
    const kid = defineWorkflow({ name: "budget-kid", run: async () => 1 });
    const parent = defineWorkflow({ name: "budget-no-parent", run: (ctx) => ctx.child("k", kid, undefined, { budget: "parent" }) });
    const engine = createEngine({ store: makeStore(), workflows: [parent, kid] });
    const result = await engine.start(parent, undefined, { id: "np" });
    expect(result.status).toBe("failed");
    expect(isSteplogError(result.error, "INVALID_OPTION")).toBe(true);
    expect(result.error?.message).toContain("has none");
    await engine.close();
  });
});
