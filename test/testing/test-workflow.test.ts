// testWorkflow: unit-testing the second attempt, as the seed document does it.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineWorkflow } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { testWorkflow } from "../../src/entries/testing.js";
import { tmpDb } from "../helpers/tmp.js";

const PLAN = z.object({ branch: z.string(), steps: z.array(z.string()) });
const BUILT = z.object({ commit: z.string() });
const VERDICT = z.object({ approved: z.boolean(), findings: z.array(z.string()) });

/** Stands in for the agents: each step asks one; a test must never reach them for reused steps. */
const agents = {
  asked: [] as string[],
  async run(role: string, prompt: string): Promise<unknown> {
    agents.asked.push(role);
    throw new Error(`the real ${role} agent was called with: ${prompt}`);
  },
};

const fixIssue = defineWorkflow({
  name: "fix-issue",
  version: "1.0.0",
  args: z.object({ issue: z.string() }),
  async run(ctx, args) {
    const plan = await ctx.step("plan", { result: PLAN }, async () => PLAN.parse(await agents.run("planner", `Plan a fix for ${args.issue}.`)));
    const built = await ctx.step("implement", { result: BUILT }, async () =>
      BUILT.parse(await agents.run("builder", [`On ${plan.branch}, carry out:`, ...plan.steps].join("\n"))),
    );
    return ctx.step("review", { result: VERDICT }, async () =>
      VERDICT.parse(await agents.run("reviewer", `Review commit ${built.commit} on ${plan.branch} as a fix for ${args.issue}.`)),
    );
  },
});

const args = { issue: "#212: dates before 1970 parse as null" };
const plan = { branch: "fix/212", steps: ["handle negative epoch", "add a test"] };
const built = { commit: "4be1c07" };

describe("testWorkflow", () => {
  it("a continue reuses plan and implement, and only the review runs again", async () => {
    agents.asked.length = 0;
    const prompts: string[] = [];
    const run = await testWorkflow(fixIssue, {
      args,
      earlier: { steps: { plan, implement: built } }, // what attempt 1 recorded
      mocks: {
        review: async () => {
          prompts.push(`Review commit ${built.commit} on ${plan.branch}`);
          return { approved: true, findings: [] };
        },
      },
    });
    expect(run.status).toBe("completed");
    expect(run.value).toEqual({ approved: true, findings: [] });
    expect(run.reused).toEqual(["plan", "implement"]);
    expect(run.ran).toEqual(["review"]);
    expect(run.calls("plan")).toBe(0);
    expect(run.calls("review")).toBe(1);
    // Reused steps ask no agent.
    expect(agents.asked).toEqual([]);
    expect(prompts[0]).toContain("4be1c07 on fix/212");
    expect(run.steps.map((s) => `${s.key}@${s.attempt}:${s.status}`)).toEqual(["plan@1:succeeded", "implement@1:succeeded", "review@2:succeeded"]);
  });

  it("a step neither seeded nor mocked runs its real function", async () => {
    agents.asked.length = 0;
    const run = await testWorkflow(fixIssue, { args, earlier: { steps: { plan } } });
    expect(run.status).toBe("failed");
    expect(run.error).toMatchObject({ step: "implement" });
    expect(run.error!.message).toContain("the real builder agent was called");
    expect(agents.asked).toEqual(["builder"]);
  });

  it("a seeded value that no longer fits the result schema stops the attempt at that step", async () => {
    const run = await testWorkflow(fixIssue, { args, earlier: { steps: { plan: { branch: "fix/212" } } } });
    expect(run).toMatchObject({ status: "stopped", error: { code: "RESULT_REJECTED", step: "plan" } });
    expect(run.ran).toEqual([]);
  });

  it("earlier.intended seeds an unknown outcome: attempt 1 reads interrupted, and the step's policy resolves it", async () => {
    const run = await testWorkflow(fixIssue, {
      args,
      earlier: { steps: { plan }, intended: ["implement"] },
      mocks: { implement: () => built, review: () => ({ approved: true, findings: [] }) },
    });
    expect(run.status).toBe("completed");
    expect(run.run.attempts.map((a) => a.ending)).toEqual(["interrupted", "completed"]);
    // implement is idempotent by default: re-driven with the same key.
    expect(run.calls("implement")).toBe(1);
    const rows = run.steps.filter((s) => s.key === "implement");
    expect(rows.map((s) => [s.attempt, s.status, s.idempotencyKey])).toEqual([
      [1, "failed", "test-run:implement"],
      [2, "succeeded", "test-run:implement"],
    ]);
    expect(rows[0]!.resolution).toMatchObject({ policy: "redrive" });
  });

  it("fromStep redoes a seeded step and everything after it; earlier.version drives the version rule", async () => {
    const run = await testWorkflow(fixIssue, {
      args,
      earlier: { steps: { plan, implement: built, review: { approved: false, findings: ["no test"] } } },
      fromStep: "implement",
      mocks: { implement: () => ({ commit: "9f00d1e" }), review: () => ({ approved: true, findings: [] }) },
    });
    expect(run.ran).toEqual(["implement", "review"]);
    expect(run.reused).toEqual(["plan"]);
    const old = await testWorkflow(fixIssue, { args, earlier: { steps: { plan }, version: "0.9.0" } });
    expect(old).toMatchObject({ status: "stopped", error: { code: "VERSION_CHANGED", step: "plan" } });
  });

  it("works against a given store, such as SQLite", async () => {
    const run = await testWorkflow(fixIssue, {
      args,
      earlier: { steps: { plan, implement: built } },
      mocks: { review: () => ({ approved: true, findings: [] }) },
      store: sqliteStore({ path: tmpDb() }),
    });
    expect(run).toMatchObject({ status: "completed", reused: ["plan", "implement"], ran: ["review"] });
  });
});

describe("testWorkflow and the saga's pivot rule", () => {
  const compensated: string[] = [];
  const trip = defineWorkflow({
    name: "trip",
    onFailure: "compensate",
    async run(ctx) {
      await ctx.step("book-hotel", { effect: "compensatable", compensate: () => void compensated.push("hotel") }, async () => "H1");
      await ctx.step("charge", { effect: "irreversible" }, async () => "paid");
      return ctx.step("ship", async () => {
        throw new Error("no courier");
      });
    },
  });

  it("a seeded irreversible step that succeeded (earlier.effects) keeps the saga from compensating past it, as in a real continue", async () => {
    compensated.length = 0;
    const seeded = await testWorkflow(trip, {
      args: undefined,
      earlier: { steps: { "book-hotel": "H1", charge: "paid" }, effects: { "book-hotel": "compensatable", charge: "irreversible" } },
    });
    expect(seeded).toMatchObject({ status: "failed", run: { status: "failed" } });
    expect(compensated).toEqual([]);
    // The same in a real engine on SQLite: start fails at ship, and nothing is compensated past the charge.
    const { createEngine } = await import("../../src/entries/index.js");
    const engine = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [trip] });
    expect(await engine.start(trip, undefined, { id: "t" })).toMatchObject({ status: "failed", runStatus: "failed" });
    expect(compensated).toEqual([]);
    await engine.close();
  });

  it("an effect that is not one of the four is refused", async () => {
    await expect(testWorkflow(trip, { args: undefined, earlier: { steps: { charge: "paid" }, effects: { charge: "final" as never } } })).rejects.toMatchObject({
      code: "INVALID_OPTION",
    });
  });
});
