// A step whose promise rejects while nothing observes it (a forgotten `await`) must not let its
// attempt end `completed`: it ends `failed` with UNAWAITED_STEP_FAILED naming the step. A step
// promise that is awaited (even later), caught, passed to Promise.all/allSettled or returned is
// observed, and the workflow goes on as it always did.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, type WorkflowContext } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Rejections Node saw unhandled while a test ran: steplog reports an unobserved failure itself. */
let unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled = [];
  process.on("unhandledRejection", onUnhandled);
});
afterEach(() => {
  process.off("unhandledRejection", onUnhandled);
});

async function runOnce(body: (ctx: WorkflowContext) => Promise<unknown>, id = "r") {
  const calls: string[] = [];
  const workflow = defineWorkflow({ name: "unawaited", run: (ctx) => body(ctx) });
  const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
  const result = await engine.start(workflow, undefined, { id });
  // Long enough for Node to report an unhandled rejection, had there been one.
  await pause(20);
  return { engine, result, calls };
}

const boom = async (): Promise<never> => {
  throw new Error("the card was declined");
};

describe("a failed step nothing observed", () => {
  it.each([
    ["as the first step", (ctx: WorkflowContext) => void ctx.step("charge", boom)],
    [
      "after another step",
      async (ctx: WorkflowContext) => {
        await ctx.step("plan", async () => 1);
        void ctx.step("charge", boom);
      },
    ],
  ])("%s: the attempt ends failed, UNAWAITED_STEP_FAILED naming the step and the missing await", async (_what, forgets) => {
    const { engine, result } = await runOnce(async (ctx) => {
      await forgets(ctx);
      await ctx.step("after", async () => "went on");
      return "done";
    });
    expect(result).toMatchObject({ status: "failed", runStatus: "failed", error: { code: "UNAWAITED_STEP_FAILED", step: "charge" } });
    expect(result.error!.message).toContain('Run "r": step "charge" failed (Error: the card was declined) and nothing awaited it');
    expect(result.error!.message).toContain('an `await` is likely missing before ctx.step("charge", …)');
    expect(result.error!.message).toContain('engine.continue("r")');
    expect(result).not.toHaveProperty("value");
    expect(await engine.get("r")).toMatchObject({ status: "failed", error: { code: "UNAWAITED_STEP_FAILED" } });
    expect(unhandled).toEqual([]);
    await engine.close();
  });

  it("the workflow returns before the step has even failed: the attempt waits for it, then fails", async () => {
    const { engine, result } = await runOnce(async (ctx) => {
      void ctx.step("slow-charge", async () => {
        await pause(40);
        throw new Error("declined, later");
      });
      return "returned at once";
    });
    expect(result).toMatchObject({ status: "failed", error: { code: "UNAWAITED_STEP_FAILED", step: "slow-charge" } });
    expect((await engine.get("r")).steps.map((s) => [s.key, s.status])).toEqual([["slow-charge", "failed"]]);
    expect(unhandled).toEqual([]);
    await engine.close();
  });

  it("several: the first is named, and the others after it", async () => {
    const { engine, result } = await runOnce(async (ctx) => {
      void ctx.step("a", boom);
      void ctx.step("b", boom);
      await pause(10);
    });
    expect(result.error).toMatchObject({ code: "UNAWAITED_STEP_FAILED", step: "a" });
    expect(result.error!.message).toContain('(so did step "b")');
    await engine.close();
  });

  it("a continue after the await is added runs the step again (it is not a failure the workflow handled)", async () => {
    const store = memoryStore();
    let calls = 0;
    let forget = true;
    const workflow = defineWorkflow({
      name: "fixed-later",
      async run(ctx) {
        const charged = ctx.step("charge", async () => {
          calls++;
          if (calls === 1) throw new Error("declined once");
          return "charged";
        });
        await ctx.step("after", async () => "went on");
        if (forget) return "done";
        return await charged;
      },
    });
    const engine = createEngine({ store, workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "c" })).toMatchObject({ status: "failed", error: { code: "UNAWAITED_STEP_FAILED" } });
    forget = false;
    expect(await engine.continue("c")).toMatchObject({ status: "completed", value: "charged" });
    expect(calls).toBe(2);
    await engine.close();
  });

  it("across a park: the attempt that parks ends waiting; the one that would complete after the event fails", async () => {
    const workflow = defineWorkflow({
      name: "parks",
      async run(ctx) {
        void ctx.step("charge", boom);
        return ctx.waitForEvent("go");
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "p" })).toMatchObject({ status: "waiting" });
    await engine.send("p", "go", "went");
    expect(await engine.continue("p")).toMatchObject({ status: "failed", error: { code: "UNAWAITED_STEP_FAILED", step: "charge" } });
    expect(unhandled).toEqual([]);
    await engine.close();
  });

  it("when the code throws its own error, that error is the attempt's", async () => {
    const { engine, result } = await runOnce(async (ctx) => {
      void ctx.step("charge", boom);
      await pause(10);
      throw new Error("the code's own failure");
    });
    expect(result).toMatchObject({ status: "failed", error: { message: "the code's own failure" } });
    await engine.close();
  });
});

describe("a failed step the code observed: the workflow goes on as before", () => {
  const observers: Array<[string, (ctx: WorkflowContext) => Promise<unknown>]> = [
    [
      "awaited later, in a try",
      async (ctx) => {
        const charge = ctx.step("charge", boom);
        await ctx.step("other", async () => 1);
        await pause(10);
        try {
          await charge;
        } catch {
          return "caught";
        }
      },
    ],
    ["caught with .catch", async (ctx) => ctx.step("charge", boom).catch(() => "caught")],
    [
      "handled with .then(_, onRejected)",
      async (ctx) => {
        void ctx.step("charge", boom).then(undefined, () => "caught");
        await pause(10);
        return "caught";
      },
    ],
    [
      "passed to Promise.allSettled",
      async (ctx) => {
        const [settled] = await Promise.allSettled([ctx.step("charge", boom), ctx.step("other", async () => 1)]);
        return settled.status === "rejected" ? "caught" : "no";
      },
    ],
    [
      "passed to Promise.all, caught around it",
      async (ctx) => {
        try {
          await Promise.all([ctx.step("other", async () => 1), ctx.step("charge", boom)]);
        } catch {
          return "caught";
        }
      },
    ],
    [
      "passed to Promise.race, and a .finally that is caught",
      async (ctx) => {
        const charge = ctx.step("charge", boom);
        await Promise.race([charge, pause(5)]).catch(() => {});
        await charge.finally(() => {}).catch(() => {});
        return "caught";
      },
    ],
  ];

  it.each(observers)("%s: completed", async (_what, body) => {
    const { engine, result } = await runOnce(body);
    expect(result).toMatchObject({ status: "completed", value: "caught" });
    expect(unhandled).toEqual([]);
    await engine.close();
  });

  it("returned from the workflow: the attempt fails with the step's own error", async () => {
    const { engine, result } = await runOnce(async (ctx) => ctx.step("charge", boom));
    expect(result).toMatchObject({ status: "failed", error: { message: "the card was declined", step: "charge" } });
    expect(result.error).not.toHaveProperty("code");
    await engine.close();
  });

  it("a step that succeeds unawaited, even after the workflow returned, still completes the attempt", async () => {
    const { engine, result } = await runOnce(async (ctx) => {
      void ctx.step("slow", async () => {
        await pause(30);
        return "late";
      });
      return "done";
    });
    expect(result).toMatchObject({ status: "completed", value: "done" });
    expect((await engine.get("r")).steps.map((s) => [s.key, s.status])).toEqual([["slow", "succeeded"]]);
    await engine.close();
  });

  it("ctx.step still hands back a promise: instanceof Promise, and its .then gives a plain promise", async () => {
    const { engine, result } = await runOnce(async (ctx) => {
      const step = ctx.step("one", async () => 1);
      const derived = step.then((n) => n + 1);
      return [step instanceof Promise, Object.getPrototypeOf(derived) === Promise.prototype, await derived];
    });
    expect(result).toMatchObject({ status: "completed", value: [true, true, 2] });
    await engine.close();
  });
});
