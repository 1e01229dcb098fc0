// Schedules: every worker starts exactly one run per tick of a workflow's cron, with an id derived
// from the tick; ticks missed while no worker ran are caught up by catchUp. On every store, with
// several engines (and, for the stores that have them, several store objects on the same data)
// and a fake clock moved by hand.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createEngine, defineWorkflow, type Engine, type WorkSummary } from "../../src/entries/index.js";
import { fakeClock } from "../../src/entries/testing.js";
import type { Store } from "../../src/store/types.js";
import { EVERY_STORE, sameDataStores } from "../helpers/stores.js";
import { until } from "../helpers/until.js";

const at = (hour: number, minute = 0, second = 0) => Date.UTC(2030, 0, 1, hour, minute, second);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A worker on `engine` until stop() (which resolves with its summary). */
function startWorker(engine: Engine, options: { concurrency?: number } = {}) {
  const controller = new AbortController();
  const done = engine.work({ pollMs: 10, ...options, signal: controller.signal });
  return {
    stop: async (): Promise<WorkSummary> => {
      controller.abort();
      return done;
    },
  };
}

const ids = async (engine: Engine) => (await engine.list()).map((r) => r.id).sort();

/** Long enough for every worker to have looked several times (pollMs 10). */
const SEVERAL_LOOKS = 120;

describe.each(EVERY_STORE)("schedules (%s)", (name, make) => {
  it("starts one run per tick, with the id <workflow>@<tick as ISO UTC, to the minute> and args undefined", async () => {
    const clock = fakeClock(at(9, 30));
    const calls: Array<{ runId: string; args: unknown }> = [];
    const hourly = defineWorkflow({
      name: "hourly",
      schedule: { cron: "0 * * * *" },
      async run(ctx, args) {
        return ctx.step("report", async ({ runId }) => {
          calls.push({ runId, args });
          return `report ${runId}`;
        });
      },
    });
    const engine = createEngine({ store: make(), workflows: [hourly], clock });
    const worker = startWorker(engine);
    try {
      // A schedule with no run yet has nothing to catch up: the 09:00 tick is not started.
      await sleep(SEVERAL_LOOKS);
      expect(await ids(engine)).toEqual([]);

      clock.set(at(10));
      await until("the 10:00 run", async () => (await engine.list({ status: "completed" })).length === 1);
      clock.set(at(10, 59, 59) + 999);
      await sleep(SEVERAL_LOOKS);
      expect(await ids(engine)).toEqual(["hourly@2030-01-01T10:00Z"]);

      clock.set(at(11, 0, 30));
      await until("the 11:00 run", async () => (await engine.list({ status: "completed" })).length === 2);
      await sleep(SEVERAL_LOOKS);
    } finally {
      const summary = await worker.stop();
      expect(summary.attempts.map((a) => [a.id, a.status, a.value])).toEqual([
        ["hourly@2030-01-01T10:00Z", "completed", "report hourly@2030-01-01T10:00Z"],
        ["hourly@2030-01-01T11:00Z", "completed", "report hourly@2030-01-01T11:00Z"],
      ]);
    }
    expect(calls).toEqual([
      { runId: "hourly@2030-01-01T10:00Z", args: undefined },
      { runId: "hourly@2030-01-01T11:00Z", args: undefined },
    ]);
    const run = await engine.get("hourly@2030-01-01T10:00Z");
    expect(run).toMatchObject({ workflow: "hourly", status: "completed", args: undefined, attempts: [{ number: 1 }] });
    await engine.close();
  });

  it("a seconds field names the second; schedule.args may be a function of the tick, checked by the args schema", async () => {
    const clock = fakeClock(at(10, 0, 7));
    const seen: unknown[] = [];
    const often = defineWorkflow({
      name: "often",
      args: z.object({ tick: z.string() }),
      schedule: { cron: "*/15 * * * * *", args: (tick) => ({ tick: tick.toISOString() }) },
      async run(_ctx, args) {
        seen.push(args);
        return args.tick;
      },
    });
    const engine = createEngine({ store: make(), workflows: [often], clock });
    const worker = startWorker(engine);
    try {
      await sleep(30);
      clock.set(at(10, 0, 15) + 400);
      await until("the 10:00:15 run", async () => (await engine.list({ status: "completed" })).length === 1);
      clock.set(at(10, 0, 30));
      await until("the 10:00:30 run", async () => (await engine.list({ status: "completed" })).length === 2);
    } finally {
      await worker.stop();
    }
    expect(await ids(engine)).toEqual(["often@2030-01-01T10:00:15Z", "often@2030-01-01T10:00:30Z"]);
    expect(seen).toEqual([{ tick: "2030-01-01T10:00:15.000Z" }, { tick: "2030-01-01T10:00:30.000Z" }]);
    expect((await engine.get("often@2030-01-01T10:00:30Z")).args).toEqual({ tick: "2030-01-01T10:00:30.000Z" });
    await engine.close();
  });

  it("three engines, each with a worker, on one store's data: each tick has exactly one run, its step called once, after a gap too", async () => {
    const clock = fakeClock(at(0, 30));
    const handle = sameDataStores(name, make);
    const calls = new Map<string, number>();
    // One definition per engine, as separate processes would have.
    const definition = () =>
      defineWorkflow({
        name: "shared",
        schedule: { cron: "0 * * * *", catchUp: "all" },
        async run(ctx) {
          return ctx.step("effect", async ({ runId }) => calls.set(runId, (calls.get(runId) ?? 0) + 1).get(runId));
        },
      });
    const engines = [0, 1, 2].map(() => createEngine({ store: handle(), workflows: [definition()], clock }));
    let workers = engines.map((e) => startWorker(e, { concurrency: 2 }));
    const summaries: WorkSummary[] = [];
    const completed = async () => (await engines[0]!.list({ status: "completed" })).length;
    try {
      await sleep(30);
      for (const [i, hour] of [1, 2, 3].entries()) {
        clock.set(at(hour));
        await until(`the ${hour}:00 run`, async () => (await completed()) === i + 1);
      }
      await sleep(SEVERAL_LOOKS);
      // No worker runs from 03:30 to 08:30; then all three come back at once.
      summaries.push(...(await Promise.all(workers.map((w) => w.stop()))));
      clock.set(at(8, 30));
      workers = engines.map((e) => startWorker(e, { concurrency: 2 }));
      await until("the five missed ticks", async () => (await completed()) === 8);
      await sleep(SEVERAL_LOOKS);
    } finally {
      summaries.push(...(await Promise.all(workers.map((w) => w.stop()))));
    }
    const expected = [1, 2, 3, 4, 5, 6, 7, 8].map((h) => `shared@2030-01-01T0${h}:00Z`);
    expect(await ids(engines[1]!)).toEqual(expected);
    expect(Object.fromEntries(calls)).toEqual(Object.fromEntries(expected.map((id) => [id, 1])));
    // Every tick's run was started by exactly one of the workers, with one attempt.
    expect(
      summaries
        .flatMap((s) => s.attempts)
        .map((a) => a.id)
        .sort(),
    ).toEqual(expected);
    for (const id of expected) expect((await engines[2]!.get(id)).attempts).toHaveLength(1);
    for (const engine of engines) await engine.close();
  });

  it.each([
    ["latest", ["04:00", "06:00"]],
    ["all", ["04:00", "05:00", "06:00"]],
    ["none", ["04:00"]],
  ] as const)("catchUp %s: after a gap with no worker, a worker that comes back starts %j", async (catchUp, afterGap) => {
    const clock = fakeClock(at(3, 30));
    const flow = defineWorkflow({ name: `catch-${catchUp}`, schedule: { cron: "0 * * * *", catchUp }, run: async () => "done" });
    const engine = createEngine({ store: make(), workflows: [flow], clock });
    const runIds = async () => (await ids(engine)).map((id) => id.slice(id.indexOf("T") + 1, -1));
    let worker = startWorker(engine);
    await sleep(30);
    clock.set(at(4));
    await until("the 04:00 run", async () => (await engine.list()).length === 1);
    await worker.stop();

    // 05:00 and 06:00 pass while no worker runs.
    clock.set(at(6, 30));
    worker = startWorker(engine);
    let summary: WorkSummary;
    try {
      await until("the catch-up", async () => (await engine.list()).length === afterGap.length);
      await sleep(SEVERAL_LOOKS);
      expect(await runIds()).toEqual(afterGap);
      // From now on every tick, whatever catchUp says.
      clock.set(at(7));
      await until("the 07:00 run", async () => (await engine.list()).length === afterGap.length + 1);
    } finally {
      summary = await worker.stop();
    }
    expect(await runIds()).toEqual([...afterGap, "07:00"]);
    // The missed ones first, oldest first, then the new tick.
    expect(summary.attempts.map((a) => a.id.slice(a.id.indexOf("T") + 1, -1))).toEqual([...afterGap.slice(1), "07:00"]);
    await engine.close();
  });

  it('catchUp "all" after a long gap starts every missed tick once, oldest first, over several looks (at most 100 a look)', async () => {
    const clock = fakeClock(at(0, 0, 30));
    const store = make();
    let looks = 0;
    const counting: Store = new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (key !== "listRuns") return typeof value === "function" ? value.bind(target) : value;
        return (filter: { workflow?: string; limit?: number }) => {
          if (filter.workflow === "minutely" && filter.limit !== undefined) looks++;
          return target.listRuns(filter);
        };
      },
    });
    const flow = defineWorkflow({ name: "minutely", schedule: { cron: "* * * * *", catchUp: "all" }, run: async () => "ok" });
    const engine = createEngine({ store: counting, workflows: [flow], clock });
    let worker = startWorker(engine);
    await sleep(30);
    clock.set(at(0, 1));
    await until("the 00:01 run", async () => (await engine.list()).length === 1);
    await worker.stop();

    // 00:02 … 02:31 pass with no worker: 150 ticks.
    clock.set(at(2, 31, 30));
    looks = 0;
    worker = startWorker(engine, { concurrency: 200 });
    let summary: WorkSummary;
    try {
      await until("the 150 missed ticks", async () => (await engine.list()).length === 151, 20_000);
      await sleep(SEVERAL_LOOKS);
    } finally {
      summary = await worker.stop();
    }
    const expected = Array.from({ length: 151 }, (_, i) => new Date(at(0, 1) + i * 60_000).toISOString().slice(0, 16) + "Z").map((t) => `minutely@${t}`);
    expect(await ids(engine)).toEqual(expected);
    expect(summary.attempts.map((a) => a.id).sort()).toEqual(expected.slice(1));
    // More than one look of the store: 100, then the other 50.
    expect(looks).toBeGreaterThanOrEqual(2);
    await engine.close();
  });

  it("a worker stopped and started again (a new engine, a new store object) does not start a tick twice", async () => {
    const clock = fakeClock(at(0, 59, 59));
    const handle = sameDataStores(name, make);
    let calls = 0;
    const definition = () =>
      defineWorkflow({
        name: "restarted",
        schedule: { cron: "0 * * * *", catchUp: "all" },
        run: async (ctx) => ctx.step("once", async () => ++calls),
      });
    const first = createEngine({ store: handle(), workflows: [definition()], clock });
    const worker = startWorker(first);
    await sleep(30);
    clock.set(at(1));
    await until("the 01:00 run", async () => (await first.list({ status: "completed" })).length === 1);
    await worker.stop();
    await first.close();

    for (const time of [at(1), at(1, 0, 0) + 1, at(1, 30)]) {
      clock.set(time);
      const again = createEngine({ store: handle(), workflows: [definition()], clock });
      const next = startWorker(again, { concurrency: 3 });
      await sleep(SEVERAL_LOOKS);
      expect((await next.stop()).attempts).toEqual([]);
      expect(await ids(again)).toEqual(["restarted@2030-01-01T01:00Z"]);
      expect((await again.get("restarted@2030-01-01T01:00Z")).attempts).toHaveLength(1);
      await again.close();
    }
    expect(calls).toBe(1);
  });

  it("engine.schedules(): each schedule with its time zone, catch-up, last started tick and next ticks", async () => {
    const clock = fakeClock(at(7, 15));
    const daily = defineWorkflow({ name: "daily", schedule: { cron: "0 9 * * *", timezone: "Europe/Berlin" }, run: async () => "ok" });
    const plain = defineWorkflow({ name: "plain", run: async () => "ok" });
    const engine = createEngine({ store: make(), workflows: [daily, plain], clock });
    expect(await engine.schedules({ next: 2 })).toEqual([
      {
        workflow: "daily",
        cron: "0 9 * * *",
        timezone: "Europe/Berlin",
        catchUp: "latest",
        last: null,
        // 09:00 in Berlin in winter is 08:00 UTC.
        next: [
          { at: "2030-01-01T08:00:00.000Z", runId: "daily@2030-01-01T08:00Z" },
          { at: "2030-01-02T08:00:00.000Z", runId: "daily@2030-01-02T08:00Z" },
        ],
      },
    ]);
    const worker = startWorker(engine);
    await sleep(30);
    clock.set(at(8, 0, 1));
    await until("the run", async () => (await engine.list({ status: "completed" })).length === 1);
    await worker.stop();
    const [view] = await engine.schedules();
    expect(view!.last).toEqual({ at: "2030-01-01T08:00:00.000Z", runId: "daily@2030-01-01T08:00Z", status: "completed" });
    expect(view!.next.map((n) => n.runId)).toEqual([2, 3, 4, 5, 6].map((d) => `daily@2030-01-0${d}T08:00Z`));
    await expect(engine.schedules({ nxt: 1 } as never)).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(engine.schedules({ next: 101 })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await engine.close();
  });

  it("a tick whose args cannot be made is skipped with a warning (STEPLOG_SCHEDULE_FAILED); the next tick is started", async () => {
    const clock = fakeClock(at(0, 30));
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }) => {
      if (w.code === "STEPLOG_SCHEDULE_FAILED") warnings.push(w.message);
    };
    process.on("warning", onWarning);
    const flow = defineWorkflow({
      name: "picky",
      args: z.object({ hour: z.number().max(1) }),
      schedule: {
        cron: "0 * * * *",
        args: (tick) => {
          if (tick.getUTCHours() === 3) throw new Error("no args at three");
          return { hour: tick.getUTCHours() };
        },
      },
      run: async (_ctx, args) => args.hour,
    });
    const engine = createEngine({ store: make(), workflows: [flow], clock });
    const worker = startWorker(engine);
    try {
      await sleep(30);
      clock.set(at(1));
      await until("the 01:00 run", async () => (await engine.list()).length === 1);
      clock.set(at(2)); // args { hour: 2 }: rejected by the schema
      await until("a warning", () => warnings.length === 1);
      clock.set(at(3)); // args function throws
      await until("two warnings", () => warnings.length === 2);
      await sleep(SEVERAL_LOOKS);
    } finally {
      await worker.stop();
      process.off("warning", onWarning);
    }
    expect(await ids(engine)).toEqual(["picky@2030-01-01T01:00Z"]);
    expect(warnings[0]).toMatch(/picky@2030-01-01T02:00Z.*not started.*rejected by the workflow's args schema.*That tick is skipped/);
    expect(warnings[1]).toMatch(/picky@2030-01-01T03:00Z.*schedule\.args threw.*no args at three.*That tick is skipped/);
    await engine.close();
  });
});

describe("defineWorkflow({ schedule }) checks", () => {
  const run = async () => "ok";
  it.each([
    [{ cron: "0 * * *" }, /schedule\.cron "0 \* \* \*" is not a cron pattern.*five fields/],
    [{ cron: "61 * * * *" }, /not a cron pattern.*minute: 61/],
    [{ cron: "* * * * * * *" }, /not a cron pattern/],
    [{ cron: "" }, /schedule\.cron must be a cron pattern/],
    [{ cron: 5 }, /schedule\.cron must be a cron pattern/],
    [{ cron: "0 0 30 2 *" }, /never matches a date/],
    [{ cron: "0 * * * *", timezone: "Mars/Olympus" }, /schedule\.timezone must be an IANA time zone/],
    [{ cron: "0 * * * *", timezone: "" }, /schedule\.timezone must be an IANA time zone/],
    [{ cron: "0 * * * *", catchUp: "some" }, /schedule\.catchUp must be "latest", "all" or "none"/],
    [{ crom: "0 * * * *" }, /unknown option "crom"; did you mean "cron"/],
    ["0 * * * *", /schedule must be an object/],
  ])("%j is refused with INVALID_OPTION", (schedule, message) => {
    let thrown: unknown;
    try {
      defineWorkflow({ name: "bad", schedule: schedule as never, run });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: "INVALID_OPTION", name: "InvalidOptionError" });
    expect((thrown as Error).message).toMatch(message);
  });

  it("the args of scheduled runs are checked by the args schema at defineWorkflow when they are a value (undefined when not given)", () => {
    const args = z.object({ region: z.string() });
    expect(() => defineWorkflow({ name: "needs-args", args, schedule: { cron: "0 * * * *" }, run })).toThrow(
      /args schema rejects the args of its scheduled runs \(undefined: no schedule.args was given\)/,
    );
    expect(() => defineWorkflow({ name: "wrong-args", args, schedule: { cron: "0 * * * *", args: { region: 4 } as never }, run })).toThrow(
      /args schema rejects the args of its scheduled runs/,
    );
    const ok = defineWorkflow({ name: "ok", args, schedule: { cron: "@hourly", args: { region: "eu" } }, run });
    expect(ok.schedule).toMatchObject({ cron: "@hourly", timezone: "UTC", catchUp: "latest", seconds: false });
    // A function's values are checked at each tick, by start.
    expect(() => defineWorkflow({ name: "fn-args", args, schedule: { cron: "0 * * * *", args: () => ({ region: "eu" }) }, run })).not.toThrow();
  });

  it("a name too long for a scheduled run id is refused", () => {
    expect(() => defineWorkflow({ name: "n".repeat(190), schedule: { cron: "0 * * * *" }, run })).toThrow(/may have at most 182/);
    expect(() => defineWorkflow({ name: "n".repeat(182), schedule: { cron: "0 * * * *" }, run })).not.toThrow();
  });

  it("ticks ignore the process's TZ: a schedule without a timezone is read in UTC", () => {
    const flow = defineWorkflow({ name: "utc", schedule: { cron: "30 2 * * *" }, run });
    expect(flow.schedule!.after(Date.UTC(2030, 5, 1))).toBe(Date.UTC(2030, 5, 1, 2, 30));
    expect(flow.schedule!.atOrBefore(Date.UTC(2030, 5, 1, 2, 30))).toBe(Date.UTC(2030, 5, 1, 2, 30));
    expect(flow.schedule!.atOrBefore(Date.UTC(2030, 5, 1, 2, 29, 59, 999))).toBe(Date.UTC(2030, 4, 31, 2, 30));
    expect(flow.schedule!.tickOf("utc@2030-06-01T02:30Z")).toBe(Date.UTC(2030, 5, 1, 2, 30));
    expect(flow.schedule!.tickOf("utc@2030-06-01T02:30:00Z")).toBe(Date.UTC(2030, 5, 1, 2, 30));
    expect(flow.schedule!.tickOf("utc@2030-06-01T2:30Z")).toBeUndefined();
    expect(flow.schedule!.tickOf("other@2030-06-01T02:30Z")).toBeUndefined();
    expect(flow.schedule!.tickOf("utc@2030-13-01T02:30Z")).toBeUndefined();
  });
});
