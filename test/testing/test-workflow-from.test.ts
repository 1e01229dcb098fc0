// testWorkflow({ from }): an exported run (engine.export) as the seed, so an incident becomes a
// unit test of the next attempt: its succeeded steps handed back, its cut-off and failed ones
// run (or mocked), its args the args; on every store the run can be exported from.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, encryptedCodec, isSteplogError, type RunExport, type Store } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { testWorkflow } from "../../src/entries/testing.js";
import { EVERY_STORE } from "../helpers/stores.js";

/** Reserve, charge, ship; ship fails while `failing.ship` is set. */
function orderWorkflow() {
  const failing = { ship: true };
  const workflow = defineWorkflow({
    name: "order",
    async run(ctx, args: { order: string }) {
      const reserved = await ctx.step("reserve", async () => ({ reserved: args.order }));
      const charged = await ctx.step("charge", async () => ({ charged: 42 }));
      const shipped = await ctx.step("ship", async () => {
        if (failing.ship) throw new Error("carrier down");
        return { shipped: args.order };
      });
      return { reserved, charged, shipped };
    },
  });
  return { workflow, failing };
}

async function incident(store: Store, options: { codec?: ReturnType<typeof encryptedCodec> } = {}): Promise<RunExport> {
  const { workflow } = orderWorkflow();
  const engine = createEngine({ store, workflows: [workflow], ...options });
  try {
    expect((await engine.start(workflow, { order: "o-7" }, { id: "incident-7" })).status).toBe("failed");
    return await engine.export("incident-7");
  } finally {
    await engine.close();
  }
}

describe.each(EVERY_STORE)("testWorkflow({ from }) (%s)", (_name, makeStore) => {
  it("seeds the exported run's records and args: the next attempt reuses what succeeded and runs the rest", async () => {
    const doc = await incident(makeStore());
    const { workflow } = orderWorkflow();
    const result = await testWorkflow(workflow, { from: doc, mocks: { ship: () => ({ shipped: "mocked" }) } });
    expect(result.status).toBe("completed");
    expect(result.reused).toEqual(["reserve", "charge"]);
    expect(result.ran).toEqual(["ship"]);
    expect(result.calls("reserve")).toBe(0);
    expect(result.value).toEqual({ reserved: { reserved: "o-7" }, charged: { charged: 42 }, shipped: { shipped: "mocked" } });
    expect(result.run.id).toBe("incident-7");
    expect(result.run.args).toEqual({ order: "o-7" });
    expect(result.run.attempts.map((a) => [a.number, a.ending])).toEqual([
      [1, "failed"],
      [2, "completed"],
    ]);
  });

  it("seeds the exported run's streams: the next attempt's redone step resets its chunks, and an engine on the test's store reads them", async () => {
    const failing = { check: true };
    const chat = defineWorkflow({
      name: "chat",
      async run(ctx) {
        const answer = ctx.stream("answer");
        await ctx.step("draft", async (info) => answer.write(`draft ${info.attempt}`));
        await ctx.step("check", async () => {
          if (failing.check) throw new Error("bad draft");
        });
        answer.close();
        return "ok";
      },
    });
    const source = createEngine({ store: makeStore(), workflows: [chat] });
    expect((await source.start(chat, undefined, { id: "chat-1" })).status).toBe("failed");
    const doc = await source.export("chat-1");
    await source.close();
    failing.check = false;
    const store = memoryStore();
    const result = await testWorkflow(chat, { from: doc, store, fromStep: "draft" });
    expect(result.status).toBe("completed");
    const reader = createEngine({ store });
    const items = [];
    for await (const item of reader.readStream("chat-1", "answer", { after: 0 })) items.push(item);
    expect(items).toEqual([
      { type: "reset", offset: 0, seq: 1 },
      { type: "chunk", offset: 0, chunk: "draft 2", seq: 2 },
    ]);
    await reader.close();
  });
});

describe("testWorkflow({ from })", () => {
  it("a step the incident cut off (intended, no outcome) is settled by its policy in the attempt under test", async () => {
    const { workflow } = orderWorkflow();
    const doc = await incident(memoryStore());
    // As a crash leaves it: the run running, its attempt with no ending, ship intended.
    const cut: RunExport = {
      ...doc,
      run: { ...doc.run, status: "running", error: null },
      attempts: doc.attempts.map((a) => ({ ...a, ending: null, endedAt: null, error: null })),
      steps: doc.steps.map((s) => (s.key === "ship" ? { ...s, status: "intended", error: null, endedAt: null, calls: 0, resolution: null } : s)),
    };
    const result = await testWorkflow(workflow, { from: cut, mocks: { ship: () => ({ shipped: "again" }) } });
    expect(result.status).toBe("completed");
    expect(result.reused).toEqual(["reserve", "charge"]);
    expect(result.ran).toEqual(["ship"]);
  });

  it("a dead-lettered run is seeded failed, its attempt budget unused: the attempt under test is judged alone", async () => {
    const doc = await incident(memoryStore());
    const { workflow } = orderWorkflow();
    const dead: RunExport = { ...doc, run: { ...doc.run, status: "dead-lettered", budgetUsed: 99 } };
    const result = await testWorkflow(workflow, { from: dead, mocks: { ship: () => ({ shipped: "at last" }) } });
    expect(result.status).toBe("completed");
  });

  it("a sealed export is read with the codec given", async () => {
    const codec = encryptedCodec({ keys: { k1: Buffer.alloc(32, 3).toString("base64") }, current: "k1" });
    const doc = await incident(memoryStore(), { codec });
    expect(doc.run.args).toMatch(/^enc:v1:k1:/);
    const { workflow } = orderWorkflow();
    const refused = await testWorkflow(workflow, { from: doc }).catch((e: unknown) => e);
    expect(isSteplogError(refused, "CODEC_KEY_MISSING"), String(refused)).toBe(true);
    const result = await testWorkflow(workflow, { from: doc, codec, mocks: { ship: () => ({ shipped: "sealed" }) } });
    expect(result.ran).toEqual(["ship"]);
  });

  it("refuses args, earlier or runId beside from, a run of another workflow, and a document it cannot import", async () => {
    const doc = await incident(memoryStore());
    const { workflow } = orderWorkflow();
    const code = async (p: Promise<unknown>) => (await p.catch((e: unknown) => e)) as { code?: string; message: string };
    const both = await code(testWorkflow(workflow, { from: doc, args: { order: "x" } } as never));
    expect(both.code).toBe("INVALID_OPTION");
    expect(both.message).toContain("args is not given with from");
    expect((await code(testWorkflow(workflow, { from: doc, earlier: { steps: {} }, runId: "r" }))).message).toContain("earlier, runId are not given with from");
    const other = defineWorkflow({ name: "other", run: async () => 1 });
    expect((await code(testWorkflow(other, { from: doc }))).message).toContain('of workflow "order", not of "other"');
    const redacted = await code(testWorkflow(workflow, { from: { ...doc, redacted: true } }));
    expect(redacted.code).toBe("IMPORT_INVALID");
  });
});
