// Typos in options are refused (INVALID_OPTION, naming the key and the nearest valid one), never
// silently ignored: nothing is recorded and nothing runs.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { jsonlStore } from "../../src/entries/jsonl.js";
import { memoryStore } from "../../src/entries/memory.js";
import { postgresStore } from "../../src/entries/postgres.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { testWorkflow } from "../../src/entries/testing.js";
import { encryptedCodec } from "../../src/entries/index.js";
import { tmpDb } from "../helpers/tmp.js";

const refusal = (key: string, near?: string) => ({
  code: "INVALID_OPTION",
  message: expect.stringMatching(new RegExp(`unknown option "${key}"${near ? `; did you mean "${near}"\\?` : ""}`)),
});

describe("unknown option keys", () => {
  it("start, continue, send, get, list, cancel, approve, reject, resolve and work refuse them, and record nothing", async () => {
    let calls = 0;
    const workflow = defineWorkflow({
      name: "typos",
      async run(ctx) {
        await ctx.step("one", async () => calls++);
        await ctx.waitForEvent("go");
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    await expect(engine.start(workflow, undefined, { id: "t", timeout: 5000 } as never)).rejects.toMatchObject(refusal("timeout", "timeoutMs"));
    await expect(engine.get("t")).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
    expect(calls).toBe(0);
    await engine.start(workflow, undefined, { id: "t" });
    await expect(engine.continue("t", { fromstep: "one" } as never)).rejects.toMatchObject(refusal("fromstep", "fromStep"));
    await expect(engine.send("t", "go", 1, { dedupe: "k" } as never)).rejects.toMatchObject(refusal("dedupe"));
    await expect(engine.send("t", "go", 1, { kept: true } as never)).rejects.toMatchObject(refusal("kept", "keep"));
    expect((await engine.get("t")).status).toBe("waiting");
    await expect(engine.get("t", { redacted: true } as never)).rejects.toMatchObject(refusal("redacted", "redact"));
    await expect(engine.list({ state: "waiting" } as never)).rejects.toMatchObject(refusal("state", "status"));
    await expect(engine.cancel("t", { why: "x" } as never)).rejects.toMatchObject(refusal("why"));
    await expect(engine.approve("t", "one", { user: "ana" } as never)).rejects.toMatchObject(refusal("user"));
    await expect(engine.reject("t", "one", { reasons: "no" } as never)).rejects.toMatchObject(refusal("reasons", "reason"));
    await expect(engine.resolve("t", "one", { value: 1, who: "ana" } as never)).rejects.toMatchObject(refusal("who"));
    await expect(engine.work({ concurency: 2 } as never)).rejects.toMatchObject(refusal("concurency", "concurrency"));
    await expect(engine.continue("t", "one" as never)).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringContaining("the options must be an object, got string"),
    });
    expect((await engine.get("t")).attemptCount).toBe(1);
    await engine.close();
  });

  it("ctx.step, its retry and ctx.waitForEvent refuse them before anything is recorded", async () => {
    let calls = 0;
    const cases: Array<[string, (ctx: any) => Promise<unknown>, string, string | undefined]> = [
      ["step", (ctx) => ctx.step("s", { efect: "irreversible" }, async () => calls++), "efect", "effect"],
      ["retry", (ctx) => ctx.step("s", { retry: { attempts: 3 } }, async () => calls++), "attempts", "maxAttempts"],
      ["wait", (ctx) => ctx.waitForEvent("e", { timeout: 10 }), "timeout", "timeoutMs"],
    ];
    for (const [what, body, key, near] of cases) {
      const workflow = defineWorkflow({ name: `typo-${what}`, run: body });
      const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
      const result = await engine.start(workflow, undefined, { id: "r" });
      expect(result, what).toMatchObject({ status: "failed", error: refusal(key, near) });
      expect((await engine.get("r")).steps, what).toEqual([]);
      await engine.close();
    }
    expect(calls).toBe(0);
  });

  it("createEngine, defineWorkflow, encryptedCodec and every store factory refuse them at once", () => {
    expect(() => createEngine({ store: memoryStore(), leaseMS: 1000 } as never)).toThrow(expect.objectContaining(refusal("leaseMS", "leaseMs")));
    expect(() => defineWorkflow({ name: "w", maxAttempt: 3, async run() {} } as never)).toThrow(expect.objectContaining(refusal("maxAttempt", "maxAttempts")));
    expect(() => encryptedCodec({ keys: { k1: Buffer.alloc(32) }, current: "k1", rotate: true } as never)).toThrow(expect.objectContaining(refusal("rotate")));
    expect(() => memoryStore({ label: "x" } as never)).toThrow(expect.objectContaining(refusal("label")));
    expect(() => sqliteStore({ path: tmpDb(), durabilty: "process" } as never)).toThrow(expect.objectContaining(refusal("durabilty", "durability")));
    expect(() => jsonlStore({ path: tmpDb("x.jsonl"), lockStale: 5000 } as never)).toThrow(expect.objectContaining(refusal("lockStale", "lockStaleMs")));
    expect(() => postgresStore({ connectionString: "postgres://127.0.0.1/x", poolsize: 3 } as never)).toThrow(
      expect.objectContaining(refusal("poolsize", "poolSize")),
    );
  });
});

describe("testWorkflow refuses seeds and mocks that match no step entered", () => {
  const workflow = defineWorkflow({
    name: "plan-then-charge",
    async run(ctx) {
      const plan = await ctx.step("plan", async () => "real plan");
      return ctx.step("charge", { effect: "irreversible" }, async () => `charged for ${plan}`);
    },
  });

  it("a misspelt earlier.steps key: refused, naming it and the step it resembles (whose real function ran)", async () => {
    await expect(testWorkflow(workflow, { args: undefined, earlier: { steps: { palm: "seeded plan" } } })).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringMatching(/earlier\.steps names "palm", which the workflow never entered; did you mean "plan" \(its real function ran\)\?/),
    });
  });

  it("misspelt earlier.intended and mocks keys, and unknown option keys, are refused too", async () => {
    await expect(testWorkflow(workflow, { args: undefined, earlier: { steps: { plan: "p" }, intended: ["chrage"] } })).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringContaining(`earlier.intended names "chrage"`),
    });
    await expect(testWorkflow(workflow, { args: undefined, mocks: { charg: () => "mocked" } })).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringContaining(`mocks names "charg"`),
    });
    await expect(testWorkflow(workflow, { args: undefined, mock: {} } as never)).rejects.toMatchObject(refusal("mock", "mocks"));
    await expect(testWorkflow(workflow, { args: undefined, earlier: { step: {} } } as never)).rejects.toMatchObject(refusal("step", "steps"));
    await expect(testWorkflow(workflow, { args: undefined, earlier: { steps: { plan: "p" }, effects: { charge: "irreversible" } } })).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringContaining('earlier.effects names "charge"'),
    });
  });

  it("several keys that match no step: every one is named, in one refusal", async () => {
    const refused = testWorkflow(workflow, {
      args: undefined,
      earlier: { steps: { palm: "seeded plan", plam: "again" }, intended: ["chrage"] },
      mocks: { charg: () => "mocked", plan: () => "mocked plan" },
    });
    await expect(refused).rejects.toMatchObject({ code: "INVALID_OPTION" });
    const { message } = (await refused.catch((error: Error) => error)) as Error;
    for (const named of ['earlier.steps "palm"', 'earlier.steps "plam"', 'earlier.intended "chrage"', 'mocks "charg"']) expect(message).toContain(named);
    expect(message).toMatch(/^testWorkflow: 4 keys match no step the workflow entered: /);
    expect(message).toContain('Steps entered: "plan", "charge".');
  });

  it("a later occurrence of an entered name, past where the attempt stopped, is let be", async () => {
    const charges = defineWorkflow({
      name: "two-charges",
      async run(ctx) {
        for (const item of ["a", "b"]) await ctx.step("charge", { effect: "irreversible" }, async () => `charged ${item}`);
      },
    });
    const run = await testWorkflow(charges, {
      args: undefined,
      earlier: { intended: ["charge"], steps: { "charge#2": "charged b" }, effects: { charge: "irreversible" } },
    });
    expect(run).toMatchObject({ status: "escalated" });
  });

  it("seeds past where the attempt stopped, unlike any entered step, are let be", async () => {
    const stops = defineWorkflow({
      name: "stops-early",
      async run(ctx) {
        await ctx.step("check", async () => ctx.stop("not today"));
        await ctx.step("ship", async () => "shipped");
      },
    });
    const run = await testWorkflow(stops, { args: undefined, earlier: { steps: { ship: "shipped before" } } });
    expect(run).toMatchObject({ status: "stopped" });
  });
});
