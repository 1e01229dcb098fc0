// The promise at its edges, with real crashes: a continue never repeats an effect because of an
// answer, a value or a failure it could not take at face value.
import { describe, expect, it } from "vitest";
import { tmpDb } from "../helpers/tmp.js";
import { inspectDb } from "../helpers/inspect.js";
import { readLedger, runWorker } from "../helpers/worker.js";

const effectsOf = (file: string, step: string) => readLedger(file).filter((e) => e.kind === "effect" && e.step === step);

describe("a malformed query answer fails closed", () => {
  it.each([
    ["the effect's raw record", { CRASH_IN_EFFECT: "two" }, /returned \{"kind":"effect"/],
    ["null (the lookup found nothing)", { STEPLOG_FAULT: "after-intent@two" }, /returned null/],
  ])("%s: QUERY_ANSWER_INVALID, the step stays intended and is not re-driven", async (_what, crash, found) => {
    const file = tmpDb();
    const env = { EFFECTS: JSON.stringify({ two: "irreversible" }), QUERYABLE: "two", QUERY_RAW: "1" };
    await runWorker(file, "r", "start", { ...env, ...crash });
    const before = effectsOf(file, "two").length;
    const next = await runWorker(file, "r", "continue", env);
    expect(next.report?.result).toMatchObject({ status: "failed", error: { code: "QUERY_ANSWER_INVALID", step: "two" } });
    expect(next.report?.result?.error.message).toMatch(found);
    expect(next.report?.result?.error.message).toMatch(/\{ done: true, value \} or \{ done: false \}/);
    expect(effectsOf(file, "two")).toHaveLength(before);
    expect(
      inspectDb(file)
        .steps.filter((s) => s.key === "two")
        .map((s) => s.status),
    ).toEqual(["intended"]);
    // Asked again on the next continue, and refused again: never taken for "not done".
    const again = await runWorker(file, "r", "continue", env);
    expect(again.report?.result).toMatchObject({ status: "failed", error: { code: "QUERY_ANSWER_INVALID" } });
    expect(effectsOf(file, "two")).toHaveLength(before);
    expect(readLedger(file).filter((e) => e.kind === "query")).toHaveLength(2);
  });
});

describe("a failure the workflow handled is replayed, not redone, after a crash", () => {
  it("killed after the handler went on: the failed step's function is not called again, nothing after it is redone", async () => {
    const file = tmpDb();
    const env = { FAIL_AT: "one", HANDLED: "one" };
    await runWorker(file, "r", "start", { ...env, STEPLOG_FAULT: "after-outcome@two" });
    expect(inspectDb(file).steps.map((s) => `${s.key}:${s.status}`)).toEqual(["one:failed", "two:succeeded"]);
    const next = await runWorker(file, "r", "continue", env);
    expect(next.report?.result).toMatchObject({
      status: "completed",
      value: ["handled: one failed on purpose", "two done in attempt 1", "three done in attempt 2"],
    });
    expect(effectsOf(file, "one")).toHaveLength(1);
    expect(effectsOf(file, "two")).toHaveLength(1);
    expect(inspectDb(file).steps.map((s) => `${s.key}:${s.status}@${s.attempt}`)).toEqual(["one:failed@1", "two:succeeded@1", "three:succeeded@2"]);
  });

  it("killed before anything followed the failure: nothing shows it was handled, so it is redone", async () => {
    const file = tmpDb();
    const env = { FAIL_AT: "one", HANDLED: "one" };
    await runWorker(file, "r", "start", { ...env, STEPLOG_FAULT: "before-intent@two" });
    const next = await runWorker(file, "r", "continue", { HANDLED: "one" });
    expect(next.report?.result).toMatchObject({ status: "completed", value: ["one done in attempt 2", "two done in attempt 2", "three done in attempt 2"] });
    expect(effectsOf(file, "one")).toHaveLength(2);
  });
});

describe("a succeeded irreversible step is not run again without consent", () => {
  it("across processes: fromStep before it stops there; redo in a later process runs it again, once", async () => {
    const file = tmpDb();
    const env = { EFFECTS: JSON.stringify({ two: "irreversible" }) };
    expect((await runWorker(file, "r", "start", env)).report?.result).toMatchObject({ status: "completed" });
    const stopped = await runWorker(file, "r", "continue", env, { fromStep: "one" });
    expect(stopped.report?.result).toMatchObject({ status: "stopped", error: { code: "REDO_IRREVERSIBLE", step: "two" } });
    expect(effectsOf(file, "two")).toHaveLength(1);
    expect(inspectDb(file).attempts.map((a) => a.ending)).toEqual(["completed", "stopped"]);
    const redone = await runWorker(file, "r", "continue", env, { redo: ["two"] });
    expect(redone.report?.result).toMatchObject({ status: "completed", value: ["one done in attempt 2", "two done in attempt 3", "three done in attempt 3"] });
    expect(effectsOf(file, "two").map((e) => e.attempt)).toEqual([1, 3]);
  });
});

describe("an effect that ran but whose value cannot be recorded is an unknown outcome, not a failure", () => {
  it.each([
    [
      "irreversible, no query: escalated, never called again",
      { EFFECTS: JSON.stringify({ two: "irreversible" }) },
      { status: "escalated", error: { code: "RUN_ESCALATED" } },
      ["r:two"],
    ],
    [
      "irreversible with a query: settled by the query, never called again",
      { EFFECTS: JSON.stringify({ two: "irreversible" }), QUERYABLE: "two" },
      { status: "completed" },
      ["r:two"],
    ],
    [
      "compensatable: compensated, then called with a new key",
      { EFFECTS: JSON.stringify({ two: "compensatable" }), COMPENSATABLE: "two" },
      { status: "completed" },
      ["r:two", "r:two:2"],
    ],
  ])("%s", async (_what, env, after, keys) => {
    const file = tmpDb();
    const first = await runWorker(file, "r", "start", { ...env, BAD_VALUE: "two" });
    expect(first.report?.result).toMatchObject({ status: "failed", error: { code: "VALUE_NOT_SERIALIZABLE", step: "two" } });
    expect(first.report?.result?.error.message).toMatch(/its effect has already happened: it is recorded as an unknown outcome/);
    expect(
      inspectDb(file)
        .steps.filter((s) => s.key === "two")
        .map((s) => s.status),
    ).toEqual(["intended"]);
    const next = await runWorker(file, "r", "continue", env);
    expect(next.report?.result).toMatchObject(after);
    expect(effectsOf(file, "two").map((e) => e.idempotencyKey)).toEqual(keys);
  });

  it("the escalation says the effect happened and its value was lost", async () => {
    const file = tmpDb();
    const env = { EFFECTS: JSON.stringify({ two: "irreversible" }) };
    await runWorker(file, "r", "start", { ...env, BAD_VALUE: "two" });
    const next = await runWorker(file, "r", "continue", env);
    expect(next.report?.result?.error.message).toMatch(
      /step "two" returned, so its effect happened, but its value could not be recorded \(VALUE_NOT_SERIALIZABLE\)/,
    );
  });

  it("an idempotent step is recorded failed as before, and a continue calls it again", async () => {
    const file = tmpDb();
    const first = await runWorker(file, "r", "start", { BAD_VALUE: "two" });
    expect(first.report?.result).toMatchObject({ status: "failed", error: { code: "VALUE_NOT_SERIALIZABLE", step: "two" } });
    expect(
      inspectDb(file)
        .steps.filter((s) => s.key === "two")
        .map((s) => s.status),
    ).toEqual(["failed"]);
    expect((await runWorker(file, "r", "continue")).report?.result).toMatchObject({ status: "completed" });
    expect(effectsOf(file, "two")).toHaveLength(2);
  });
});
