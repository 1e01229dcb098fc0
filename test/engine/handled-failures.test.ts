// A failure the workflow caught is a settled record: a continue throws the recorded error again
// (same name, message, code, fields, cause; the declared class) and the handler runs as before.
// Only the failure that ended the attempt is redone. And what a stored error keeps.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, isSteplogError, StepTimedOutError } from "../../src/entries/index.js";
import { fakeClock } from "../../src/entries/testing.js";
import { STORES } from "../helpers/stores.js";

class CardDeclined extends Error {
  constructor(
    message: string,
    readonly declineCode: string,
  ) {
    super(message);
  }
}

describe.each(STORES)("a failure the workflow handled (%s)", (_name, makeStore) => {
  /** lookup fails and is handled; charge (irreversible) and an event wait come after; finish fails the first time. */
  function checkout() {
    const calls: string[] = [];
    const seen: Array<{ instance: boolean; message: string; declineCode: unknown; code: unknown; cause: unknown }> = [];
    let finishFails = true;
    const workflow = defineWorkflow({
      name: "checkout",
      async run(ctx) {
        let card: string;
        try {
          card = await ctx.step("lookup", { errors: [CardDeclined] }, async () => {
            calls.push("lookup");
            throw Object.assign(new CardDeclined("card ending 4242 declined", "insufficient_funds"), {
              code: "E_DECLINED",
              cause: new Error("issuer said no"),
            });
          });
        } catch (error) {
          const e = error as CardDeclined & { code?: string; cause?: Error };
          seen.push({ instance: error instanceof CardDeclined, message: e.message, declineCode: e.declineCode, code: e.code, cause: e.cause?.message });
          card = await ctx.step("fallback-card", async () => (calls.push("fallback-card"), "card-on-file"));
        }
        const charge = await ctx.step("charge", { effect: "irreversible" }, async () => (calls.push("charge"), `charged ${card}`));
        const confirmed = await ctx.waitForEvent("confirmed");
        await ctx.step("finish", async () => {
          calls.push("finish");
          if (finishFails) throw new Error("mail server down");
        });
        return { charge, confirmed };
      },
    });
    return { workflow, calls, seen, fixFinish: () => (finishFails = false) };
  }

  it("is thrown again on continue, not redone; nothing after it runs again; an event already consumed is not waited for again", async () => {
    const { workflow, calls, seen, fixFinish } = checkout();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "c" })).toMatchObject({ status: "waiting" });
    await engine.send("c", "confirmed", "yes");
    expect(await engine.continue("c")).toMatchObject({ status: "failed", error: { step: "finish", message: "mail server down" } });
    fixFinish();
    const done = await engine.continue("c");
    expect(done).toMatchObject({ status: "completed", value: { charge: "charged card-on-file", confirmed: "yes" } });
    expect(calls).toEqual(["lookup", "fallback-card", "charge", "finish", "finish"]);
    // The handler saw the same error each time: its class, message, own fields, code and cause.
    const first = { instance: true, message: "card ending 4242 declined", declineCode: "insufficient_funds", code: "E_DECLINED", cause: "issuer said no" };
    expect(seen).toEqual([first, first, first]);
    const view = await engine.get("c");
    const lookup = view.steps.filter((s) => s.key === "lookup");
    expect(lookup).toHaveLength(1);
    expect(lookup[0]).toMatchObject({
      status: "failed",
      handled: true,
      error: { message: "card ending 4242 declined", code: "E_DECLINED", className: "CardDeclined" },
    });
    expect(lookup[0]!.error!.fields).toEqual({ declineCode: "insufficient_funds" });
    expect(lookup[0]!.error!.cause).toMatchObject({ name: "Error", message: "issuer said no" });
    expect(lookup[0]!.error!.stack).toMatch(/card ending 4242 declined\n\s+at /);
    expect(view.steps.find((s) => s.key === "finish" && s.status === "failed")?.handled).toBeUndefined();
    expect(view.attempts.map((a) => a.reused)).toEqual([[], ["lookup", "fallback-card", "charge"], ["lookup", "fallback-card", "charge", "confirmed"]]);
    await engine.close();
  });

  it("without the class declared, the replayed error is an Error with the same name, message, code and fields", async () => {
    let failFinish = true;
    const seen: unknown[] = [];
    const workflow = defineWorkflow({
      name: "no-class",
      async run(ctx) {
        try {
          await ctx.step("lookup", async () => {
            throw Object.assign(new CardDeclined("declined", "do_not_honor"), { code: "E_DECLINED" });
          });
        } catch (error) {
          const e = error as CardDeclined & { code?: string };
          seen.push([error instanceof Error, error instanceof CardDeclined, e.name, e.message, e.code, e.declineCode]);
        }
        await ctx.step("finish", async () => {
          if (failFinish) throw new Error("later");
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "n" });
    failFinish = false;
    expect(await engine.continue("n")).toMatchObject({ status: "completed" });
    expect(seen).toEqual([
      [true, true, "Error", "declined", "E_DECLINED", "do_not_honor"],
      [true, false, "Error", "declined", "E_DECLINED", "do_not_honor"],
    ]);
    await engine.close();
  });

  it("fromStep naming a handled failure redoes it, and everything after it", async () => {
    let lookupFails = true;
    const calls: string[] = [];
    const workflow = defineWorkflow({
      name: "redo-handled",
      async run(ctx) {
        const card = await ctx
          .step("lookup", async () => {
            calls.push("lookup");
            if (lookupFails) throw new Error("no card");
            return "card-1";
          })
          .catch(() => "fallback");
        return ctx.step("use", async () => (calls.push("use"), card));
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "f" })).toMatchObject({ status: "completed", value: "fallback" });
    lookupFails = false;
    expect(await engine.continue("f", { fromStep: "lookup" })).toMatchObject({ status: "completed", value: "card-1" });
    expect(calls).toEqual(["lookup", "use", "lookup", "use"]);
    await engine.close();
  });

  it("the failure that ended the attempt is redone, also when the handler rethrew it wrapped or stopped on it", async () => {
    for (const handler of ["rethrow", "wrap", "stop"] as const) {
      let fails = true;
      let calls = 0;
      const workflow = defineWorkflow({
        name: `ended-by-${handler}`,
        async run(ctx) {
          try {
            return await ctx.step("lookup", async () => {
              calls++;
              if (fails) throw new Error("service down");
              return "found";
            });
          } catch (error) {
            if (handler === "rethrow") throw error;
            if (handler === "wrap") throw new Error(`lookup failed: ${(error as Error).message}`);
            ctx.stop("lookup failed");
          }
        },
      });
      const engine = createEngine({ store: makeStore(), workflows: [workflow] });
      const first = await engine.start(workflow, undefined, { id: handler });
      expect(first.error).toMatchObject({ step: "lookup" });
      fails = false;
      expect(await engine.continue(handler), handler).toMatchObject({ status: "completed", value: "found" });
      expect(calls, handler).toBe(2);
      const view = await engine.get(handler);
      expect(view.steps.find((s) => s.status === "failed")?.handled, handler).toBeUndefined();
      await engine.close();
    }
  });

  it("a failure cut short by the attempt's deadline is redone; one the workflow handled before the deadline is not", async () => {
    const calls: string[] = [];
    let slow = true;
    // The deadline passes once "b" has begun (the clock is moved from inside it), however slowly
    // a loaded machine gets there.
    const clock = fakeClock();
    const workflow = defineWorkflow({
      name: "deadline",
      async run(ctx) {
        const a = await ctx.step("a", async () => (calls.push("a"), Promise.reject(new Error("a failed")))).catch(() => "a handled");
        const b = await ctx.step("b", async ({ signal }) => {
          calls.push("b");
          if (slow) {
            clock.advance(1_000);
            await new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted"))));
          }
          return "b done";
        });
        return [a, b];
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow], clock });
    expect(await engine.start(workflow, undefined, { id: "d", timeoutMs: 100 })).toMatchObject({ status: "timed-out" });
    slow = false;
    expect(await engine.continue("d")).toMatchObject({ status: "completed", value: ["a handled", "b done"] });
    expect(calls).toEqual(["a", "b", "b"]);
    await engine.close();
  });

  it("a wait's timeout the workflow caught is thrown again, not waited for again", async () => {
    let now = Date.parse("2026-12-01T00:00:00Z");
    let failFinish = true;
    const workflow = defineWorkflow({
      name: "wait-timeout",
      async run(ctx) {
        const answer = await ctx
          .waitForEvent("reply", { timeoutMs: 1000 })
          .catch((error) => (isSteplogError(error, "WAIT_TIMED_OUT") ? "no reply" : Promise.reject(error)));
        await ctx.step("finish", async () => {
          if (failFinish) throw new Error("later");
        });
        return answer;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow], clock: { now: () => now } });
    expect(await engine.start(workflow, undefined, { id: "w" })).toMatchObject({ status: "waiting" });
    now += 5000;
    expect(await engine.continue("w")).toMatchObject({ status: "failed", error: { step: "finish" } });
    failFinish = false;
    // A reply sent now is for nobody: the timeout was handled and stands.
    await engine.send("w", "reply", "late", { keep: true });
    expect(await engine.continue("w")).toMatchObject({ status: "completed", value: "no reply" });
    await engine.close();
  });
});

describe.each(STORES)("failures the workflow did not go on from (%s)", (_name, makeStore) => {
  it("allSettled, then the workflow throws its own error: the failed item is redone on continue", async () => {
    let down = true;
    const calls: string[] = [];
    const workflow = defineWorkflow({
      name: "settled-then-throw",
      async run(ctx) {
        const results = await Promise.allSettled(
          ["a", "b", "c"].map((id) =>
            ctx.step(`process:${id}`, async () => {
              calls.push(id);
              if (down && id === "b") throw new Error("down");
              return id;
            }),
          ),
        );
        if (results.some((r) => r.status === "rejected")) throw new Error("an item failed");
        return results.map((r) => (r as PromiseFulfilledResult<string>).value);
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "s" })).toMatchObject({ status: "failed" });
    expect((await engine.get("s")).steps.find((s) => s.key === "process:b")?.handled).toBeUndefined();
    down = false;
    expect(await engine.continue("s")).toMatchObject({ status: "completed", value: ["a", "b", "c"] });
    expect(calls.filter((c) => c === "b")).toHaveLength(2);
    await engine.close();
  });

  it("Promise.all: a sibling that fails after the first rejection is not handled either", async () => {
    let broken = true;
    const workflow = defineWorkflow({
      name: "all-siblings",
      async run(ctx) {
        return Promise.all([
          ctx.step("a", async () => {
            if (broken) throw new Error("a down");
            return "a";
          }),
          ctx.step("b", async () => {
            await new Promise((resolve) => setTimeout(resolve, 20));
            if (broken) throw new Error("b down");
            return "b";
          }),
        ]);
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "p" });
    expect((await engine.get("p")).steps.map((s) => [s.key, s.status, s.handled ?? false])).toEqual([
      ["a", "failed", false],
      ["b", "failed", false],
    ]);
    broken = false;
    expect(await engine.continue("p")).toMatchObject({ status: "completed", value: ["a", "b"] });
    await engine.close();
  });

  it("a handled failure whose message equals a later failure's is still handled: nothing after it is redone", async () => {
    let fails = true;
    const calls: string[] = [];
    const workflow = defineWorkflow({
      name: "same-message",
      async run(ctx) {
        await ctx.step("lookup", async () => (calls.push("lookup"), Promise.reject(new Error("ECONNRESET")))).catch(() => "fallback");
        await ctx.step("book", { effect: "compensatable", compensate: () => undefined }, async () => (calls.push("book"), "booking-1"));
        await ctx.step("notify", async () => {
          calls.push("notify");
          if (fails) throw new Error("ECONNRESET");
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "m" });
    fails = false;
    expect(await engine.continue("m")).toMatchObject({ status: "completed" });
    expect(calls).toEqual(["lookup", "book", "notify", "notify"]);
    await engine.close();
  });

  it("a caught STEP_TIMED_OUT comes back a StepTimedOutError; a handled failure is replayed by the saga too", async () => {
    const seen: boolean[] = [];
    let compensated = 0;
    const failLast = true;
    const workflow = defineWorkflow({
      name: "own-class",
      async run(ctx) {
        await ctx.step("book", { effect: "compensatable", compensate: () => void compensated++ }, async () => "booked");
        try {
          await ctx.step(
            "slow",
            { timeoutMs: 10 },
            ({ signal }) => new Promise((_r, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))),
          );
        } catch (error) {
          seen.push(error instanceof StepTimedOutError);
          if (!(error instanceof StepTimedOutError)) throw error;
        }
        await ctx.step("last", async () => {
          if (failLast) throw new Error("later");
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "o" })).toMatchObject({ status: "failed", error: { step: "last" } });
    expect(await engine.compensate("o")).toMatchObject({ status: "compensated" });
    expect(compensated).toBe(1);
    expect(seen).toEqual([true, true]);
    await engine.close();
  });
});

describe("testWorkflow and stored errors", () => {
  it("a retryIf that throws records the step failed with the function's error, the predicate's as its cause", async () => {
    const workflow = defineWorkflow({
      name: "retry-if-throws",
      async run(ctx) {
        return ctx.step(
          "flaky",
          {
            retry: {
              maxAttempts: 3,
              backoffMs: 1,
              retryIf: () => {
                throw new TypeError("predicate bug");
              },
            },
          },
          async () => {
            throw new Error("gateway 502");
          },
        );
      },
    });
    const engine = createEngine({ store: STORES[0]![1](), workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "r" });
    expect(result).toMatchObject({
      status: "failed",
      error: { message: "gateway 502", step: "flaky", cause: { name: "TypeError", message: "predicate bug" } },
    });
    const [row] = (await engine.get("r")).steps;
    expect(row).toMatchObject({ status: "failed", calls: 1, error: { message: "gateway 502", cause: { message: "predicate bug" } } });
    await engine.close();
  });

  it("a retryIf that throws leaves a cause of the function's error's own in place, recorded as thrown", async () => {
    const workflow = defineWorkflow({
      name: "retry-if-own-cause",
      async run(ctx) {
        return ctx.step(
          "flaky",
          {
            retry: {
              maxAttempts: 2,
              backoffMs: 1,
              retryIf: () => {
                throw new TypeError("predicate bug");
              },
            },
          },
          async () => {
            throw new Error("gateway 502", { cause: new Error("ECONNRESET") });
          },
        );
      },
    });
    const engine = createEngine({ store: STORES[0]![1](), workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "r" });
    expect(result.error).toMatchObject({ message: "gateway 502", cause: { message: "ECONNRESET" } });
    expect((await engine.get("r")).steps[0]!.error).toMatchObject({ cause: { message: "ECONNRESET" } });
    await engine.close();
  });

  it("an async retryIf is awaited: a promise of false does not retry", async () => {
    let calls = 0;
    const decided: number[] = [];
    const workflow = defineWorkflow({
      name: "retry-if-async",
      async run(ctx) {
        return ctx.step(
          "flaky",
          {
            retry: {
              maxAttempts: 5,
              backoffMs: 1,
              retryIf: async (_error, retry) => {
                await new Promise((resolve) => setTimeout(resolve, 5));
                decided.push(retry);
                return retry < 1;
              },
            },
          },
          async () => {
            calls++;
            throw new Error("nope");
          },
        );
      },
    });
    const engine = createEngine({ store: STORES[0]![1](), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "a" })).toMatchObject({ status: "failed" });
    expect(calls).toBe(2);
    expect(decided).toEqual([0, 1]);
    await engine.close();
  });

  it("a cause chain is kept a few levels deep, a stack and an error's fields within bounds, non-data fields left out", async () => {
    const workflow = defineWorkflow({
      name: "deep",
      async run(ctx) {
        return ctx.step("fail", async () => {
          let error = new Error("level 0");
          for (let i = 1; i <= 8; i++) error = new Error(`level ${i}`, { cause: error });
          throw Object.assign(error, { status: 503, body: { retryAfter: 2 }, socket: { destroy() {} }, huge: "x".repeat(20_000), when: new Date(0) });
        });
      },
    });
    const engine = createEngine({ store: STORES[0]![1](), workflows: [workflow] });
    const { error } = await engine.start(workflow, undefined, { id: "d" });
    expect(error!.fields).toEqual({ status: 503, body: { retryAfter: 2 } });
    let depth = 0;
    for (let e = error!.cause; e; e = e.cause) depth++;
    expect(depth).toBe(4);
    expect(error!.stack!.length).toBeLessThan(4100);
    await engine.close();
  });
});
