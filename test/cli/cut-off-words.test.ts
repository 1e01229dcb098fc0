// How a cut-off row reads once a continue settled it by its policy: the sentence recorded as its
// error (engine.get) and the words `steplog show` and the HTML timeline put beside it. Each
// policy's row is made by a real continue of a seeded or real first attempt.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, type StepOptions } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { testWorkflow } from "../../src/entries/testing.js";
import { describeEntry } from "../../src/cli/describe.js";
import { buildTimeline } from "../../src/cli/timeline.js";
import { renderTimeline } from "../../src/cli/commands/show.js";
import { renderHtml } from "../../src/cli/html.js";
import { painter } from "../../src/cli/format.js";

/** The run after attempt 2 settled a seeded cut-off "effect" step with these options. */
async function settledBy(options: StepOptions<string>) {
  const store = memoryStore();
  const workflow = defineWorkflow({
    name: "cut-off",
    async run(ctx) {
      return ctx.step("effect", options, async () => "done now");
    },
  });
  await testWorkflow(workflow, { args: undefined, earlier: { intended: ["effect"] }, store });
  return viewOf(store, "test-run");
}

async function viewOf(store: ReturnType<typeof memoryStore>, id: string) {
  const engine = createEngine({ store });
  const run = await engine.get(id);
  const escalations = run.status === "escalated" ? (await engine.escalations()).filter((e) => e.runId === id) : [];
  const timeline = buildTimeline(run, escalations, Date.now());
  // The cut-off row is attempt 1's: it was written then, and settled by attempt 2.
  const first = timeline.attempts[0]!;
  const cutOff = first.entries.find((e) => e.key === "effect")!;
  return {
    message: run.steps.find((s) => s.key === "effect" && s.attempt === 1)!.error?.message,
    words: describeEntry(cutOff, first),
    text: renderTimeline(timeline, painter(false), Date.now()).join("\n"),
    html: renderHtml(timeline, Date.now()),
  };
}

const service = { query: async () => ({ done: false }) as const };

describe("a cut-off row settled by its policy reads as a sentence", () => {
  it("query found no effect: the row says it was cut off, its query found nothing and it ran again", async () => {
    const view = await settledBy({ effect: "irreversible", query: service.query });
    expect(view.message).toBe("Attempt 1 was cut off inside its effect; its query found no effect, so it is re-driven.");
    expect(view.words).toMatchObject({ label: "cut off", note: "the process died inside it; its query found no effect; re-driven by attempt 2" });
    expect(view.text).toMatch(/^ {2}✗ effect +cut off +the process died inside it; its query found no effect; re-driven by attempt 2$/m);
    expect(view.html).toContain("its query found no effect; re-driven by attempt 2");
    for (const shown of [view.text, view.html]) expect(shown).not.toMatch(/was the query|was returned/);
  });

  it("re-driven, compensated and escalated rows keep sentences that read", async () => {
    expect((await settledBy({ effect: "idempotent" })).message).toBe("Attempt 1 was cut off inside its effect; re-driven.");
    expect((await settledBy({ effect: "compensatable", compensate: async () => {} })).message).toBe("Attempt 1 was cut off inside its effect; compensated.");
    expect((await settledBy({ effect: "irreversible" })).message).toBe("Attempt 1 was cut off inside its effect; waits for a person.");
  });

  it("a step whose value could not be recorded, escalated on continue: says the step returned, not the attempt", async () => {
    const store = memoryStore();
    const workflow = defineWorkflow({
      name: "unrecorded",
      async run(ctx) {
        // A function is no value steplog can record: the effect happened, its value is lost.
        return ctx.step("effect", { effect: "irreversible" }, async () => (() => "a function") as unknown as string);
      },
    });
    const engine = createEngine({ store, workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "u1" })).toMatchObject({ status: "failed" });
    expect(await engine.continue("u1")).toMatchObject({ status: "escalated" });
    const view = await viewOf(store, "u1");
    expect(view.message).toBe("In attempt 1 the step returned, but its value could not be recorded (VALUE_NOT_SERIALIZABLE); it waits for a person.");
    expect(view.text).not.toMatch(/was returned/);
  });
});
