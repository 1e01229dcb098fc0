// DESIGN.md, "An intended step": each effect kind's default answer to an unknown outcome, each
// override, and what the step log records. The unknown outcome is seeded with testWorkflow.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createEngine, defineWorkflow, type Effect, type StepOptions, type UnknownOutcomePolicy } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { testWorkflow } from "../../src/entries/testing.js";

/** A service that remembers effects by idempotency key, as a queryable, compensatable API would. */
function service() {
  const done = new Map<string, string>();
  const log: string[] = [];
  return {
    done,
    log,
    act: (key: string, value: string) => {
      log.push(`act ${key}`);
      done.set(key, value);
      return value;
    },
    query: ({ idempotencyKey }: { idempotencyKey: string }) => {
      log.push(`query ${idempotencyKey}`);
      const value = done.get(idempotencyKey);
      return value === undefined ? ({ done: false } as const) : ({ done: true, value } as const);
    },
    compensate: (value: string | undefined, { idempotencyKey }: { idempotencyKey: string }) => {
      log.push(`compensate ${idempotencyKey} ${String(value)}`);
      done.delete(idempotencyKey);
    },
  };
}

function oneEffect(effect: Effect, svc: ReturnType<typeof service>, extra: Partial<StepOptions<string>> = {}) {
  return defineWorkflow({
    name: "one-effect",
    async run(ctx) {
      const value = await ctx.step("effect", { effect, ...extra }, ({ idempotencyKey }) => svc.act(idempotencyKey, `value for ${idempotencyKey}`));
      return ctx.step("after", async () => `after ${value}`);
    },
  });
}

const seedCutOff = { earlier: { steps: {}, intended: ["effect"] } };

describe("defaults by effect kind", () => {
  it.each<[Effect, string, Partial<StepOptions<string>>, UnknownOutcomePolicy]>([
    ["read", "no query", {}, "redrive"],
    ["idempotent", "no query", {}, "redrive"],
    ["compensatable", "with a query", { query: "svc" as never, compensate: "svc" as never }, "query"],
    ["compensatable", "no query", { compensate: "svc" as never }, "compensate"],
    ["irreversible", "with a query", { query: "svc" as never }, "query"],
    ["irreversible", "no query", {}, "escalate"],
  ])("%s (%s) → %s", async (effect, _what, extra, policy) => {
    const svc = service();
    const options: Partial<StepOptions<string>> = {};
    if (extra.query) options.query = svc.query;
    if (extra.compensate) options.compensate = svc.compensate;
    const run = await testWorkflow(oneEffect(effect, svc, options), { args: undefined, ...seedCutOff });
    const rows = run.steps.filter((s) => s.key === "effect");
    expect(rows[0]!.resolution?.policy).toBe(policy);
    if (policy === "escalate") {
      expect(run).toMatchObject({ status: "escalated", runStatus: "escalated", error: { code: "RUN_ESCALATED", step: "effect" } });
      expect(run.calls("effect")).toBe(0);
      expect(run.calls("after")).toBe(0);
    } else {
      expect(run.status).toBe("completed");
    }
  });
});

describe("query", () => {
  it("done: recorded as succeeded via the query, the function not called", async () => {
    const svc = service();
    svc.done.set("test-run:effect", "what the service did");
    const run = await testWorkflow(oneEffect("irreversible", svc, { query: svc.query }), { args: undefined, ...seedCutOff });
    expect(run).toMatchObject({ status: "completed", value: "after what the service did" });
    expect(run.calls("effect")).toBe(0);
    expect(run.calls("effect", "query")).toBe(1);
    expect(run.resolved).toEqual(["effect"]);
    const rows = run.steps.filter((s) => s.key === "effect");
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      attempt: 1,
      status: "succeeded",
      value: "what the service did",
      effect: "idempotent",
      resolution: { policy: "query", found: "done", attempt: 2 },
    });
  });

  it("not done: re-driven with the same key, the function told about the cut-off attempt", async () => {
    const svc = service();
    const previous: unknown[] = [];
    const workflow = defineWorkflow({
      name: "q",
      async run(ctx) {
        return ctx.step("effect", { effect: "irreversible", query: svc.query }, (info) => {
          previous.push(info.previous);
          return svc.act(info.idempotencyKey, "sent");
        });
      },
    });
    const run = await testWorkflow(workflow, { args: undefined, ...seedCutOff });
    expect(run).toMatchObject({ status: "completed", value: "sent" });
    expect(svc.log).toEqual(["query test-run:effect", "act test-run:effect"]);
    expect(previous).toEqual([{ attempt: 1, intendedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), idempotencyKey: "test-run:effect" }]);
    expect(run.steps.filter((s) => s.key === "effect").map((s) => [s.attempt, s.status, s.resolution?.found ?? null])).toEqual([
      [1, "failed", "not done"],
      [2, "succeeded", null],
    ]);
  });

  it("a query that throws ends the attempt failed (QUERY_FAILED), the step still intended, no new row; the attempt counts", async () => {
    const workflow = defineWorkflow({
      name: "qf",
      async run(ctx) {
        return ctx.step(
          "effect",
          {
            effect: "irreversible",
            query: () => {
              throw new Error("payments API down");
            },
          },
          () => "never",
        );
      },
    });
    const run = await testWorkflow(workflow, { args: undefined, ...seedCutOff });
    expect(run).toMatchObject({ status: "failed", runStatus: "failed", error: { code: "QUERY_FAILED", step: "effect" } });
    expect(run.error!.message).toContain('the query for step "effect" failed (payments API down)');
    expect(run.error!.message).toContain("The effect itself was not retried");
    expect(run.calls("effect")).toBe(0);
    expect(run.steps.map((s) => [s.key, s.status])).toEqual([["effect", "intended"]]);
    expect(run.run.attempts.map((a) => a.ending)).toEqual(["interrupted", "failed"]);
  });

  it("a compensatable step whose query answers not done is re-driven with the same key (no compensation)", async () => {
    const svc = service();
    const run = await testWorkflow(oneEffect("compensatable", svc, { query: svc.query, compensate: svc.compensate }), { args: undefined, ...seedCutOff });
    expect(run.status).toBe("completed");
    expect(svc.log).toEqual(["query test-run:effect", "act test-run:effect"]);
  });
});

describe("redrive, compensate, escalate as overrides", () => {
  it("onUnknown: redrive on an irreversible step calls it again with the same key and previous", async () => {
    const svc = service();
    const run = await testWorkflow(oneEffect("irreversible", svc, { onUnknown: "redrive" }), { args: undefined, ...seedCutOff });
    expect(run.status).toBe("completed");
    expect(svc.log).toEqual(["act test-run:effect"]);
  });

  it("compensate: the compensation runs first with no value, is recorded as its own row, then the step re-runs with key …:2", async () => {
    const svc = service();
    const run = await testWorkflow(oneEffect("idempotent", svc, { onUnknown: "compensate", compensate: svc.compensate }), { args: undefined, ...seedCutOff });
    expect(run).toMatchObject({ status: "completed", value: "after value for test-run:effect:2" });
    expect(svc.log).toEqual(["compensate test-run:effect undefined", "act test-run:effect:2"]);
    expect(run.calls("effect", "compensate")).toBe(1);
    expect(run.steps.filter((s) => s.key === "effect").map((s) => [s.attempt, s.status, s.idempotencyKey])).toEqual([
      [1, "failed", "test-run:effect"],
      [2, "compensated", "test-run:effect"],
      [2, "succeeded", "test-run:effect:2"],
    ]);
  });

  it("escalate: recorded escalated, nothing after it runs, the human queue lists it, resolve({ value }) lets a continue go on", async () => {
    const store = memoryStore();
    const svc = service();
    const workflow = oneEffect("irreversible", svc);
    const run = await testWorkflow(workflow, { args: undefined, ...seedCutOff, store, runId: "r" });
    expect(run).toMatchObject({ status: "escalated", runStatus: "escalated" });
    expect(run.calls("after")).toBe(0);
    const engine = createEngine({ store, workflows: [workflow] });
    const queue = await engine.escalations();
    expect(queue).toEqual([
      expect.objectContaining({ runId: "r", workflow: "one-effect", step: "effect", effect: "idempotent", idempotencyKey: "r:effect", attempt: 1 }),
    ]);
    expect(queue[0]!.cutOffAt).toMatch(/^\d{4}-/);
    expect(queue[0]!.summary).toContain("nobody knows whether its effect happened");
    await expect(engine.continue("r")).rejects.toMatchObject({ code: "RUN_ESCALATED", step: "effect" });
    await expect(engine.resolve("r", "after", { redo: true })).rejects.toMatchObject({ code: "STEP_NOT_FOUND" });
    await engine.resolve("r", "effect", { value: "confirmed by support", by: "ana" });
    expect((await engine.get("r")).status).toBe("ready");
    expect(await engine.escalations()).toEqual([]);
    await expect(engine.resolve("r", "effect", { value: "again" })).rejects.toMatchObject({ code: "NOT_ESCALATED" });
    const next = await engine.continue("r");
    expect(next).toMatchObject({ status: "completed", value: "after confirmed by support" });
    expect(svc.log).toEqual([]);
    const row = (await engine.get("r")).steps.find((s) => s.key === "effect")!;
    expect(row).toMatchObject({ status: "succeeded", resolution: { policy: "escalate", found: "done (resolved by a person)", by: "ana" } });
  });

  it("escalate, then resolve({ redo: true }): the next continue runs the step again with the same idempotency key", async () => {
    const store = memoryStore();
    const svc = service();
    const workflow = oneEffect("irreversible", svc);
    await testWorkflow(workflow, { args: undefined, ...seedCutOff, store, runId: "r" });
    const engine = createEngine({ store, workflows: [workflow] });
    await engine.resolve("r", "effect", { redo: true });
    expect(await engine.continue("r")).toMatchObject({ status: "completed" });
    expect(svc.log).toEqual(["act r:effect"]);
  });

  it("a resolved value the step's result schema rejects stops the continue at that step", async () => {
    const store = memoryStore();
    const workflow = defineWorkflow({
      name: "typed",
      async run(ctx) {
        return ctx.step("effect", { effect: "irreversible", result: z.object({ receipt: z.string() }) }, () => ({ receipt: "r-1" }));
      },
    });
    await testWorkflow(workflow, { args: undefined, ...seedCutOff, store, runId: "r" });
    const engine = createEngine({ store, workflows: [workflow] });
    await engine.resolve("r", "effect", { value: { receipt: 42 } });
    expect(await engine.continue("r")).toMatchObject({ status: "stopped", error: { code: "RESULT_REJECTED", step: "effect" } });
  });

  it("bad answers to resolve are refused", async () => {
    const engine = createEngine({ store: memoryStore(), workflows: [] });
    await expect(engine.resolve("r", "s", {} as never)).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(engine.resolve("missing", "s", { redo: true })).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
  });
});

describe("every policy × every effect kind (onUnknown), on a seeded unknown outcome", () => {
  const EFFECTS: Effect[] = ["read", "idempotent", "compensatable", "irreversible"];
  const POLICIES: UnknownOutcomePolicy[] = ["redrive", "query", "compensate", "escalate"];
  const cells = EFFECTS.flatMap((effect) => POLICIES.flatMap((policy) => [true, false].map((found) => [effect, policy, found] as const)))
    // "found" only matters to a query.
    .filter(([, policy, found]) => policy === "query" || found);

  it.each(cells.map(([effect, policy, found]) => [effect, policy, policy === "query" ? (found ? " (found)" : " (not found)") : "", found] as const))(
    "%s step, onUnknown %s%s",
    async (effect, policy, _label, found) => {
      const svc = service();
      if (found) svc.done.set("test-run:effect", "landed before the crash");
      const run = await testWorkflow(oneEffect(effect, svc, { onUnknown: policy, query: svc.query, compensate: svc.compensate }), {
        args: undefined,
        ...seedCutOff,
      });
      const first = run.steps.find((s) => s.key === "effect")!;
      expect(first.resolution?.policy).toBe(policy);
      switch (policy) {
        case "redrive":
          expect(run.status).toBe("completed");
          expect(svc.log).toEqual(["act test-run:effect"]);
          break;
        case "query":
          expect(run.status).toBe("completed");
          expect(run.calls("effect", "query")).toBe(1);
          expect(run.calls("effect")).toBe(found ? 0 : 1);
          expect(run.value).toBe(found ? "after landed before the crash" : "after value for test-run:effect");
          break;
        case "compensate":
          expect(run.status).toBe("completed");
          expect(svc.log).toEqual(["compensate test-run:effect undefined", "act test-run:effect:2"]);
          break;
        case "escalate":
          expect(run).toMatchObject({ status: "escalated", runStatus: "escalated" });
          expect(svc.log).toEqual([]);
          expect(run.calls("after")).toBe(0);
          break;
      }
    },
  );
});

describe("an escalation stays in the human queue", () => {
  it("after the run is cancelled: listed until resolved, and a continue is refused (RUN_ESCALATED) until then", async () => {
    const store = memoryStore();
    const svc = service();
    const workflow = oneEffect("irreversible", svc);
    await testWorkflow(workflow, { args: undefined, ...seedCutOff, store, runId: "r" });
    const engine = createEngine({ store, workflows: [workflow] });
    expect(await engine.cancel("r")).toBe("cancelled");
    expect((await engine.escalations()).map((e) => [e.runId, e.step])).toEqual([["r", "effect"]]);
    await expect(engine.continue("r")).rejects.toMatchObject({ code: "RUN_ESCALATED", step: "effect" });
    expect(svc.log).toEqual([]);
    await engine.resolve("r", "effect", { redo: true });
    expect(await engine.escalations()).toEqual([]);
    expect(await engine.continue("r")).toMatchObject({ status: "completed" });
  });
});
