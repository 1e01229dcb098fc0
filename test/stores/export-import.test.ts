// engine.export and engine.import through the public API, on every store: the document, a round
// trip, a run taken from one store to another and continued there (reusing what succeeded), and
// each refusal writing nothing.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, encryptedCodec, isSteplogError, type RunExport, type Store } from "../../src/entries/index.js";
import { jsonlStore } from "../../src/entries/jsonl.js";
import { memoryStore } from "../../src/entries/memory.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { EVERY_STORE } from "../helpers/stores.js";
import { PG_URL, pgStore } from "../helpers/pg.js";
import { tmpDb } from "../helpers/tmp.js";
import { attemptRow, runRow, stepRow } from "../../src/testing/conformance-rows.js";

/** A workflow of three steps whose third fails while `failing.c` is set; `ran` lists each call. */
function orderWorkflow() {
  const ran: string[] = [];
  const failing = { c: true };
  const workflow = defineWorkflow({
    name: "order",
    async run(ctx, args: { order: string }) {
      const a = await ctx.step("reserve", async () => {
        ran.push("reserve");
        return { reserved: args.order };
      });
      const b = await ctx.step("charge", async () => {
        ran.push("charge");
        return { charged: 42 };
      });
      const c = await ctx.step("ship", async () => {
        ran.push("ship");
        if (failing.c) throw new Error("carrier down");
        return { shipped: true };
      });
      return { a, b, c };
    },
  });
  return { workflow, ran, failing };
}

/** A failed run of `order` in `store`: reserve and charge succeeded, ship failed. */
async function failedRun(store: Store, id = "incident-1") {
  const { workflow, ran } = orderWorkflow();
  const engine = createEngine({ store, workflows: [workflow] });
  const result = await engine.start(workflow, { order: "o-7" }, { id });
  expect(result.status).toBe("failed");
  expect(ran).toEqual(["reserve", "charge", "ship"]);
  return engine;
}

/** The engine's import, refused with this code (and nothing else). */
async function refused(promise: Promise<unknown>, code: string): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isSteplogError(error), `expected a SteplogError ${code}, got ${String(error)}`).toBe(true);
  expect((error as { code: string }).code).toBe(code);
  return error as Error;
}

describe.each(EVERY_STORE)("export and import (%s)", (_name, makeStore) => {
  it("export: one versioned document of every row the run owns, values as stored; RUN_NOT_FOUND as get gives it", async () => {
    const engine = await failedRun(makeStore());
    const doc = await engine.export("incident-1");
    expect(doc.format).toBe("steplog-run");
    expect(doc.version).toBe(1);
    expect(doc.redacted).toBeUndefined();
    expect(doc.children).toBeUndefined();
    expect(doc.run).toMatchObject({ id: "incident-1", workflow: "order", status: "failed", args: '{"order":"o-7"}', attempts: 1 });
    expect(doc.attempts.map((a) => [a.number, a.ending])).toEqual([[1, "failed"]]);
    expect(doc.steps.map((s) => [s.seq, s.key, s.status, s.value])).toEqual([
      [1, "reserve", "succeeded", '{"reserved":"o-7"}'],
      [2, "charge", "succeeded", '{"charged":42}'],
      [3, "ship", "failed", null],
    ]);
    expect(doc.events).toEqual([]);
    // JSON all the way: what is written to a file is the document.
    expect(JSON.parse(JSON.stringify(doc))).toEqual(doc);
    const notFound = await refused(engine.export("no-such-run"), "RUN_NOT_FOUND");
    const fromGet = await refused(engine.get("no-such-run"), "RUN_NOT_FOUND");
    expect(notFound.message).toBe(fromGet.message);
    await engine.close();
  });

  it("import into a fresh store, then export there: the same document; the run reads as it did", async () => {
    const source = await failedRun(makeStore());
    const doc = await source.export("incident-1");
    const { workflow } = orderWorkflow();
    const target = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await target.import(JSON.parse(JSON.stringify(doc)) as RunExport)).toEqual({ id: "incident-1", runs: ["incident-1"] });
    expect(await target.export("incident-1")).toEqual(doc);
    const [before, after] = [await source.get("incident-1"), await target.get("incident-1")];
    expect(after).toEqual(before);
    await source.close();
    await target.close();
  });

  it("a continue of the imported run reuses its succeeded steps and runs only the rest", async () => {
    const source = await failedRun(makeStore());
    const doc = await source.export("incident-1");
    await source.close();
    const { workflow, ran, failing } = orderWorkflow();
    const target = createEngine({ store: makeStore(), workflows: [workflow] });
    await target.import(doc);
    failing.c = false;
    const result = await target.continue("incident-1");
    expect(result.status).toBe("completed");
    expect(result.value).toEqual({ a: { reserved: "o-7" }, b: { charged: 42 }, c: { shipped: true } });
    expect(ran).toEqual(["ship"]);
    const view = await target.get("incident-1");
    expect(view.attempts.map((a) => [a.number, a.ending, a.reused])).toEqual([
      [1, "failed", []],
      [2, "completed", ["reserve", "charge"]],
    ]);
    await target.close();
  });

  it("a run cut off inside an attempt is imported owned by nobody: it reads interrupted, and a continue takes it over", async () => {
    const store = makeStore();
    // As a crashed process leaves it: running, its attempt without an ending, a step intended.
    const lease = await store.createRun(
      runRow("cut", { workflow: "order", version: null, args: '{"order":"o-9"}', createdAt: Date.now() - 1000, updatedAt: Date.now() - 1000 }),
      attemptRow("cut", 1, { host: "prod-7", bootId: "another-boot", processStart: 1, startedAt: Date.now() - 1000 }),
      { expiresAt: Date.now() + 60_000, now: Date.now() - 1000 },
    );
    if ("exists" in lease) throw new Error("exists");
    await store.writeIntent(lease, stepRow("cut", 1, "reserve", { version: null, intendedAt: Date.now() - 900 }));
    await store.writeOutcome(lease, {
      seq: 1,
      status: "succeeded",
      value: '{"reserved":"o-9"}',
      error: null,
      endedAt: Date.now() - 800,
      calls: 1,
      resolution: null,
      usage: null,
    });
    await store.writeIntent(lease, stepRow("cut", 2, "charge", { version: null, intendedAt: Date.now() - 700 }));
    const { workflow, ran, failing } = orderWorkflow();
    failing.c = false;
    const source = createEngine({ store, workflows: [workflow] });
    // Held by a process elsewhere, its lease not yet run out: running, as far as this store can tell.
    expect((await source.get("cut")).status).toBe("running");
    const doc = await source.export("cut");
    await source.close();
    const target = createEngine({ store: makeStore(), workflows: [workflow] });
    await target.import(doc);
    expect((await target.get("cut")).status).toBe("interrupted");
    const result = await target.continue("cut");
    expect(result.status).toBe("completed");
    // The intended charge is redone by its policy (idempotent: run again), reserve handed back.
    expect(ran).toEqual(["charge", "ship"]);
    await target.close();
  });

  it("children: true exports the child runs (oldest first, theirs too); import writes them all", async () => {
    const leaf = defineWorkflow({ name: "leaf", run: async (ctx, n: number) => ctx.step("double", async () => n * 2) });
    const parent = defineWorkflow({
      name: "parent",
      async run(ctx) {
        const one = await ctx.child("one", leaf, 1, { id: "p-child-1" });
        const two = await ctx.child("two", leaf, 2, { id: "p-child-2" });
        return one + two;
      },
    });
    const source = createEngine({ store: makeStore(), workflows: [parent, leaf] });
    expect((await source.start(parent, undefined, { id: "p" })).value).toBe(6);
    const doc = await source.export("p", { children: true });
    expect(doc.children?.map((c) => [c.run.id, c.run.parent, c.steps.length])).toEqual([
      ["p-child-1", "p", 1],
      ["p-child-2", "p", 1],
    ]);
    expect(doc.children?.[0]?.children).toEqual([]);
    await source.close();
    const target = createEngine({ store: makeStore(), workflows: [parent, leaf] });
    expect(await target.import(doc)).toEqual({ id: "p", runs: ["p", "p-child-1", "p-child-2"] });
    expect((await target.get("p")).children.map((c) => c.id)).toEqual(["p-child-1", "p-child-2"]);
    expect(await target.export("p", { children: true })).toEqual(doc);
    await target.close();
  });

  it("refuses an id the store holds (IMPORT_RUN_EXISTS, naming it and what to type), writing nothing of the document", async () => {
    const leaf = defineWorkflow({ name: "leaf", run: async (ctx, n: number) => ctx.step("double", async () => n * 2) });
    const parent = defineWorkflow({
      name: "parent",
      run: async (ctx) => (await ctx.child("one", leaf, 1, { id: "q-child" })) + 1,
    });
    const source = createEngine({ store: makeStore(), workflows: [parent, leaf] });
    await source.start(parent, undefined, { id: "q" });
    const doc = await source.export("q", { children: true });
    await source.close();
    const target = createEngine({ store: makeStore(), workflows: [parent, leaf] });
    // The child's id is taken here: neither the parent nor the child is written.
    await target.start(leaf, 5, { id: "q-child" });
    const error = await refused(target.import(doc), "IMPORT_RUN_EXISTS");
    expect(error.message).toContain('Run "q-child" already exists');
    expect(error.message).toContain('engine.get("q-child")');
    expect(error.message).toContain("nothing of the document was written");
    await refused(target.get("q"), "RUN_NOT_FOUND");
    expect((await target.get("q-child")).args).toBe(5);
    await target.close();
  });

  it("refuses a document of another format or version, a redacted one, or one of the wrong shape (IMPORT_INVALID), writing nothing", async () => {
    const source = await failedRun(makeStore());
    const doc = await source.export("incident-1");
    const target = createEngine({ store: makeStore() });
    const cases: Array<[unknown, string, RegExp]> = [
      [{ ...doc, format: "temporal-history" }, "format", /format is "temporal-history"/],
      [{ ...doc, version: 2 }, "version", /version 2 of the run export format/],
      [await source.export("incident-1", { redact: true }), "redacted", /exported redacted/],
      [null, "shape", /null, not a run export/],
      [{ ...doc, steps: doc.steps.map((s, i) => (i === 1 ? { ...s, status: "maybe" } : s)) }, "shape", /steps\[1\]\.status must be one of/],
      [{ ...doc, steps: [doc.steps[1], doc.steps[0]] }, "shape", /not in seq order/],
      [{ ...doc, attempts: [{ ...doc.attempts[0], runId: "other" }] }, "shape", /runId is "other"/],
      [{ ...doc, run: { ...doc.run, extra: 1 } }, "shape", /field "extra"/],
      [{ ...doc, run: { ...doc.run, id: "" } }, "shape", /run id/],
    ];
    for (const [bad, reason, message] of cases) {
      const error = await refused(target.import(bad as RunExport), "IMPORT_INVALID");
      expect((error as { reason?: string }).reason).toBe(reason);
      expect(error.message).toMatch(message);
      expect(error.message).toContain("Nothing was written");
    }
    expect(await target.list()).toEqual([]);
    await source.close();
    await target.close();
  });
});

describe("import into a store without importRuns", () => {
  it("is refused with INVALID_OPTION naming the store, and nothing is written", async () => {
    const source = await failedRun(memoryStore());
    const doc = await source.export("incident-1");
    const inner = memoryStore({ name: "a store of my own" });
    // A store that leaves the optional importRuns out.
    const bare = new Proxy(inner, {
      get: (target, key) => {
        if (key === "importRuns") return undefined;
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const target = createEngine({ store: bare });
    const error = await refused(target.import(doc), "INVALID_OPTION");
    expect(error.message).toContain("a store of my own cannot import runs (it has no importRuns)");
    expect(await target.list()).toEqual([]);
    await source.close();
    await target.close();
  });
});

describe("export: sealed values and redaction", () => {
  const key = Buffer.alloc(32, 7).toString("base64");
  const codec = encryptedCodec({ keys: { k1: key }, current: "k1" });

  it("a sealed value stays sealed and the document holds no key; an engine with the key reads the imported run", async () => {
    const { workflow } = orderWorkflow();
    const source = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [workflow], codec });
    await source.start(workflow, { order: "secret-order" }, { id: "sealed" });
    const doc = await source.export("sealed");
    const text = JSON.stringify(doc);
    expect(doc.run.args).toMatch(/^enc:v1:k1:/);
    expect(text).not.toContain("secret-order");
    expect(text).not.toContain(key);
    await source.close();
    const without = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [workflow] });
    await without.import(doc);
    await refused(without.get("sealed"), "CODEC_KEY_MISSING");
    await without.close();
    const withKey = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [workflow], codec });
    await withKey.import(doc);
    expect((await withKey.get("sealed")).args).toEqual({ order: "secret-order" });
    await withKey.close();
  });

  it("redact: true decodes every value, applies the engine's rules, writes it plain and marks the document redacted", async () => {
    const { workflow } = orderWorkflow();
    const engine = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [workflow], codec, redact: ["order", "charged"] });
    await engine.start(workflow, { order: "secret-order" }, { id: "r" });
    const doc = await engine.export("r", { redact: true });
    expect(doc.redacted).toBe(true);
    expect(JSON.parse(doc.run.args)).toEqual({ order: "[redacted]" });
    expect(doc.steps.map((s) => s.value)).toEqual(['{"reserved":"o-7"}'.replace("o-7", "secret-order"), '{"charged":"[redacted]"}', null]);
    expect(doc.steps[2]!.error).toContain("carrier down");
    expect(JSON.stringify(doc)).not.toMatch(/enc:v1/);
    await engine.close();
  });
});

describe("export from one kind of store, import into another", () => {
  const pairs: Array<[string, string, () => Store, () => Store]> = [
    ["jsonl", "sqlite", () => jsonlStore({ path: tmpDb("steplog.jsonl") }), () => sqliteStore({ path: tmpDb() })],
    ...(PG_URL ? ([["sqlite", "postgres", () => sqliteStore({ path: tmpDb() }), pgStore]] as Array<[string, string, () => Store, () => Store]>) : []),
  ];
  if (!PG_URL) console.warn("export-import: sqlite → postgres skipped: set STEPLOG_PG_URL to include it");

  it.each(pairs)(
    "%s → %s: continue completes the run, reusing the succeeded steps; a round trip gives the same document",
    async (_from, _to, makeFrom, makeTo) => {
      const source = await failedRun(makeFrom());
      const doc = await source.export("incident-1");
      await source.close();
      const { workflow, ran, failing } = orderWorkflow();
      const target = createEngine({ store: makeTo(), workflows: [workflow] });
      await target.import(doc);
      expect(await target.export("incident-1")).toEqual(doc);
      failing.c = false;
      const result = await target.continue("incident-1");
      expect(result.status).toBe("completed");
      expect(ran).toEqual(["ship"]);
      await target.close();
    },
  );
});
