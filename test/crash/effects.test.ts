// Unknown outcomes with real crashes: the process SIGKILLs itself inside a step's effect (after
// the effect landed in the ledger, before its outcome), then a new process continues. Each
// policy answers by the step's declaration; no irreversible effect is repeated on its own.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { tmpDb } from "../helpers/tmp.js";
import { inspectDb } from "../helpers/inspect.js";
import { spawnNode } from "../helpers/child.js";
import { readLedger, runWorker } from "../helpers/worker.js";

const effectsOf = (file: string, step: string) => readLedger(file).filter((e) => e.kind === "effect" && e.step === step);

describe("unknown outcomes after a real crash", () => {
  it("redrive (idempotent): called again with the same key and told about the cut-off attempt", async () => {
    const file = tmpDb();
    await runWorker(file, "r", "start", { CRASH_IN_EFFECT: "two" });
    const next = await runWorker(file, "r", "continue");
    expect(next.report?.result).toMatchObject({ status: "completed" });
    expect(effectsOf(file, "two").map((e) => [e.idempotencyKey, e.previous?.attempt ?? null])).toEqual([
      ["r:two", null],
      ["r:two", 1],
    ]);
  });

  it("redrive cut off again between settling the cut-off and the new intent: the next continue still re-drives with the same key and `previous`", async () => {
    const file = tmpDb();
    await runWorker(file, "r", "start", { CRASH_IN_EFFECT: "two" });
    // Attempt 2 records the cut-off as re-driven, then dies before the re-drive's intent.
    await runWorker(file, "r", "continue", { STEPLOG_FAULT: "before-intent@two" });
    expect(
      inspectDb(file)
        .steps.filter((s) => s.key === "two")
        .map((s) => s.status),
    ).toEqual(["failed"]);
    const next = await runWorker(file, "r", "continue");
    expect(next.report?.result).toMatchObject({ status: "completed" });
    expect(effectsOf(file, "two").map((e) => [e.idempotencyKey, e.attempt, e.previous?.attempt ?? null])).toEqual([
      ["r:two", 1, null],
      ["r:two", 3, 1],
    ]);
  });

  it("compensate cut off between the compensation and the re-drive's intent: the next continue re-drives with the next key and `previous`", async () => {
    const file = tmpDb();
    const env = { EFFECTS: JSON.stringify({ two: "compensatable" }), COMPENSATABLE: "two" };
    await runWorker(file, "r", "start", { ...env, CRASH_IN_EFFECT: "two" });
    await runWorker(file, "r", "continue", { ...env, STEPLOG_FAULT: "before-intent@two" });
    expect(
      inspectDb(file)
        .steps.filter((s) => s.key === "two")
        .map((s) => s.status),
    ).toEqual(["failed", "compensated"]);
    expect((await runWorker(file, "r", "continue", env)).report?.result).toMatchObject({ status: "completed" });
    expect(effectsOf(file, "two").map((e) => [e.idempotencyKey, e.attempt, e.previous?.attempt ?? null])).toEqual([
      ["r:two", 1, null],
      ["r:two:2", 3, 1],
    ]);
  });

  it("query finds the effect: recorded as succeeded from the query, the function not called again", async () => {
    const file = tmpDb();
    const env = { EFFECTS: JSON.stringify({ two: "irreversible" }), QUERYABLE: "two" };
    await runWorker(file, "r", "start", { ...env, CRASH_IN_EFFECT: "two" });
    const next = await runWorker(file, "r", "continue", env);
    expect(next.report?.result).toMatchObject({ status: "completed", value: ["one done in attempt 1", "two done in attempt 1", "three done in attempt 2"] });
    expect(effectsOf(file, "two")).toHaveLength(1);
    expect(readLedger(file).filter((e) => e.kind === "query")).toHaveLength(1);
    const rows = inspectDb(file).steps.filter((s) => s.key === "two");
    expect(rows.map((s) => [s.attempt, s.status])).toEqual([[1, "succeeded"]]);
  });

  it("query finds nothing (cut off before the effect): re-driven with the same key, exactly one effect", async () => {
    const file = tmpDb();
    const env = { EFFECTS: JSON.stringify({ two: "irreversible" }), QUERYABLE: "two" };
    await runWorker(file, "r", "start", { ...env, STEPLOG_FAULT: "after-intent@two" });
    const next = await runWorker(file, "r", "continue", env);
    expect(next.report?.result).toMatchObject({ status: "completed" });
    expect(effectsOf(file, "two").map((e) => [e.idempotencyKey, e.attempt])).toEqual([["r:two", 2]]);
  });

  it("compensate: the compensation runs first (tolerating an effect that may not have happened), then the step re-runs with key …:2", async () => {
    const file = tmpDb();
    const env = { EFFECTS: JSON.stringify({ two: "compensatable" }), COMPENSATABLE: "two" };
    await runWorker(file, "r", "start", { ...env, CRASH_IN_EFFECT: "two" });
    const next = await runWorker(file, "r", "continue", env);
    expect(next.report?.result).toMatchObject({ status: "completed" });
    expect(
      readLedger(file)
        .filter((e) => e.step === "two")
        .map((e) => `${e.kind} ${e.idempotencyKey}`),
    ).toEqual(["effect r:two", "compensate r:two", "effect r:two:2"]);
    expect(
      inspectDb(file)
        .steps.filter((s) => s.key === "two")
        .map((s) => s.status),
    ).toEqual(["failed", "compensated", "succeeded"]);
  });

  it("a compensation cut off by a crash is run again only after a fenced write: an attempt fenced out on its way there does not run it", async () => {
    const file = tmpDb();
    const env = { EFFECTS: JSON.stringify({ two: "compensatable" }), COMPENSATABLE: "two" };
    await runWorker(file, "r", "start", { ...env, CRASH_IN_EFFECT: "two" });
    await runWorker(file, "r", "continue", { ...env, CRASH_IN_COMPENSATE: "two" });
    expect(
      inspectDb(file)
        .steps.filter((s) => s.key === "two")
        .map((s) => s.status),
    ).toEqual(["intended", "intended"]);
    let compensations = 0;
    let reachedGate!: () => void;
    const atGate = new Promise<void>((resolve) => (reachedGate = resolve));
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const flow = defineWorkflow({
      name: "crash-three",
      async run(ctx) {
        await ctx.step("one", async () => "reused, not called");
        reachedGate();
        await gate;
        await ctx.step("two", { effect: "compensatable", compensate: () => void compensations++ }, async () => "two again");
        return "done";
      },
    });
    const holder = createEngine({ store: sqliteStore({ path: file }), workflows: [flow] });
    const other = createEngine({ store: sqliteStore({ path: file }), workflows: [flow] });
    const continued = holder.continue("r");
    await atGate;
    // Another engine cancels the run: it moves the lease epoch on, fencing the running attempt out.
    await other.cancel("r");
    openGate();
    expect(await continued).toMatchObject({ status: "failed", error: { code: "LEASE_LOST" } });
    expect(compensations).toBe(0);
    expect(readLedger(file).filter((e) => e.kind === "compensate")).toHaveLength(1);
    await holder.close();
    await other.close();
  });

  it("escalate (irreversible, no query): never sent twice; the run waits for a person", async () => {
    const file = tmpDb();
    const env = { EFFECTS: JSON.stringify({ two: "irreversible" }) };
    await runWorker(file, "r", "start", { ...env, CRASH_IN_EFFECT: "two" });
    const next = await runWorker(file, "r", "continue", env);
    expect(next.report?.result).toMatchObject({ status: "escalated", runStatus: "escalated", error: { code: "RUN_ESCALATED", step: "two" } });
    const again = await runWorker(file, "r", "continue", env);
    expect(again.report?.refused?.code).toBe("RUN_ESCALATED");
    expect(effectsOf(file, "two")).toHaveLength(1);
    expect(effectsOf(file, "three")).toHaveLength(0);
  });

  it.each(["after-fn", "after-outcome"] as const)("irreversible and compensatable outcomes are durable before ctx.step returns (%s@two)", async (point) => {
    for (const effect of ["irreversible", "compensatable"]) {
      const file = tmpDb();
      const env = { EFFECTS: JSON.stringify({ one: effect, two: effect }), QUERYABLE: "one,two", COMPENSATABLE: "one,two" };
      await runWorker(file, "r", "start", { ...env, STEPLOG_FAULT: `${point}@two` });
      // Step one's outcome was committed before step two began: it is never asked about or repeated.
      expect(inspectDb(file).steps.find((s) => s.key === "one")?.status).toBe("succeeded");
      const next = await runWorker(file, "r", "continue", env);
      expect(next.report?.result).toMatchObject({ status: "completed" });
      expect(effectsOf(file, "one")).toHaveLength(1);
      expect(effectsOf(file, "two")).toHaveLength(1);
      expect(readLedger(file).filter((e) => e.kind === "query" && e.step === "one")).toHaveLength(0);
    }
  });
});

describe("steps launched together, one cut off by a crash", () => {
  it("a sibling that succeeded beside the cut-off step is reused on continue, not done again", async () => {
    const file = tmpDb();
    const fixture = new URL("./fixtures/siblings.mjs", import.meta.url).pathname;
    // "slow" SIGKILLs the process once the store holds "book" succeeded beside it.
    const crashed = await spawnNode(fixture, [file, "r", "start"], { env: { CRASH_IN_SLOW: "1" } }).done;
    expect(crashed.signal, crashed.stdout + crashed.stderr).toBe("SIGKILL");
    const next = await spawnNode(fixture, [file, "r", "continue"]).done;
    expect(next.report?.result).toMatchObject({ status: "completed", value: "slow done; booking made in attempt 1" });
    expect(readLedger(file).map((e) => `${e.step} ${e.attempt}`)).toEqual(["slow 1", "book 1", "slow 2"]);
  });
});

describe("the saga with real crashes", () => {
  const env = { EFFECTS: JSON.stringify({ one: "compensatable", two: "compensatable" }), COMPENSATABLE: "one,two", FAIL_AT: "three" };

  it("a crash between two compensations: a second compensate(id) compensates each step exactly once", async () => {
    const file = tmpDb();
    expect((await runWorker(file, "r", "start", env)).report?.result).toMatchObject({ status: "failed" });
    const crashed = await runWorker(file, "r", "compensate", { ...env, CRASH_BEFORE_COMPENSATE: "one" });
    expect(crashed.signal).toBe("SIGKILL");
    const done = await runWorker(file, "r", "compensate", env);
    expect(done.report?.result).toMatchObject({ status: "compensated", runStatus: "compensated" });
    expect(
      readLedger(file)
        .filter((e) => e.kind === "compensate")
        .map((e) => e.step),
    ).toEqual(["two", "one"]);
    expect(inspectDb(file).runs[0]!.status).toBe("compensated");
  });

  it("a compensation cut off by a crash is run again only after a fenced write: a saga fenced out on its way there does not run it", async () => {
    const file = tmpDb();
    await runWorker(file, "r", "start", env);
    await runWorker(file, "r", "compensate", { ...env, CRASH_IN_COMPENSATE: "two" });
    const compensated: string[] = [];
    let reachedGate!: () => void;
    const atGate = new Promise<void>((resolve) => (reachedGate = resolve));
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const compensatable = (key: string) => ({ effect: "compensatable" as const, compensate: () => void compensated.push(key) });
    const flow = defineWorkflow({
      name: "crash-three",
      async run(ctx) {
        await ctx.step("one", compensatable("one"), async () => "one");
        reachedGate();
        await gate;
        await ctx.step("two", compensatable("two"), async () => "two");
        return ctx.step("three", async () => "three");
      },
    });
    const holder = createEngine({ store: sqliteStore({ path: file }), workflows: [flow] });
    const other = createEngine({ store: sqliteStore({ path: file }), workflows: [flow] });
    const saga = holder.compensate("r");
    await atGate;
    await other.cancel("r");
    openGate();
    expect(await saga).toMatchObject({ status: "failed", error: { code: "LEASE_LOST" } });
    expect(compensated).toEqual([]);
    await holder.close();
    await other.close();
  });

  it("a crash inside a compensation: it is run again (with the same key) and the saga completes", async () => {
    const file = tmpDb();
    await runWorker(file, "r", "start", env);
    await runWorker(file, "r", "compensate", { ...env, CRASH_IN_COMPENSATE: "two" });
    const done = await runWorker(file, "r", "compensate", env);
    expect(done.report?.result).toMatchObject({ status: "compensated" });
    expect(
      readLedger(file)
        .filter((e) => e.kind === "compensate")
        .map((e) => `${e.step} ${e.idempotencyKey}`),
    ).toEqual(["two r:two", "two r:two", "one r:one"]);
    const rows = inspectDb(file).steps;
    expect(rows.filter((s) => s.status === "compensated").map((s) => s.key)).toEqual(["two", "one"]);
    expect(rows.filter((s) => s.status === "intended")).toEqual([]);
  });
});
