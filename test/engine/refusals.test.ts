// Refusals: bad input gets a clear, typed error and loses nothing.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createEngine, defineWorkflow, isSteplogError, SteplogError } from "../../src/entries/index.js";
import { STORES } from "../helpers/stores.js";

const ok = defineWorkflow({
  name: "ok",
  args: z.object({ n: z.number() }),
  async run(ctx, args) {
    return ctx.step("double", async () => args.n * 2);
  },
});

describe.each(STORES)("refusals (%s)", (_name, makeStore) => {
  it("continue of an id with no record: RUN_NOT_FOUND naming the store and what to type", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [ok] });
    const error = await engine.continue("nope").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SteplogError);
    expect(error).toMatchObject({ code: "RUN_NOT_FOUND", runId: "nope" });
    expect((error as Error).message).toContain(engine.store.location);
    expect((error as Error).message).toContain(`engine.start(workflow, args, { id: "nope" })`);
    await expect(engine.get("nope")).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
    expect(await engine.list()).toEqual([]);
  });

  it("start with an id that exists: RUN_EXISTS pointing to continue; the existing run is untouched", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [ok] });
    await engine.start(ok, { n: 1 }, { id: "r" });
    const error = await engine.start(ok, { n: 2 }, { id: "r" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "RUN_EXISTS", runId: "r" });
    expect((error as Error).message).toContain(`engine.continue("r")`);
    expect(await engine.get("r")).toMatchObject({ args: { n: 1 }, value: 2, attemptCount: 1 });
  });

  it("start with args the schema rejects: ARGS_REJECTED, nothing recorded", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [ok] });
    const error = await engine.start(ok, { n: "one" } as never, { id: "r" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ARGS_REJECTED" });
    expect((error as Error).message).toMatch(/n: .*number/i);
    expect(await engine.list()).toEqual([]);
  });

  it("invalid run ids are refused with INVALID_NAME saying what is allowed", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [ok] });
    for (const id of ["", "a\nb", "x".repeat(201), " padded", "rtl\u202emark", "arabic\u061cmark", "nul\u0000"]) {
      const error = await engine.start(ok, { n: 1 }, { id }).catch((e: unknown) => e);
      expect(error, JSON.stringify(id)).toMatchObject({ code: "INVALID_NAME" });
      expect((error as Error).message).toContain("1 to 200 characters");
    }
    // Quotes and SQL metacharacters are ordinary characters: stored and returned exactly.
    const odd = `it's "quoted"; DROP TABLE runs; --`;
    await engine.start(ok, { n: 1 }, { id: odd });
    expect((await engine.get(odd)).id).toBe(odd);
    expect(() => defineWorkflow({ name: "bad\tname", async run() {} })).toThrow(expect.objectContaining({ code: "INVALID_NAME" }));
  });

  it("continue of a run whose workflow is not registered: WORKFLOW_NOT_REGISTERED naming the registered ones", async () => {
    const store = makeStore();
    const engine = createEngine({ store, workflows: [ok] });
    const failing = defineWorkflow({
      name: "other",
      async run() {
        throw new Error("x");
      },
    });
    await engine.start(failing, undefined, { id: "r" });
    const fresh = createEngine({ store, workflows: [ok] });
    const error = await fresh.continue("r").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "WORKFLOW_NOT_REGISTERED", runId: "r" });
    expect((error as Error).message).toContain(`registered: "ok"`);
  });

  it("a second continue while an attempt holds the run: RUN_BUSY naming the holder; the running attempt is unaffected", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inStep = new Promise<void>((resolve) => (entered = resolve));
    let calls = 0;
    const slow = defineWorkflow({
      name: "slow",
      async run(ctx) {
        return ctx.step("wait", async () => {
          calls++;
          entered();
          await gate;
          return "done";
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [slow] });
    const running = engine.start(slow, undefined, { id: "r" });
    await inStep;
    const error = await engine.continue("r").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "RUN_BUSY", runId: "r" });
    expect((error as Error).message).toMatch(new RegExp(`attempt 1 \\(host .*, pid ${process.pid}\\)`));
    release();
    expect(await running).toMatchObject({ status: "completed", value: "done" });
    expect(calls).toBe(1);
    expect((await engine.get("r")).attemptCount).toBe(1);
  });

  it("two continues of one run at the same moment in one process: exactly one runs, the other gets RUN_BUSY", async () => {
    let calls = 0;
    let fail = true;
    const once = defineWorkflow({
      name: "once",
      async run(ctx) {
        return ctx.step("s", async () => {
          calls++;
          if (fail) throw new Error("first attempt fails");
          await new Promise((resolve) => setTimeout(resolve, 20));
          return "ok";
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [once] });
    await engine.start(once, undefined, { id: "r" });
    fail = false;
    const results = await Promise.allSettled([engine.continue("r"), engine.continue("r"), engine.continue("r")]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    expect(results.filter((r) => r.status === "rejected").map((r) => (r as PromiseRejectedResult).reason.code)).toEqual(["RUN_BUSY", "RUN_BUSY"]);
    expect(calls).toBe(2);
  });

  it("bad options are refused with INVALID_OPTION", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [ok] });
    await expect(engine.start(ok, { n: 1 }, { timeoutMs: -5 })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(engine.start(ok, { n: 1 }, { id: "s", source: {} as never })).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringContaining("source must be a string"),
    });
    await expect(engine.get("s")).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
    await engine.start(ok, { n: 1 }, { id: "r" });
    await expect(engine.continue("r", { values: 3 as never })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    expect(() => createEngine({ leaseMs: 0 })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    expect(() => defineWorkflow({ name: "w", maxAttempts: 0, async run() {} })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
  });

  it("a closed engine refuses further calls with ENGINE_CLOSED", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [ok] });
    await engine.close();
    await expect(engine.start(ok, { n: 1 })).rejects.toMatchObject({ code: "ENGINE_CLOSED" });
  });

  it("isSteplogError matches by code, whichever copy of the class made the error", () => {
    expect(isSteplogError({ code: "RUN_BUSY", message: "x" }, "RUN_BUSY")).toBe(true);
    expect(isSteplogError({ code: "ENOENT" })).toBe(false);
    expect(isSteplogError(new Error("x"))).toBe(false);
  });
});
