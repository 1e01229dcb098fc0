// Leases, fencing, recover() and the owner-gone rule, in one process with crafted owners.
import { spawn } from "node:child_process";
import fs from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { tmpDb } from "../helpers/tmp.js";
import { currentOwner, parseScope, scopeOf } from "../../src/ownership/owner.js";
import type { OwnerRow, Store } from "../../src/store/types.js";
import { STORES, withOverrides } from "../helpers/stores.js";

const noop = defineWorkflow({
  name: "noop",
  async run(ctx) {
    return ctx.step("only", async () => "done");
  },
});

/** A run left by some owner: attempt 1 with no ending, its lease expiring at `expiresAt`. */
async function leftBy(store: Store, id: string, owner: OwnerRow, expiresAt: number) {
  const now = Date.now();
  const lease = await store.createRun(
    {
      id,
      workflow: "noop",
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
    { runId: id, number: 1, ...owner, startedAt: now, endedAt: null, ending: null, fromStep: null, forced: false, error: null },
    { expiresAt, now },
  );
  if ("exists" in lease) throw new Error("exists");
  return lease;
}

function startTimeOf(pid: number): number {
  const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[19]);
}

const sleeper = spawn("sleep", ["60"], { stdio: "ignore" });
afterAll(() => sleeper.kill("SIGKILL"));

describe.each(STORES)("ownership (%s)", (_name, makeStore) => {
  const me = currentOwner();
  const hour = 3_600_000;

  it("recover() marks runs whose owner is gone interrupted, with an explanation, fences the dead owner out, and re-runs nothing", async () => {
    const store = makeStore();
    await leftBy(store, "dead-pid", { ...me, pid: 2 ** 22 + 17, processStart: 1 }, Date.now() + hour);
    await leftBy(store, "expired-elsewhere", { host: "another-host", bootId: "b", pid: 1, processStart: 1 }, Date.now() - 1);
    await leftBy(store, "live-elsewhere", { host: "another-host", bootId: "b", pid: 1, processStart: 1 }, Date.now() + hour);
    const engine = createEngine({ store, workflows: [noop] });
    expect((await engine.list({ status: "interrupted" })).map((r) => r.id).sort()).toEqual(["dead-pid", "expired-elsewhere"]);
    const found = await engine.recover();
    expect(found.map((r) => r.id).sort()).toEqual(["dead-pid", "expired-elsewhere"]);
    const dead = found.find((r) => r.id === "dead-pid")!;
    expect(dead).toMatchObject({ status: "interrupted", attempt: 1, workflow: "noop" });
    expect(dead.explanation).toMatch(/process \d+ on .* is gone.*engine\.continue\("dead-pid"\)/);
    expect(found.find((r) => r.id === "expired-elsewhere")!.explanation).toContain("lease expired");
    const view = await engine.get("dead-pid");
    expect(view).toMatchObject({ status: "interrupted", error: { name: "Interrupted" }, steps: [] });
    expect(view.attempts[0]!.ending).toBe("interrupted");
    // Another host's live lease is left alone.
    expect((await engine.get("live-elsewhere")).status).toBe("running");
    await expect(engine.continue("live-elsewhere")).rejects.toMatchObject({ code: "RUN_BUSY" });
    // A second recover finds nothing new; a continue goes on.
    expect(await engine.recover()).toEqual([]);
    expect(await engine.continue("dead-pid")).toMatchObject({ status: "completed", attempt: 2 });
  });

  it("pid reuse: a live pid with another start time is gone; the same start time is alive; an unknown start time counts as alive", async () => {
    const store = makeStore();
    const pid = sleeper.pid!;
    const start = startTimeOf(pid);
    await leftBy(store, "reused", { ...me, pid, processStart: start + 1 }, Date.now() + hour);
    await leftBy(store, "same", { ...me, pid, processStart: start }, Date.now() + hour);
    await leftBy(store, "unknown", { ...me, pid, processStart: null }, Date.now() + hour);
    const engine = createEngine({ store, workflows: [noop] });
    const found = await engine.recover();
    expect(found.map((r) => r.id)).toEqual(["reused"]);
    expect(found[0]!.explanation).toContain(`pid ${pid} now belongs to another process`);
    await expect(engine.continue("same")).rejects.toMatchObject({ code: "RUN_BUSY" });
    await expect(engine.continue("unknown")).rejects.toMatchObject({ code: "RUN_BUSY" });
  });

  it("a lease held by this very process but by no live attempt in it is gone", async () => {
    const store = makeStore();
    await leftBy(store, "mine", me, Date.now() + hour);
    const engine = createEngine({ store, workflows: [noop] });
    expect((await engine.get("mine")).status).toBe("interrupted");
    expect(await engine.continue("mine")).toMatchObject({ status: "completed" });
  });

  it("the engine's clock far ahead or behind decides nothing: a live pid holds its run, and a lease elsewhere is watched, not compared", async () => {
    const store = makeStore();
    const now = Date.now();
    await leftBy(store, "live-pid", { ...me, pid: sleeper.pid!, processStart: startTimeOf(sleeper.pid!) }, now + 30_000);
    const ahead = createEngine({ store, workflows: [noop], clock: { now: () => Date.now() + 2 * hour } });
    await expect(ahead.continue("live-pid")).rejects.toMatchObject({ code: "RUN_BUSY", message: expect.stringContaining("is alive") });
    expect((await ahead.get("live-pid")).status).toBe("running");
    // Another host's lease of 400 ms, renewed every 100 ms: the claimer watches it renew, whatever its clock says.
    const renewing = await leftBy(store, "renewing", { host: "another-host", bootId: "b", pid: 1, processStart: 1 }, Date.now() + 400);
    const renewer = setInterval(() => void store.renewLease(renewing, Date.now() + 400, Date.now()), 100);
    try {
      await expect(ahead.continue("renewing")).rejects.toMatchObject({ code: "RUN_BUSY" });
    } finally {
      clearInterval(renewer);
    }
    // Nobody renews it: taken over once this process has seen it unrenewed for its 400 ms, with a clock 2 h behind.
    // Promptly: not after the 2 h the clock is off, nor after a period of the claimer's own leases
    // (set to 100 s, under the longest a continue waits), so the bound can be generous.
    await leftBy(store, "abandoned", { host: "another-host", bootId: "b", pid: 1, processStart: 1 }, Date.now() + 400);
    const behind = createEngine({ store, workflows: [noop], clock: { now: () => Date.now() - 2 * hour }, leaseMs: 100_000 });
    const started = Date.now();
    expect(await behind.continue("abandoned")).toMatchObject({ status: "completed", attempt: 2 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("another boot on the same host is judged by lease expiry only", async () => {
    const store = makeStore();
    await leftBy(store, "old-boot-live", { ...me, bootId: "some-other-boot", pid: 2 ** 22 + 5 }, Date.now() + hour);
    await leftBy(store, "old-boot-expired", { ...me, bootId: "some-other-boot", pid: 2 ** 22 + 5 }, Date.now() - 1);
    const engine = createEngine({ store, workflows: [noop] });
    expect((await engine.recover()).map((r) => r.id)).toEqual(["old-boot-expired"]);
  });
});

describe("the recorded owner scope", () => {
  it("carries the pid namespace and the worker thread, and the thread even where there is no boot id", () => {
    expect(scopeOf("b00t", "4026531836", 0)).toBe("b00t pidns:4026531836");
    expect(scopeOf("b00t", "4026531836", 3)).toBe("b00t pidns:4026531836 thread:3");
    expect(scopeOf(null, null, 3)).toBe(" thread:3");
    expect(scopeOf(null, null, 0)).toBeNull();
    expect(parseScope("b00t pidns:4026531836 thread:3")).toEqual({ space: "b00t pidns:4026531836", thread: 3 });
    expect(parseScope(" thread:3")).toEqual({ space: null, thread: 3 });
    expect(parseScope("b00t")).toEqual({ space: "b00t", thread: 0 });
    expect(parseScope(null)).toEqual({ space: null, thread: 0 });
  });
});

describe("fencing", () => {
  it("an event loop held past the lease by a synchronous step does not lose the lease by itself: the overdue renewal decides", async () => {
    const workflow = defineWorkflow({
      name: "busy",
      async run(ctx) {
        await ctx.step("a", async () => 1);
        await new Promise((resolve) => setTimeout(resolve, 150)); // a renewal lands
        await ctx.step("busy", async () => {
          const end = Date.now() + 700;
          while (Date.now() < end); // blocks the event loop for more than two leases
          return 2;
        });
        await new Promise((resolve) => setTimeout(resolve, 50));
        return ctx.step("c", async () => 3);
      },
    });
    // A store whose renewal answers on a later turn of the event loop (SQLite's group commit).
    const engine = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [workflow], leaseMs: 300 });
    expect(await engine.start(workflow, undefined, { id: "b" })).toMatchObject({ status: "completed", value: 3 });
    await engine.close();
  });

  it("a renewal that never returns (a network partition): when the lease runs out the attempt stops, aborting its step's signal, and ends with LEASE_LOST", async () => {
    const inner = memoryStore();
    // The store hangs on renewals, as a query over a dropped network path does.
    const partitioned = withOverrides(inner, { renewLease: () => new Promise<void>(() => {}) });
    let aborted: unknown;
    const workflow = defineWorkflow({
      name: "partitioned",
      run: (ctx) =>
        ctx.step(
          "long",
          ({ signal }) =>
            new Promise((_resolve, reject) =>
              signal.addEventListener("abort", () => {
                aborted = signal.reason;
                reject(new Error("stopped by abort"));
              }),
            ),
        ),
    });
    const engine = createEngine({ store: partitioned, workflows: [workflow], leaseMs: 300 });
    const started = Date.now();
    const result = await engine.start(workflow, undefined, { id: "p" });
    expect(result).toMatchObject({ status: "failed", error: { code: "LEASE_LOST" } });
    expect(result.error!.message).toContain("expired while a renewal was still waiting for the store");
    expect(aborted).toMatchObject({ code: "LEASE_LOST" });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("an attempt that finds its lease taken stops starting steps, aborts ctx.signal, and ends with LEASE_LOST; nothing more is recorded", async () => {
    const store = memoryStore();
    let aborted: unknown;
    let secondStepRan = false;
    const workflow = defineWorkflow({
      name: "fenced",
      async run(ctx) {
        await ctx.step(
          "long",
          ({ signal }) =>
            new Promise((_resolve, reject) =>
              signal.addEventListener("abort", () => {
                aborted = signal.reason;
                reject(new Error("stopped by abort"));
              }),
            ),
        );
        await ctx.step("after", async () => {
          secondStepRan = true;
        });
      },
    });
    const engine = createEngine({ store, workflows: [workflow], leaseMs: 60 });
    const running = engine.start(workflow, undefined, { id: "r" });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Another owner takes the run: the epoch moves on.
    await store.updateRun("r", () => ({ fenceOut: { now: Date.now() }, result: undefined }));
    const result = await running;
    expect(result).toMatchObject({ status: "failed", error: { code: "LEASE_LOST" } });
    expect(aborted).toMatchObject({ code: "LEASE_LOST" });
    expect(secondStepRan).toBe(false);
    const stored = (await store.loadRun("r"))!;
    expect(stored.steps.map((s) => [s.key, s.status])).toEqual([["long", "intended"]]);
    expect(stored.attempts[0]!.ending).toBeNull();
  });

  it("leases are renewed while an attempt runs (a third of leaseMs)", async () => {
    const store = memoryStore();
    const expiries: number[] = [];
    const workflow = defineWorkflow({
      name: "renewed",
      async run(ctx) {
        for (let i = 0; i < 4; i++) {
          await ctx.step("tick", () => new Promise((resolve) => setTimeout(resolve, 40)));
          expiries.push((await store.loadRun("r"))!.lease!.expiresAt);
        }
      },
    });
    const engine = createEngine({ store, workflows: [workflow], leaseMs: 90 });
    expect((await engine.start(workflow, undefined, { id: "r" })).status).toBe("completed");
    expect(new Set(expiries).size).toBeGreaterThan(2);
  });
});

describe("dead letters (in one process)", () => {
  it("the attempt that reaches maxAttempts ends with runStatus dead-lettered; completed, escalated and waiting never count", async () => {
    let fail = 3;
    const workflow = defineWorkflow({
      name: "poison",
      maxAttempts: 3,
      async run(ctx) {
        return ctx.step("x", async () => {
          if (fail-- > 0) throw new Error("poison");
          return "ok";
        });
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "failed", runStatus: "failed" });
    expect(await engine.continue("r")).toMatchObject({ status: "failed", runStatus: "failed" });
    expect(await engine.continue("r")).toMatchObject({ status: "failed", runStatus: "dead-lettered", attempt: 3 });
    await expect(engine.continue("r")).rejects.toMatchObject({ code: "DEAD_LETTERED" });
    expect((await engine.list({ status: "dead-lettered" })).map((r) => r.id)).toEqual(["r"]);
    expect(await engine.continue("r", { force: true })).toMatchObject({ status: "completed", attempt: 4 });
    // A completed run is never dead-lettered, and its fromStep redos do not count.
    for (let i = 0; i < 4; i++) expect(await engine.continue("r", { fromStep: "x" })).toMatchObject({ status: "completed" });
  });
});
