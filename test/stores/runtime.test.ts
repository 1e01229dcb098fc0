// The runtime store wrapper: what an engine does with any store it is given (defaults for the
// optional members, one STORE_CLOSED guard, a rejection that is not an Error named), and the
// conformance suite's hooks for store authors (named skips, additional tests).
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { describeStore, type TestFunctions } from "../../src/entries/testing.js";
import { runtimeStore, STORE_DEFAULTS } from "../../src/store/runtime.js";
import type { Store } from "../../src/store/types.js";
import { withOverrides } from "../helpers/stores.js";

const twoSteps = defineWorkflow({
  name: "two-steps",
  async run(ctx) {
    const a = await ctx.step("a", () => 1);
    return ctx.step("b", () => a + 1);
  },
});

/** A store with only the members the contract requires: no storageId, no loadRunRow, no capability flags. */
function bareStore(): { store: Store; closes: () => number } {
  const inner = memoryStore();
  let closes = 0;
  const store: Store = {
    kind: "bare",
    location: "bare store in this test",
    createRun: (...a) => inner.createRun(...a),
    claimRun: (...a) => inner.claimRun(...a),
    updateRun: (...a) => inner.updateRun(...a),
    loadRun: (...a) => inner.loadRun(...a),
    listRuns: (...a) => inner.listRuns(...a),
    writeIntent: (...a) => inner.writeIntent(...a),
    writeOutcome: (...a) => inner.writeOutcome(...a),
    renewLease: (...a) => inner.renewLease(...a),
    endAttempt: (...a) => inner.endAttempt(...a),
    close: async () => void closes++,
  };
  return { store, closes: () => closes };
}

describe("the runtime store wrapper", () => {
  it("a store with only the required members runs, lists and continues workflows (defaults fill the rest)", async () => {
    const { store } = bareStore();
    const engine = createEngine({ store, workflows: [twoSteps] });
    expect(await engine.start(twoSteps, undefined, { id: "r" })).toMatchObject({ status: "completed", value: 2 });
    expect((await engine.list()).map((r) => r.id)).toEqual(["r"]);
    await expect(engine.continue("r")).rejects.toMatchObject({ code: "RUN_COMPLETED" });
    const runtime = runtimeStore(store);
    expect({ durable: runtime.durable, multiProcess: runtime.multiProcess, leaseAge: runtime.leaseAge }).toEqual(STORE_DEFAULTS);
    expect(await runtime.storageId()).toBe("bare store in this test");
    expect((await runtime.loadRunRow("r"))?.status).toBe("completed");
  });

  it("the built-in stores declare what they can do", () => {
    const memory = runtimeStore(memoryStore());
    expect([memory.durable, memory.multiProcess, memory.leaseAge]).toEqual([false, false, false]);
  });

  it("after close, every call is refused with STORE_CLOSED naming the store and the call; the store is closed once", async () => {
    const { store, closes } = bareStore();
    const first = createEngine({ store, workflows: [twoSteps] });
    await first.start(twoSteps, undefined, { id: "r" });
    await first.close();
    await first.close();
    // Another engine given the same store object shares its closed state.
    const second = createEngine({ store, workflows: [twoSteps] });
    const refused = await second.get("r").then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({ code: "STORE_CLOSED", name: "StoreClosedError" });
    expect((refused as Error).message).toContain("bare store in this test");
    expect((refused as Error).message).toContain("open a new store object");
    await expect(second.start(twoSteps, undefined, { id: "s" })).rejects.toMatchObject({ code: "STORE_CLOSED" });
    await expect(runtimeStore(store).writeIntent({ runId: "r", epoch: 1 }, {} as never)).rejects.toMatchObject({
      code: "STORE_CLOSED",
      message: expect.stringContaining("writeIntent()"),
    });
    await second.close();
    expect(closes()).toBe(1);
    // Nothing was written after the close: the inner store still holds just the one run.
  });

  it("writeOutcomeLater on a store without it goes through writeOutcome: each outcome calls back once, a failure as an Error naming the store; after close STORE_CLOSED", async () => {
    const { store: bare } = bareStore();
    const answers: Array<() => Promise<void>> = [() => Promise.resolve(), () => Promise.reject("disk busy")];
    const written: number[] = [];
    const store: Store = { ...bare, writeOutcome: (_fence, outcome) => (written.push(outcome.seq), answers.shift()!()) };
    const runtime = runtimeStore(store);
    const fence = { runId: "r", epoch: 1 };
    const calls: unknown[] = [];
    const later = (seq: number) =>
      new Promise<void>((resolve) =>
        runtime.writeOutcomeLater(
          fence,
          { seq, status: "succeeded", value: "1", error: null, endedAt: 1, calls: 1, resolution: null, usage: null },
          () => (calls.push("committed"), resolve()),
          (error) => (calls.push(error), resolve()),
        ),
      );
    await later(1);
    expect(calls).toEqual(["committed"]);
    await later(2);
    expect(calls[1]).toBeInstanceOf(Error);
    expect((calls[1] as Error).message).toBe(`The bare store in this test's writeOutcome() rejected with "disk busy", not an Error.`);
    await runtime.close();
    await later(3);
    expect(calls[2]).toMatchObject({ code: "STORE_CLOSED", message: expect.stringContaining("writeOutcome()") });
    expect(calls).toHaveLength(3);
    expect(written).toEqual([1, 2]);
  });

  it("writeOutcomeLater on a custom store that has it: called instead of writeOutcome, held to one callback a write, a failure that is not an Error named, a synchronous throw reported once", async () => {
    const { store: bare } = bareStore();
    const behaviours: Array<(committed: () => void, failed: (error: unknown) => void) => void> = [
      (committed) => setImmediate(committed),
      (committed, failed) => (committed(), committed(), failed(new Error("late"))),
      (_committed, failed) => failed("disk busy"),
      () => {
        throw new Error("no room in the queue");
      },
      (committed) => {
        committed();
        throw new Error("thrown after the callback");
      },
    ];
    let writeOutcomeCalls = 0;
    const store: Store = {
      ...bare,
      writeOutcome: (...a) => (writeOutcomeCalls++, bare.writeOutcome(...a)),
      writeOutcomeLater: (_fence, _outcome, committed, failed) => behaviours.shift()!(committed, failed),
    };
    const runtime = runtimeStore(store);
    const outcome = { seq: 1, status: "succeeded" as const, value: "1", error: null, endedAt: 1, calls: 1, resolution: null, usage: null };
    const heard: unknown[][] = [];
    for (let i = 0; i < 5; i++) {
      const calls: unknown[] = [];
      heard.push(calls);
      runtime.writeOutcomeLater(
        { runId: "r", epoch: 1 },
        outcome,
        () => calls.push("committed"),
        (error) => calls.push(error),
      );
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(heard[0]).toEqual(["committed"]);
    expect(heard[1]).toEqual(["committed"]);
    expect(heard[2]).toHaveLength(1);
    expect((heard[2]![0] as Error).message).toBe(`The bare store in this test's writeOutcomeLater() rejected with "disk busy", not an Error.`);
    expect(heard[3]).toEqual([new Error("no room in the queue")]);
    expect(heard[4]).toEqual(["committed"]);
    expect(writeOutcomeCalls).toBe(0);
  });

  it("a store that rejects with something other than an Error: the error names the store and the call", async () => {
    const { store: bare } = bareStore();
    const store: Store = { ...bare, listRuns: () => Promise.reject("too busy") as never };
    const engine = createEngine({ store, workflows: [twoSteps] });
    const error = await engine.list().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(`The bare store in this test's listRuns() rejected with "too busy", not an Error.`);
    expect((error as Error).cause).toBe("too busy");
  });

  it("an engine given its own wrapper (engine.store of another engine) does not wrap it twice", async () => {
    const store = memoryStore();
    const one = createEngine({ store, workflows: [twoSteps] });
    const two = createEngine({ store: one.store, workflows: [twoSteps] });
    expect(one.store).toBe(store);
    expect(runtimeStore(two.store)).toBe(runtimeStore(store));
    await one.start(twoSteps, undefined, { id: "r" });
    expect((await two.get("r")).status).toBe("completed");
  });

  it("a lease age from a store that does not declare leaseAge is not passed on", async () => {
    const inner = memoryStore();
    const engine = createEngine({ store: inner, workflows: [twoSteps] });
    await engine.start(twoSteps, undefined, { id: "r" });
    const aged = withOverrides(inner, {
      loadRun: async (original, id) => {
        const found = await original(id);
        return found && { ...found, lease: found.lease && { ...found.lease, ageMs: 5 } };
      },
    });
    expect((await inner.loadRun("r"))?.lease).not.toHaveProperty("ageMs");
    expect((await aged.loadRun("r"))?.lease).toHaveProperty("ageMs", 5);
    expect((await runtimeStore(aged).loadRun("r"))?.lease).not.toHaveProperty("ageMs");
  });
});

describe("the conformance suite's hooks", () => {
  /** A runner that records what the suite registers instead of running it. */
  function recorder() {
    const ran: string[] = [];
    const skipped: string[] = [];
    const fns: TestFunctions = {
      describe: (_name, body) => body(),
      it: Object.assign((name: string) => void ran.push(name), { skip: (name: string) => void skipped.push(name) }),
    };
    return { ran, skipped, fns };
  }

  it("a named skip is reported skipped with its reason, and the other tests still run", () => {
    const { ran, skipped, fns } = recorder();
    describeStore("m", { create: () => memoryStore(), skip: { "an outcome needs an open intent": "not supported yet" } }, fns);
    expect(skipped).toEqual(["an outcome needs an open intent (skipped: not supported yet)"]);
    expect(ran).not.toContain("an outcome needs an open intent");
    expect(ran.length).toBeGreaterThan(10);
  });

  it("a skip naming no test is an error, so a renamed test cannot quietly stay skipped", () => {
    const { fns } = recorder();
    expect(() => describeStore("m", { create: () => memoryStore(), skip: { "no such test": "x" } }, fns)).toThrow(
      /skip names no test of the suite: "no such test"/,
    );
  });

  it("a skip without it.skip from the runner is refused rather than counted as passing", () => {
    const fns: TestFunctions = { describe: (_n, body) => body(), it: () => {} };
    expect(() => describeStore("m", { create: () => memoryStore(), skip: { "an outcome needs an open intent": "x" } }, fns)).toThrow(/needs it\.skip/);
  });
});

describeStore(
  "memory, with additional tests",
  {
    create: () => memoryStore(),
    additionalTests: ({ it: test, withStore, runRow, attemptRow, now }) => {
      test(
        "additional: a run created through the suite's row builders loads back",
        withStore(async (store) => {
          await store.createRun(runRow("extra"), attemptRow("extra", 1), { expiresAt: now + 1000, now });
          expect((await store.loadRun("extra"))?.run.id).toBe("extra");
        }),
      );
    },
  },
  { describe, it },
);
