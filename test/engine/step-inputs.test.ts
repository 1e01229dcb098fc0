// DESIGN.md, "A step's input: what it acts on": ctx.step(name, { input }, fn) records the input
// with the intent (encoded, bounded, sealed by the codec) with a digest, and a continue that
// reaches a settled record made for another input stops before it (STEP_INPUT_CHANGED) unless
// told `redo` or `reuse`, or the workflow's onInputChange is "redo".
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, encryptedCodec, type StepInfo } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { testWorkflow } from "../../src/entries/testing.js";
import { STORES } from "../helpers/stores.js";
import { Payloads } from "../../src/payloads/payloads.js";
import type { StoredRun } from "../../src/store/types.js";
import { tmpDb } from "../helpers/tmp.js";

/** A loop of same-named steps over a list the test changes between attempts; the last step fails while `failing`. */
function greeter(onInputChange?: "stop" | "redo") {
  const state = { list: ["ann", "bob", "cy"], failing: true, calls: [] as string[] };
  const workflow = defineWorkflow({
    name: "greeter",
    ...(onInputChange ? { onInputChange } : {}),
    async run(ctx) {
      const greetings: string[] = [];
      for (const who of state.list) {
        greetings.push(
          await ctx.step("greet", { input: { who } }, async (info) => {
            const { who: named } = info.input as { who: string };
            state.calls.push(named);
            return `hello ${named}`;
          }),
        );
      }
      await ctx.step("send", async () => {
        if (state.failing) throw new Error("mail server down");
      });
      return greetings;
    },
  });
  return { workflow, state };
}

describe.each(STORES)("a step's input (%s)", (_name, makeStore) => {
  it("is given to the function as info.input, recorded with a digest, and shown by get(id)", async () => {
    const seen: unknown[] = [];
    const workflow = defineWorkflow({
      name: "inputs",
      async run(ctx) {
        await ctx.step("plain", async (info: StepInfo) => seen.push("input" in info));
        await ctx.step("bill", { input: 12n }, async (info) => seen.push(info.input));
        return ctx.step("charge", { input: { user: "u1", amount: 12 } }, async (info) => (seen.push(info.input), "charged"));
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "completed", value: "charged" });
    expect(seen).toEqual([false, 12n, { user: "u1", amount: 12 }]);
    const [plain, bill, charge] = (await engine.get("r")).steps;
    expect(bill!.input).toBe(12n);
    expect(plain).not.toHaveProperty("input");
    expect(plain).not.toHaveProperty("inputDigest");
    expect(plain).not.toHaveProperty("resolution");
    expect(charge!.input).toEqual({ user: "u1", amount: 12 });
    // Without a codec: the SHA-256 of the input's encoding (plain JSON here; tagged JSON for what JSON lacks, as a value is encoded).
    expect(charge!.inputDigest).toBe(`sha256:${createHash("sha256").update('{"user":"u1","amount":12}').digest("hex")}`);
    expect(charge).not.toHaveProperty("resolution");
    await engine.close();
  });

  it("a step retried within its attempt keeps its input beside its calls' errors", async () => {
    let calls = 0;
    const workflow = defineWorkflow({
      name: "retried-input",
      async run(ctx) {
        await ctx.step("first", { input: { n: 1 } }, async () => "ok");
        return ctx.step("flaky", { input: { n: 2 }, retry: { maxAttempts: 2, backoffMs: 1 } }, async (info) => {
          if (++calls === 1) throw new Error("try again");
          return info.input;
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "completed", value: { n: 2 } });
    const [first, flaky] = (await engine.get("r")).steps;
    expect(first).toMatchObject({ input: { n: 1 }, status: "succeeded" });
    expect(flaky).toMatchObject({ input: { n: 2 }, status: "succeeded", calls: 2, callErrors: [{ call: 1, error: { message: "try again" } }] });
    expect(flaky!.inputDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    await engine.close();
  });

  it("over maxValueBytes: VALUE_TOO_LARGE naming it the step's input, before the function is called", async () => {
    let called = false;
    const workflow = defineWorkflow({
      name: "big-input",
      async run(ctx) {
        await ctx.step("upload", { input: "x".repeat(2_000) }, async () => (called = true));
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow], maxValueBytes: 1_000 });
    const result = await engine.start(workflow, undefined, { id: "r" });
    expect(result).toMatchObject({ status: "failed", error: { code: "VALUE_TOO_LARGE" } });
    expect(result.error!.message).toContain(`The input of step "upload"`);
    expect(called).toBe(false);
    await engine.close();
  });

  it("a loop over a list reordered between attempts stops before the first step whose input changed, naming both inputs and the ways on", async () => {
    const { workflow, state } = greeter();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect((await engine.start(workflow, undefined, { id: "g" })).status).toBe("failed");
    state.list = ["bob", "ann", "cy"];
    state.failing = false;
    const stopped = await engine.continue("g");
    expect(stopped).toMatchObject({ status: "stopped", error: { code: "STEP_INPUT_CHANGED", step: "greet" } });
    const message = stopped.error!.message;
    expect(message).toContain(`recorded: {"who":"ann"}; now: {"who":"bob"}`);
    expect(message).toContain(`engine.continue("g", { redo: ["greet"] })`);
    expect(message).toContain(`engine.continue("g", { reuse: ["greet"] })`);
    expect(message).toContain("--redo greet");
    expect(message).toContain("--reuse greet");
    // Nothing was handed back for the wrong item, and no function was called.
    expect(state.calls).toEqual(["ann", "bob", "cy"]);
    await engine.close();
  });

  it("redo: the step runs with the new input (a start point), and what follows runs anew", async () => {
    const { workflow, state } = greeter();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "g" });
    state.list = ["bob", "ann", "cy"];
    state.failing = false;
    const redone = await engine.continue("g", { redo: ["greet"] });
    expect(redone).toMatchObject({ status: "completed", value: ["hello bob", "hello ann", "hello cy"] });
    expect(state.calls).toEqual(["ann", "bob", "cy", "bob", "ann", "cy"]);
    const greets = (await engine.get("g")).steps.filter((s) => s.name === "greet" && s.attempt === 2);
    expect(greets.map((s) => s.input)).toEqual([{ who: "bob" }, { who: "ann" }, { who: "cy" }]);
    // Run for another input than its record's: a key of its own, so a service deduplicating on keys acts on the new input.
    expect(greets.map((s) => s.idempotencyKey)).toEqual([
      expect.stringMatching(/^g:greet:input-[0-9a-f]{12}$/),
      // After the start point every step runs anew; one whose input changed gets a key of its own too.
      expect.stringMatching(/^g:greet#2:input-[0-9a-f]{12}$/),
      "g:greet#3",
    ]);
    await engine.close();
  });

  it("reuse: the records are handed back as they are, for the steps named", async () => {
    const { workflow, state } = greeter();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "g" });
    state.list = ["bob", "ann", "cy"];
    state.failing = false;
    const reused = await engine.continue("g", { reuse: ["greet", "greet#2"] });
    expect(reused).toMatchObject({ status: "completed", value: ["hello ann", "hello bob", "hello cy"] });
    expect(state.calls).toEqual(["ann", "bob", "cy"]);
    await engine.close();
  });

  it("an unchanged input, and a step given an input only now (its record has none), are handed back as before", async () => {
    const { workflow, state } = greeter();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "g" });
    state.failing = false;
    expect(await engine.continue("g")).toMatchObject({ status: "completed", value: ["hello ann", "hello bob", "hello cy"] });
    expect(state.calls).toEqual(["ann", "bob", "cy"]);
    await engine.close();
  });

  it("a value given by hand (continue { values }) records no input, and the next continue hands it back whatever the input", async () => {
    const state = { added: false, failing: true, amount: 1, calls: 0 };
    const workflow = defineWorkflow({
      name: "given",
      async run(ctx) {
        await ctx.step("a", async () => "a");
        // A step added since the first attempt, given an input.
        const b = state.added ? await ctx.step("b", { input: { amount: state.amount } }, async () => (state.calls++, "ran")) : undefined;
        await ctx.step("c", async () => {
          if (state.failing) throw new Error("later failure");
        });
        return b;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "v" });
    state.added = true;
    expect(await engine.continue("v", { fromStep: "c", values: { b: "given" } })).toMatchObject({ status: "failed" });
    const b = (await engine.get("v")).steps.find((s) => s.key === "b")!;
    expect(b).toMatchObject({ status: "succeeded", value: "given", resolution: { policy: "supplied" } });
    expect(b).not.toHaveProperty("input");
    expect(b).not.toHaveProperty("inputDigest");
    state.amount = 2;
    state.failing = false;
    expect(await engine.continue("v")).toMatchObject({ status: "completed", value: "given" });
    expect(state.calls).toBe(0);
    await engine.close();
  });

  it('onInputChange "redo": a changed step runs again with its new input, without being told', async () => {
    const { workflow, state } = greeter("redo");
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "g" });
    state.list = ["ann", "dee", "cy"];
    state.failing = false;
    expect(await engine.continue("g")).toMatchObject({ status: "completed", value: ["hello ann", "hello dee", "hello cy"] });
    expect(state.calls).toEqual(["ann", "bob", "cy", "dee", "cy"]);
    await engine.close();
  });

  it('onInputChange "redo" of a succeeded irreversible step still needs consent (REDO_IRREVERSIBLE)', async () => {
    let to = "ann@example.com";
    let failing = true;
    const sent: string[] = [];
    const workflow = defineWorkflow({
      name: "mailer",
      onInputChange: "redo",
      async run(ctx) {
        await ctx.step("email", { effect: "irreversible", input: { to } }, async () => sent.push(to));
        await ctx.step("after", async () => {
          if (failing) throw new Error("later failure");
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "m" });
    to = "bob@example.com";
    failing = false;
    expect(await engine.continue("m")).toMatchObject({ status: "stopped", error: { code: "REDO_IRREVERSIBLE", step: "email" } });
    expect(await engine.continue("m", { redo: ["email"] })).toMatchObject({ status: "completed" });
    expect(sent).toEqual(["ann@example.com", "bob@example.com"]);
    await engine.close();
  });

  it("fromStep before a succeeded irreversible step whose input changed: REDO_IRREVERSIBLE first, naming both inputs; reuse then redoes what follows", async () => {
    let amount = 10;
    const charged: number[] = [];
    const receipts: string[] = [];
    const workflow = defineWorkflow({
      name: "checkout",
      async run(ctx) {
        const price = await ctx.step("price", async () => amount);
        const charge = await ctx.step("charge", { effect: "irreversible", input: { amount: price } }, async () => (charged.push(price), `ch-${price}`));
        return ctx.step("receipt", async () => (receipts.push(`${charge} for ${price}`), `${charge} for ${price}`));
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "c" })).toMatchObject({ status: "completed", value: "ch-10 for 10" });
    amount = 20;
    // Both apply: the step would run again (irreversible) and its record was made for another input.
    const stopped = await engine.continue("c", { fromStep: "price" });
    expect(stopped).toMatchObject({ status: "stopped", error: { code: "REDO_IRREVERSIBLE", step: "charge" } });
    const message = stopped.error!.message;
    expect(message).toContain('recorded: {"amount":10}; now: {"amount":20}');
    expect(message).toContain("reuse hands back what was done for the recorded input");
    expect(message).toContain('engine.continue("c", { redo: ["charge"] })');
    expect(charged).toEqual([10]);
    // reuse: the old charge is kept, and the step after it runs again (the stop carried the start point).
    expect(await engine.continue("c", { reuse: ["charge"] })).toMatchObject({ status: "completed", value: "ch-10 for 20" });
    expect(charged).toEqual([10]);
    expect(receipts).toEqual(["ch-10 for 10", "ch-10 for 20"]);
    await engine.close();
  });

  it("a succeeded irreversible step before the start point whose input changed: STEP_INPUT_CHANGED, saying a redo does its effect again", async () => {
    let amount = 10;
    let failing = true;
    const charged: number[] = [];
    const workflow = defineWorkflow({
      name: "pay",
      async run(ctx) {
        await ctx.step("charge", { effect: "irreversible", input: { amount } }, async () => charged.push(amount));
        await ctx.step("ship", async () => {
          if (failing) throw new Error("courier down");
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "p" })).toMatchObject({ status: "failed" });
    amount = 20;
    failing = false;
    const stopped = await engine.continue("p");
    expect(stopped).toMatchObject({ status: "stopped", error: { code: "STEP_INPUT_CHANGED", step: "charge" } });
    expect(stopped.error!.message).toContain("It is irreversible and its effect happened: a redo does it again, for the new input.");
    expect(await engine.continue("p", { reuse: ["charge"] })).toMatchObject({ status: "completed" });
    expect(charged).toEqual([10]);
    await engine.close();
  });
});

describe("a sealed input", () => {
  const keys = { k1: Buffer.alloc(32, 7) };

  it("is absent from the SQLite file's bytes, and its digest is keyed (not the SHA-256 of its text)", async () => {
    const path = tmpDb();
    const secret = "card-4111-1111-1111-1111";
    const workflow = defineWorkflow({
      name: "sealed",
      async run(ctx) {
        return ctx.step("charge", { input: { card: secret } }, async (info) => (info.input as { card: string }).card.slice(-4));
      },
    });
    const engine = createEngine({ store: sqliteStore({ path }), workflows: [workflow], codec: encryptedCodec({ keys, current: "k1" }) });
    expect(await engine.start(workflow, undefined, { id: "s" })).toMatchObject({ status: "completed", value: "1111" });
    const [charge] = (await engine.get("s")).steps;
    expect(charge!.input).toEqual({ card: secret });
    expect(charge!.inputDigest).toMatch(/^hmac-sha256:k1:[0-9a-f]{64}$/);
    const plainDigest = createHash("sha256")
      .update(JSON.stringify({ card: secret }))
      .digest("hex");
    expect(charge!.inputDigest).not.toContain(plainDigest);
    await engine.close();
    const bytes = Buffer.concat([readFileSync(path), ...["-wal"].flatMap((ext) => (exists(path + ext) ? [readFileSync(path + ext)] : []))]);
    expect(bytes.includes(Buffer.from("4111"))).toBe(false);
    expect(bytes.includes(Buffer.from(plainDigest))).toBe(false);
    expect(bytes.includes(Buffer.from("hmac-sha256:k1:"))).toBe(true);
  });

  it("a step whose input alone is sealed with a key this engine lacks: the run is named as holding it (CODEC_KEY_MISSING before a claim)", () => {
    const sealed = encryptedCodec({ keys, current: "k1" }).encode('{"card":"4111"}') as string;
    const step = { key: "charge", value: null, error: null, resolution: JSON.stringify({ input: sealed, inputDigest: "hmac-sha256:k1:00" }) };
    const stored = { run: { id: "s", args: "null" }, steps: [step], events: [] } as unknown as StoredRun;
    const other = new Payloads(1_000, encryptedCodec({ keys: { k2: Buffer.alloc(32, 9) }, current: "k2" }));
    expect(other.sealedBeyond(stored)).toMatchObject({ code: "CODEC_KEY_MISSING", step: "charge" });
    expect(new Payloads(1_000, encryptedCodec({ keys, current: "k1" })).sealedBeyond(stored)).toBeUndefined();
    // The args are plain and the step has no value or error: only its input is sealed.
  });

  it("a changed sealed input is caught, its recorded preview opened with the key", async () => {
    let card = "4111";
    let failing = true;
    const workflow = defineWorkflow({
      name: "sealed-change",
      async run(ctx) {
        await ctx.step("charge", { input: { card } }, async () => "ok");
        await ctx.step("after", async () => {
          if (failing) throw new Error("later failure");
        });
      },
    });
    const engine = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [workflow], codec: encryptedCodec({ keys, current: "k1" }) });
    await engine.start(workflow, undefined, { id: "s" });
    card = "5500";
    failing = false;
    const stopped = await engine.continue("s");
    expect(stopped).toMatchObject({ status: "stopped", error: { code: "STEP_INPUT_CHANGED", step: "charge" } });
    expect(stopped.error!.message).toContain(`recorded: {"card":"4111"}; now: {"card":"5500"}`);
    await engine.close();
  });
});

describe("a step's input in an export", () => {
  it("is carried by engine.export and engine.import (format version 1): the imported run still catches a changed input", async () => {
    const { workflow, state } = greeter();
    const from = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [workflow] });
    await from.start(workflow, undefined, { id: "g" });
    const doc = await from.export("g");
    expect(doc.version).toBe(1);
    await from.close();
    const to = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [workflow] });
    await to.import(doc);
    expect((await to.get("g")).steps.filter((s) => s.name === "greet").map((s) => s.input)).toEqual([{ who: "ann" }, { who: "bob" }, { who: "cy" }]);
    state.list = ["cy"];
    state.failing = false;
    expect(await to.continue("g")).toMatchObject({ status: "stopped", error: { code: "STEP_INPUT_CHANGED", step: "greet" } });
    await to.close();
  });

  it("a redacted export writes the input plain and redacted, without its digest", async () => {
    const workflow = defineWorkflow({
      name: "secretive",
      async run(ctx) {
        await ctx.step("login", { input: { user: "ann", token: "s3cret" } }, async () => "ok");
      },
    });
    const engine = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [workflow], redact: ["token"] });
    await engine.start(workflow, undefined, { id: "r" });
    const doc = await engine.export("r", { redact: true });
    const text = JSON.stringify(doc);
    expect(text).not.toContain("s3cret");
    expect(text).toContain("ann");
    expect(text).not.toContain("inputDigest");
    await engine.close();
  });
});

describe("testWorkflow earlier.inputs", () => {
  function charger(seen: unknown[]) {
    return defineWorkflow({
      name: "charger",
      async run(ctx, args: { amount: number }) {
        return ctx.step(
          "charge",
          {
            input: { amount: args.amount },
            effect: "irreversible",
            query: (info) => (seen.push(["query", info.input]), { done: true, value: `found for ${JSON.stringify(info.input)}` }),
          },
          async (info) => (seen.push(["fn", info.input]), "charged"),
        );
      },
    });
  }

  it("seeds a settled record's input: the same input is handed back, another stops the attempt", async () => {
    const seen: unknown[] = [];
    const same = await testWorkflow(charger(seen), { args: { amount: 5 }, earlier: { steps: { charge: "old" }, inputs: { charge: { amount: 5 } } } });
    expect(same).toMatchObject({ status: "completed", value: "old", reused: ["charge"] });
    const other = await testWorkflow(charger(seen), { args: { amount: 7 }, earlier: { steps: { charge: "old" }, inputs: { charge: { amount: 5 } } } });
    expect(other).toMatchObject({ status: "stopped", error: { code: "STEP_INPUT_CHANGED", step: "charge" } });
    expect(seen).toEqual([]);
  });

  it("a cut-off row is settled by its policy for the recorded input, never the new one; then the change stops the attempt", async () => {
    const seen: unknown[] = [];
    const run = await testWorkflow(charger(seen), {
      args: { amount: 7 },
      earlier: { intended: ["charge"], effects: { charge: "irreversible" }, inputs: { charge: { amount: 5 } } },
    });
    expect(seen).toEqual([["query", { amount: 5 }]]);
    expect(run).toMatchObject({ status: "stopped", error: { code: "STEP_INPUT_CHANGED", step: "charge" } });
    const rows = run.steps.filter((s) => s.key === "charge");
    expect(rows.at(-1)).toMatchObject({ status: "succeeded", value: 'found for {"amount":5}', input: { amount: 5 } });
  });

  it("an input seeded for a step it does not seed is refused", async () => {
    await expect(testWorkflow(charger([]), { args: { amount: 5 }, earlier: { steps: {}, inputs: { charge: 1 } } })).rejects.toMatchObject({
      code: "INVALID_OPTION",
    });
  });
});

function exists(path: string): boolean {
  try {
    readFileSync(path);
    return true;
  } catch {
    return false;
  }
}
