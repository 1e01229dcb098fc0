// Runs that wait: durable sleep, events, approvals and the worker, with a fake clock (no real sleeps).
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createEngine, defineWorkflow, type Engine, type WorkflowContext } from "../../src/entries/index.js";
import { fakeClock } from "../../src/entries/testing.js";
import { STORES, withOverrides } from "../helpers/stores.js";

/** Run a worker until `until` says so (or a few seconds pass), then stop it. */
async function workUntil(engine: Engine, until: () => Promise<boolean> | boolean, options: { concurrency?: number; pollMs?: number } = {}) {
  const controller = new AbortController();
  const worker = engine.work({ pollMs: 10, ...options, signal: controller.signal });
  const started = Date.now();
  while (!(await until()) && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 5));
  controller.abort();
  return worker;
}

describe.each(STORES)("runs that wait (%s)", (_name, makeStore) => {
  it("ctx.sleep parks the run (attempt ends waiting, lease released); it goes on once its wall-clock time is due", async () => {
    const clock = fakeClock();
    const calls: string[] = [];
    const workflow = defineWorkflow({
      name: "sleepy",
      async run(ctx) {
        await ctx.step("before", async () => calls.push("before"));
        await ctx.sleep("cool-off", 3_600_000);
        return ctx.step("after", async () => calls.push("after"));
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow], clock });
    const first = await engine.start(workflow, undefined, { id: "s" });
    const until = clock.now() + 3_600_000;
    expect(first).toMatchObject({ status: "waiting", runStatus: "waiting", waitingFor: { kind: "sleep", step: "cool-off", until } });
    const parked = await engine.get("s");
    expect(parked).toMatchObject({ status: "waiting", waitingFor: { kind: "sleep", until }, wakeAt: new Date(until).toISOString() });
    expect(parked.steps.map((s) => [s.key, s.status])).toEqual([
      ["before", "succeeded"],
      ["cool-off", "intended"],
    ]);
    // A continue before it is due parks again, with the same wake time.
    clock.advance(1000);
    expect(await engine.continue("s")).toMatchObject({ status: "waiting", waitingFor: { until } });
    // A worker leaves it alone until it is due.
    const idleSince = Date.now();
    const idle = await workUntil(engine, () => Date.now() - idleSince > 60);
    expect(idle.attempts).toEqual([]);
    clock.set(until);
    const summary = await workUntil(engine, async () => (await engine.get("s")).status === "completed");
    expect(summary.attempts.map((a) => a.status)).toEqual(["completed"]);
    expect(calls).toEqual(["before", "after"]);
    // Waiting attempts never count toward maxAttempts.
    expect((await engine.list())[0]).toMatchObject({ status: "completed", attemptCount: 3 });
  });

  it("waitForEvent: an event sent after the wait began wakes an in-process worker at once; the payload is checked by the schema", async () => {
    const workflow = defineWorkflow({
      name: "approval-by-event",
      async run(ctx) {
        const draft = await ctx.step("draft", async () => "draft v1");
        const verdict = await ctx.waitForEvent("review", { schema: z.object({ ok: z.boolean(), by: z.string() }) });
        return ctx.step("publish", async () => `${draft} published: ${verdict.ok} by ${verdict.by}`);
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "e" })).toMatchObject({ status: "waiting", waitingFor: { kind: "event", event: "review" } });
    const controller = new AbortController();
    // A long poll: only the send can wake it in time.
    const worker = engine.work({ pollMs: 60_000, signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await engine.send("e", "review", { ok: true, by: "ana" });
    const started = Date.now();
    while ((await engine.get("e")).status !== "completed" && Date.now() - started < 3000) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    expect((await worker).attempts).toMatchObject([{ status: "completed", value: "draft v1 published: true by ana" }]);
    const steps = (await engine.get("e")).steps;
    expect(steps.find((s) => s.key === "review")).toMatchObject({ status: "succeeded", value: { ok: true, by: "ana" } });
  });

  it("an event for a run that does not wait for it is refused, or kept for a later wait when asked; events are consumed once, in order", async () => {
    const got: unknown[] = [];
    const workflow = defineWorkflow({
      name: "items",
      async run(ctx) {
        got.push(await ctx.waitForEvent("start"));
        got.push(await ctx.waitForEvent("item"));
        got.push(await ctx.waitForEvent("item"));
        return got.length;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await expect(engine.send("nope", "start", 1)).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
    await engine.start(workflow, undefined, { id: "i" });
    const refused = await engine.send("i", "item", "early").catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "NOT_WAITING" });
    expect((refused as Error).message).toContain(`waits for event "start"`);
    expect((refused as Error).message).toContain("{ keep: true }");
    // Kept for later: before the waits for it begin.
    await engine.send("i", "item", "first", { keep: true });
    await engine.send("i", "item", "second", { keep: true });
    await engine.send("i", "start", "go");
    const result = await engine.continue("i");
    expect(result).toMatchObject({ status: "completed", value: 3 });
    expect(got).toEqual(["go", "first", "second"]);
    const view = await engine.get("i");
    expect(view.steps.map((s) => [s.key, s.value])).toEqual([
      ["start", "go"],
      ["item", "first"],
      ["item#2", "second"],
    ]);
  });

  it("a wait's timeout throws WAIT_TIMED_OUT inside the workflow once its time is due", async () => {
    const clock = fakeClock();
    const workflow = defineWorkflow({
      name: "timeout",
      async run(ctx) {
        try {
          return await ctx.waitForEvent("reply", { timeoutMs: 60_000 });
        } catch (error) {
          return `gave up: ${(error as { code: string }).code}`;
        }
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow], clock });
    expect(await engine.start(workflow, undefined, { id: "t" })).toMatchObject({ status: "waiting", waitingFor: { until: clock.now() + 60_000 } });
    clock.advance(60_000);
    const summary = await workUntil(engine, async () => (await engine.get("t")).status === "completed");
    expect(summary.attempts).toMatchObject([{ status: "completed", value: "gave up: WAIT_TIMED_OUT" }]);
    expect((await engine.get("t")).steps[0]).toMatchObject({ key: "reply", status: "failed", error: { code: "WAIT_TIMED_OUT" } });
  });

  it("a payload the wait's schema rejects fails the wait with EVENT_REJECTED", async () => {
    const workflow = defineWorkflow({
      name: "typed-event",
      async run(ctx) {
        return ctx.waitForEvent("n", { schema: z.number() });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "x" });
    await engine.send("x", "n", "not a number");
    expect(await engine.continue("x")).toMatchObject({ status: "failed", error: { code: "EVENT_REJECTED", step: "n" } });
  });

  it("approval: true parks the run before the step runs until approve(); reject() ends it stopped", async () => {
    let sent = 0;
    const workflow = defineWorkflow({
      name: "send-email",
      async run(ctx) {
        const draft = await ctx.step("draft", async () => "Hello!");
        return ctx.step("send", { effect: "irreversible", approval: true }, async () => {
          sent++;
          return `sent ${draft}`;
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "a" })).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: "send" } });
    expect((await engine.get("a")).steps.map((s) => s.key)).toEqual(["draft"]);
    await expect(engine.approve("a", "draft")).rejects.toMatchObject({ code: "NOT_WAITING" });
    await engine.approve("a", "send", { by: "ana" });
    const summary = await workUntil(engine, async () => (await engine.get("a")).status === "completed");
    expect(summary.attempts).toMatchObject([{ status: "completed", value: "sent Hello!" }]);
    expect(sent).toBe(1);

    await engine.start(workflow, undefined, { id: "b" });
    await engine.reject("b", "send", { by: "bo", reason: "wrong tone" });
    const rejected = await engine.get("b");
    expect(rejected).toMatchObject({ status: "stopped", error: { code: "STOPPED", step: "send" } });
    expect(rejected.error!.message).toContain("rejected by bo: wrong tone");
    expect(sent).toBe(1);
  });

  it("a worker with concurrency 4 over 50 ready runs completes each exactly once, never more than 4 at a time", async () => {
    const clock = fakeClock();
    const after = new Map<string, number>();
    let running = 0;
    let most = 0;
    const workflow = defineWorkflow({
      name: "batch",
      async run(ctx) {
        await ctx.sleep("wait", 1000);
        return ctx.step("work", async () => {
          running++;
          most = Math.max(most, running);
          await new Promise((resolve) => setTimeout(resolve, 5));
          running--;
          after.set(ctx.runId, (after.get(ctx.runId) ?? 0) + 1);
          return ctx.runId;
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow], clock });
    for (let i = 0; i < 50; i++) await engine.start(workflow, undefined, { id: `run-${String(i).padStart(2, "0")}` });
    clock.advance(1000);
    const summary = await workUntil(engine, async () => (await engine.list({ status: "completed" })).length === 50, { concurrency: 4 });
    expect(summary.attempts).toHaveLength(50);
    expect(after.size).toBe(50);
    expect([...after.values()].every((n) => n === 1)).toBe(true);
    expect(most).toBeLessThanOrEqual(4);
    expect(most).toBeGreaterThan(1);
  });

  it("a parked run reuses its succeeded steps whatever the version: a deploy while a run waits is normal", async () => {
    const store = makeStore();
    const calls: string[] = [];
    const v1 = defineWorkflow({
      name: "deploy",
      version: "1.0.0",
      async run(ctx) {
        await ctx.step("plan", async () => calls.push("plan v1"));
        return ctx.waitForEvent("go");
      },
    });
    await createEngine({ store, workflows: [v1] }).start(v1, undefined, { id: "d" });
    const v2 = defineWorkflow({
      name: "deploy",
      version: "2.0.0",
      async run(ctx) {
        await ctx.step("plan", async () => calls.push("plan v2"));
        return ctx.waitForEvent("go");
      },
    });
    const engine = createEngine({ store, workflows: [v2] });
    await engine.send("d", "go", "now");
    expect(await engine.continue("d")).toMatchObject({ status: "completed", value: "now" });
    expect(calls).toEqual(["plan v1"]);
  });

  it("a worker picks up interrupted runs only for workflows with autoResume, and such resumes count against maxAttempts", async () => {
    const store = makeStore();
    let crashes = 0;
    const make = (autoResume: boolean, name: string) =>
      defineWorkflow({
        name,
        autoResume,
        maxAttempts: 2,
        async run(ctx) {
          return ctx.step("x", async () => {
            if (crashes++ < 10) throw new Error("boom");
            return "ok";
          });
        },
      });
    const auto = make(true, "auto");
    const manual = make(false, "manual");
    const engine = createEngine({ store, workflows: [auto, manual] });
    // Leave both runs interrupted: an attempt with no ending whose owner is gone.
    for (const [id, name] of [
      ["a", "auto"],
      ["m", "manual"],
    ] as const) {
      const now = Date.now();
      await store.createRun(
        {
          id,
          workflow: name,
          version: null,
          args: '{"$type":"undefined"}',
          status: "running",
          attempts: 1,
          budgetUsed: 1,
          source: null,
          deadline: null,
          value: null,
          error: null,
          waitingFor: null,
          wakeAt: null,
          parent: null,
          createdAt: now,
          updatedAt: now,
        },
        {
          runId: id,
          number: 1,
          host: "gone-host",
          bootId: null,
          pid: 1,
          processStart: null,
          startedAt: now,
          endedAt: null,
          ending: null,
          fromStep: null,
          forced: false,
          error: null,
        },
        { expiresAt: 0, now },
      );
    }
    const summary = await workUntil(engine, async () => (await engine.get("a")).status === "dead-lettered");
    expect(summary.attempts.map((a) => [a.id, a.status, a.runStatus])).toEqual([["a", "failed", "dead-lettered"]]);
    expect((await engine.get("m")).status).toBe("interrupted");
  });

  it("work() validates its options", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [] });
    await expect(engine.work({ concurrency: 0 })).rejects.toMatchObject({ code: "INVALID_OPTION" });
  });
});

/** Long enough that the sleep parks the run (a shorter one may be over before it parks). */
const NAP_MS = 60;

describe("the worker loop: what it picks up", () => {
  it.each(STORES)(
    "a rejected approval, then continue: the run parks on the approval again and is not due (no worker loop on it) (%s)",
    async (_name, makeStore) => {
      let sent = 0;
      const workflow = defineWorkflow({ name: "ask", run: (ctx) => ctx.step("deploy", { approval: true }, async () => void sent++) });
      const engine = createEngine({ store: makeStore(), workflows: [workflow] });
      expect(await engine.start(workflow, undefined, { id: "a" })).toMatchObject({ status: "waiting" });
      await engine.reject("a", "deploy", { reason: "not yet" });
      expect(await engine.continue("a")).toMatchObject({ status: "waiting" });
      expect((await engine.store.loadRun("a"))!.run.wakeAt).toBeNull();
      const controller = new AbortController();
      const worker = engine.work({ pollMs: 20, signal: controller.signal });
      await new Promise((resolve) => setTimeout(resolve, 300));
      controller.abort();
      expect((await worker).attempts).toEqual([]);
      expect(sent).toBe(0);
      await engine.approve("a", "deploy");
      expect(await engine.continue("a")).toMatchObject({ status: "completed" });
      expect(sent).toBe(1);
    },
  );

  it("due runs of workflows this worker does not have do not hide its own", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const store = memoryStore();
    const nap = (name: string) => defineWorkflow({ name, run: async (ctx) => (await ctx.sleep("nap", NAP_MS), name) });
    const [other, mine] = [nap("other-service"), nap("mine")];
    const elsewhere = createEngine({ store, workflows: [other] });
    for (let i = 0; i < 20; i++) await elsewhere.start(other, undefined, { id: `o${i}` });
    const engine = createEngine({ store, workflows: [mine] });
    await engine.start(mine, undefined, { id: "m" });
    await new Promise((resolve) => setTimeout(resolve, NAP_MS + 20)); // parked, then due
    await workUntil(engine, async () => (await engine.get("m")).status === "completed");
    expect((await engine.get("m")).status).toBe("completed");
    expect((await engine.get("o0")).status).toBe("waiting");
  });

  it("a run it could not claim is tried again after pollMs, even while the worker keeps being woken", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const { wakeWorkers } = await import("../../src/engine/worker.js");
    const inner = memoryStore();
    let refusals = 0;
    // The first claim of run "x" is lost (another worker got there first, say).
    const racing = withOverrides(inner, {
      claimRun: (original, runId, decide) => (runId === "x" && refusals++ === 0 ? Promise.reject(new Error("lost the race")) : original(runId, decide)),
    });
    const workflow = defineWorkflow({ name: "nap", run: async (ctx) => (await ctx.sleep("nap", NAP_MS), "done") });
    const engine = createEngine({ store: racing, workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "x" });
    await new Promise((resolve) => setTimeout(resolve, NAP_MS + 20)); // parked, then due
    const waking = setInterval(wakeWorkers, 20);
    try {
      await workUntil(engine, async () => (await engine.get("x")).status === "completed", { pollMs: 200 });
    } finally {
      clearInterval(waking);
    }
    expect(refusals).toBeGreaterThanOrEqual(2);
    expect((await engine.get("x")).status).toBe("completed");
  });

  it("with concurrency 1, a ready run it cannot take does not hold up the next one", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const { CodecKeyMissingError } = await import("../../src/base/errors.js");
    const inner = memoryStore();
    const blocked = withOverrides(inner, {
      claimRun: (original, runId, decide) => (runId === "bad" ? Promise.reject(new CodecKeyMissingError("k2", ["k1"], { runId })) : original(runId, decide)),
    });
    const workflow = defineWorkflow({ name: "nap", run: async (ctx) => (await ctx.sleep("nap", NAP_MS), "done") });
    const engine = createEngine({ store: blocked, workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "bad" }); // the older due run
    await new Promise((resolve) => setTimeout(resolve, NAP_MS + 20)); // parked, then due
    await engine.start(workflow, undefined, { id: "good" });
    await new Promise((resolve) => setTimeout(resolve, NAP_MS + 20)); // parked, then due
    const onWarning = () => {};
    process.on("warning", onWarning);
    try {
      await workUntil(engine, async () => (await engine.get("good")).status === "completed", { concurrency: 1, pollMs: 1000 });
    } finally {
      process.off("warning", onWarning);
    }
    expect((await engine.get("good")).status).toBe("completed");
    expect((await engine.get("bad")).status).toBe("waiting");
  });

  it("a listing that fails once does not stop the worker: it warns and looks again at its next poll", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const inner = memoryStore();
    let failures = 0;
    const flaky = withOverrides(inner, {
      listRuns: (original, filter) => (failures++ === 0 ? Promise.reject(new Error("EMFILE: too many open files")) : original(filter)),
    });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on("warning", onWarning);
    const workflow = defineWorkflow({ name: "nap", run: async (ctx) => (await ctx.sleep("nap", NAP_MS), "done") });
    const engine = createEngine({ store: flaky, workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "y" });
    try {
      const summary = await workUntil(engine, async () => (await engine.get("y")).status === "completed", { pollMs: 30 });
      expect(summary.attempts.map((a) => [a.id, a.status])).toEqual([["y", "completed"]]);
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.some((w) => w.includes("could not list the ready runs (EMFILE: too many open files)"))).toBe(true);
  });
});

describe("waiting: edges", () => {
  it("a worker does not spin on runs it cannot claim (a foreign workflow's due run, a busy autoResume run)", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const inner = memoryStore();
    let claims = 0;
    const store = withOverrides(inner, { claimRun: (original, runId, decide) => (claims++, original(runId, decide)) });
    const foreign = defineWorkflow({
      name: "foreign",
      async run(ctx) {
        return ctx.sleep("s", 0 + 1);
      },
    });
    await createEngine({ store, workflows: [foreign] }).start(foreign, undefined, { id: "f" });
    const busy = defineWorkflow({
      name: "busy",
      autoResume: true,
      async run(ctx) {
        return ctx.step("hang", () => new Promise(() => {}));
      },
    });
    const owner = createEngine({ store, workflows: [busy] });
    void owner.start(busy, undefined, { id: "b" });
    await new Promise((resolve) => setTimeout(resolve, 10));
    claims = 0;
    const worker = createEngine({ store, workflows: [busy] });
    const controller = new AbortController();
    const running = worker.work({ pollMs: 50, signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 300));
    controller.abort();
    expect((await running).attempts).toEqual([]);
    // One try per poll at most (about 6 polls), never thousands.
    expect(claims).toBeLessThanOrEqual(10);
  });

  it("a send through one engine wakes a worker of another engine in the same process", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const store = memoryStore();
    const workflow = defineWorkflow({
      name: "woken",
      async run(ctx) {
        return ctx.waitForEvent("go");
      },
    });
    const a = createEngine({ store, workflows: [workflow] });
    const b = createEngine({ store, workflows: [workflow] });
    await a.start(workflow, undefined, { id: "w" });
    const controller = new AbortController();
    const worker = b.work({ pollMs: 60_000, signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await a.send("w", "go", 1);
    const started = Date.now();
    while ((await a.get("w")).status !== "completed" && Date.now() - started < 2000) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    expect((await worker).attempts).toMatchObject([{ status: "completed", value: 1 }]);
  });

  it("close() stops a worker; work() after close rejects with ENGINE_CLOSED", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const engine = createEngine({ store: memoryStore(), workflows: [] });
    const worker = engine.work({ pollMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 10));
    await engine.close();
    expect(await worker).toEqual({ attempts: [] });
    await expect(engine.work()).rejects.toMatchObject({ code: "ENGINE_CLOSED" });
  });

  it("an event named like steplog's own (steplog:approval:<step>) cannot be sent: it would approve the step", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    let sent = 0;
    const workflow = defineWorkflow({
      name: "gated",
      async run(ctx) {
        return ctx.step("deploy", { approval: true }, async () => void sent++);
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "g" })).toMatchObject({ status: "waiting" });
    const refused = await engine.send("g", "steplog:approval:deploy", { approved: true }, { keep: true }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "INVALID_NAME" });
    expect((refused as Error).message).toContain("engine.approve");
    expect(await engine.continue("g")).toMatchObject({ status: "waiting" });
    expect(sent).toBe(0);
    // Nor can a workflow wait for one: it could never be sent.
    const waits = defineWorkflow({ name: "waits-reserved", run: (ctx) => ctx.waitForEvent("steplog:approval:x") });
    const other = createEngine({ store: memoryStore(), workflows: [waits] });
    expect(await other.start(waits, undefined, { id: "w" })).toMatchObject({ status: "failed", error: { code: "INVALID_NAME" } });
  });

  it("an approval is answered once: a second approve, or a reject after it, is refused", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const workflow = defineWorkflow({
      name: "once",
      async run(ctx) {
        return ctx.step("send", { approval: true }, async () => "sent");
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "a" });
    await engine.approve("a", "send");
    const again = await engine.approve("a", "send").catch((e: unknown) => e);
    expect(again).toMatchObject({ code: "NOT_WAITING" });
    expect((again as Error).message).not.toContain("keep: true");
    await expect(engine.reject("a", "send")).rejects.toMatchObject({ code: "NOT_WAITING" });
    expect(await engine.continue("a")).toMatchObject({ status: "completed", value: "sent" });
  });

  it("a reused event payload goes through the wait's schema as it is now", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const got: unknown[] = [];
    let fail = true;
    const workflow = defineWorkflow({
      name: "coerced",
      async run(ctx) {
        const n = await ctx.waitForEvent("n", { schema: z.coerce.number() });
        got.push(n);
        if (fail) throw new Error("after the wait");
        return n;
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "c" });
    await engine.send("c", "n", "5");
    await engine.continue("c");
    fail = false;
    expect(await engine.continue("c")).toMatchObject({ status: "completed", value: 5 });
    expect(got).toEqual([5, 5]);
  });

  it("bad wait arguments are refused: sleep(NaN), a negative sleep, a '#' in a wait's name", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    for (const [name, body] of [
      ["nan", (ctx: WorkflowContext) => ctx.sleep("s", Number.NaN)],
      ["negative", (ctx: WorkflowContext) => ctx.sleep("s", -5)],
      ["hash", (ctx: WorkflowContext) => ctx.waitForEvent("a#2")],
      ["timeout", (ctx: WorkflowContext) => ctx.waitForEvent("a", { timeoutMs: -1 })],
    ] as const) {
      const workflow = defineWorkflow({
        name,
        async run(ctx) {
          return body(ctx);
        },
      });
      const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
      const result = await engine.start(workflow, undefined, { id: name });
      expect(result.status, name).toBe("failed");
      expect(["INVALID_OPTION", "INVALID_NAME"]).toContain(result.error!.code);
    }
  });
});

describe("deadlines are times of day", () => {
  it("a run deadline passes when the wall clock passes it, even if no monotonic time went by (a machine that slept)", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const clock = fakeClock();
    const workflow = defineWorkflow({
      name: "sleepy-laptop",
      async run(ctx) {
        return ctx.step("long", ({ signal }) => new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason))));
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow], clock });
    const running = engine.start(workflow, undefined, { id: "d", timeoutMs: 3_600_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    clock.advance(3_600_000); // the lid was closed for an hour
    const started = Date.now();
    expect(await running).toMatchObject({ status: "timed-out", error: { code: "RUN_TIMED_OUT", step: "long" } });
    expect(Date.now() - started).toBeLessThan(2500);
  });
});
