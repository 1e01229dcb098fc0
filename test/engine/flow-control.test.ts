// Flow control: per-key concurrency, rate limits, priority among due runs and deduplicated
// starts, held by the store (so by every engine sharing it), on every store.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, type Engine } from "../../src/entries/index.js";
import { fakeClock } from "../../src/entries/testing.js";
import { EVERY_STORE, sameDataStores } from "../helpers/stores.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => Promise<boolean> | boolean, ms = 8000): Promise<void> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > ms) throw new Error("timed out");
    await sleep(5);
  }
}

/** Gates the step functions: each call waits until its run is let go. */
class Gates {
  running = new Map<string, number>();
  maxByKey = new Map<string, number>();
  order: string[] = [];
  #open = new Set<string>();
  enter(key: string, runId: string): void {
    const now = (this.running.get(key) ?? 0) + 1;
    this.running.set(key, now);
    this.maxByKey.set(key, Math.max(this.maxByKey.get(key) ?? 0, now));
    this.order.push(runId);
  }
  leave(key: string): void {
    this.running.set(key, this.running.get(key)! - 1);
  }
  async wait(runId: string): Promise<void> {
    while (!this.#open.has(runId) && !this.#open.has("*")) await sleep(2);
  }
  let(runId: string): void {
    this.#open.add(runId);
  }
}

function work(engine: Engine, concurrency = 8) {
  const stop = new AbortController();
  const done = engine.work({ concurrency, pollMs: 25, signal: stop.signal });
  return { stop: async () => (stop.abort(), done) };
}

describe.each(EVERY_STORE)("flow control (%s)", (name, makeStore) => {
  it("concurrency per key: a second run of a busy key waits for its turn; other keys run; a worker starts it when the first ends", async () => {
    const gates = new Gates();
    const perUser = defineWorkflow({
      name: "per-user",
      concurrency: { limit: 1, key: (args: { user: string }) => args.user },
      async run(ctx, args: { user: string }) {
        return ctx.step("work", async () => {
          gates.enter(args.user, ctx.runId);
          await gates.wait(ctx.runId);
          gates.leave(args.user);
          return `${args.user} done`;
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [perUser] });
    const first = engine.start(perUser, { user: "ana" }, { id: "a1" });
    await until(() => gates.order.includes("a1"));
    const second = await engine.start(perUser, { user: "ana" }, { id: "a2" });
    expect(second).toEqual({ id: "a2", status: "waiting", runStatus: "waiting", attempt: 0, waitingFor: { kind: "turn", step: "" } });
    expect(await engine.get("a2")).toMatchObject({ status: "waiting", attemptCount: 0, attempts: [], waitingFor: { kind: "turn" } });
    // Another key is not held up.
    const other = engine.start(perUser, { user: "bo" }, { id: "b1" });
    await until(() => gates.order.includes("b1"));
    // A continue while the key is busy is refused, naming the holder; nothing counted.
    const refused = await engine.continue("a2").catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "FLOW_LIMITED", limit: "concurrency", key: "per-user:ana" });
    expect((refused as Error).message).toContain('key "per-user:ana" has 1 of 1 attempt running ("a1")');
    expect((await engine.get("a2")).attemptCount).toBe(0);

    const worker = work(engine);
    await sleep(100);
    expect(gates.order).toEqual(["a1", "b1"]); // a2 still waits: a1 holds the key
    gates.let("a1");
    gates.let("b1");
    expect(await first).toMatchObject({ status: "completed", value: "ana done" });
    expect(await other).toMatchObject({ status: "completed" });
    gates.let("a2");
    await until(async () => (await engine.get("a2")).status === "completed");
    const { attempts } = await worker.stop();
    expect(attempts.map((a) => [a.id, a.status, a.attempt])).toEqual([["a2", "completed", 1]]);
    expect(gates.maxByKey.get("ana")).toBe(1);
    await engine.close();
  });

  it("the limit holds across engines and store objects on one store: never more than the limit at once", async () => {
    const gates = new Gates();
    gates.let("*");
    const pair = defineWorkflow({
      name: "pair",
      concurrency: { limit: 2 },
      async run(ctx) {
        await ctx.step("work", async () => {
          gates.enter("all", ctx.runId);
          // Stay until a second run is in (or 2 s): the limit is met, so going over it would show.
          const since = Date.now();
          while ((gates.running.get("all") ?? 0) < 2 && Date.now() - since < 2000) await sleep(5);
          await sleep(20);
          gates.leave("all");
        });
      },
    });
    const make = sameDataStores(name, makeStore);
    const engines = [0, 1, 2].map(() => createEngine({ store: make(), workflows: [pair] }));
    const workers = engines.map((e) => work(e, 4));
    const started = await Promise.all(Array.from({ length: 9 }, (_, i) => engines[i % 3]!.start(pair, undefined, { id: `p${i}` })));
    expect(started.filter((r) => r.status !== "completed" && r.status !== "waiting")).toEqual([]);
    await until(async () => (await engines[0]!.list({ workflow: "pair", status: "completed" })).length === 9, 15_000);
    for (const w of workers) await w.stop();
    expect(gates.maxByKey.get("all")).toBe(2);
    expect(new Set(gates.order).size).toBe(9);
    expect(gates.order).toHaveLength(9); // each run's step once
    for (const e of engines) await e.close();
  });

  it("rate limit: at most N attempts start per period; the rest start when the window moves on", async () => {
    const clock = fakeClock(Date.UTC(2030, 0, 1));
    const calls: string[] = [];
    const limited = defineWorkflow({
      name: "limited",
      rateLimit: { limit: 2, periodMs: 60_000 },
      async run(ctx) {
        await ctx.step("call", () => calls.push(ctx.runId));
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [limited], clock });
    const results = [];
    for (const id of ["r1", "r2", "r3"]) results.push(await engine.start(limited, undefined, { id }));
    expect(results.map((r) => r.status)).toEqual(["completed", "completed", "waiting"]);
    const refused = await engine.continue("r3").catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "FLOW_LIMITED", limit: "rate", key: "limited" });
    expect((refused as Error).message).toContain('2 attempts of key "limited" started in the last 60000 ms (at most 2)');
    clock.advance(60_001);
    expect(await engine.continue("r3")).toMatchObject({ status: "completed", attempt: 1 });
    expect(calls).toEqual(["r1", "r2", "r3"]);
    await engine.close();
  });

  it("priority: among runs waiting for their turn, a worker takes the highest first", async () => {
    const gates = new Gates();
    const ranked = defineWorkflow({
      name: "ranked",
      concurrency: { limit: 1 },
      priority: (args: { p: number }) => args.p,
      async run(ctx) {
        await ctx.step("work", async () => {
          gates.enter("all", ctx.runId);
          await gates.wait(ctx.runId);
          gates.leave("all");
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [ranked] });
    const blocker = engine.start(ranked, { p: 0 }, { id: "blocker" });
    await until(() => gates.order.includes("blocker"));
    for (const [id, p] of [
      ["low", 1],
      ["high", 9],
      ["mid", 5],
    ] as const)
      expect((await engine.start(ranked, { p }, { id })).status).toBe("waiting");
    // start's own priority wins over the workflow's.
    expect((await engine.start(ranked, { p: 0 }, { id: "top", priority: 100 })).status).toBe("waiting");
    expect((await engine.get("top")).status).toBe("waiting");
    gates.let("*");
    await blocker;
    const worker = work(engine, 1);
    await until(async () => (await engine.list({ workflow: "ranked", status: "completed" })).length === 5);
    await worker.stop();
    expect(gates.order).toEqual(["blocker", "top", "high", "mid", "low"]);
    await engine.close();
  });

  it("dedupeKey: a second start while the first run has not ended gets that run; once it has ended, a new run", async () => {
    let calls = 0;
    const hook = defineWorkflow({
      name: "hook",
      async run(ctx, body: { n: number }) {
        const got = await ctx.waitForEvent("ok");
        await ctx.step("handle", () => calls++);
        return { n: body.n, got };
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [hook] });
    const first = await engine.start(hook, { n: 1 }, { dedupeKey: "evt-7" });
    expect(first.status).toBe("waiting");
    // Other args, no id: the same run, nothing new recorded.
    const again = await engine.start(hook, { n: 2 }, { dedupeKey: "evt-7" });
    expect(again).toMatchObject({ id: first.id, status: "waiting", attached: true });
    expect(first).not.toHaveProperty("attached");
    expect(await engine.list({ workflow: "hook" })).toHaveLength(1);
    // Keys are per workflow's runs; another key is another run.
    const other = await engine.start(hook, { n: 3 }, { dedupeKey: "evt-8" });
    expect(other.id).not.toBe(first.id);
    await engine.send(first.id, "ok", "yes");
    expect(await engine.continue(first.id)).toMatchObject({ status: "completed", value: { n: 1, got: "yes" } });
    const after = await engine.start(hook, { n: 4 }, { dedupeKey: "evt-7" });
    expect(after.id).not.toBe(first.id);
    expect(await engine.list({ workflow: "hook" })).toHaveLength(3);
    expect(calls).toBe(1);
    await engine.close();
  });

  it("bad definitions and options are refused before anything is written", async () => {
    const bad = (extra: Record<string, unknown>) => () => defineWorkflow({ name: "bad", ...extra, run: async () => 1 } as never);
    expect(bad({ concurrency: { limit: 0 } })).toThrow(/concurrency.limit must be a whole number ≥ 1, got 0/);
    expect(bad({ concurrency: { limit: 1, key: "user" } })).toThrow(/concurrency.key must be a function/);
    expect(bad({ concurrency: { limit: 1, keys: () => "x" } })).toThrow(/INVALID_OPTION|unknown|keys/);
    expect(bad({ rateLimit: { limit: 5 } })).toThrow(/rateLimit.periodMs must be a whole number/);
    expect(bad({ priority: 1.5 })).toThrow(/priority must be a whole number/);
    const keyed = defineWorkflow({
      name: "keyed",
      concurrency: { limit: 1, key: (args: { user?: string }) => args.user as string },
      run: async () => 1,
    });
    const engine = createEngine({ store: makeStore(), workflows: [keyed] });
    await expect(engine.start(keyed, {}, { id: "k1" })).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringContaining("concurrency.key(args) must return a string"),
    });
    await expect(engine.start(keyed, { user: "u" }, { id: "k2", priority: 0.5 })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(engine.start(keyed, { user: "u" }, { id: "k3", dedupeKey: "" })).rejects.toMatchObject({ code: "INVALID_NAME" });
    expect(await engine.list({})).toEqual([]);
    await engine.close();
  });
});
