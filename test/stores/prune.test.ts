// engine.prune through the public API, on every store: what goes (ended runs before the cut-off,
// a run with its child runs, every row export carries), what stays (runs not ended, later ones, a
// child whose parent is kept, dead letters and open escalations unless named), dry runs,
// refusals, and a pruned id used again.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, isSteplogError, type Engine, type RunExport, type Store } from "../../src/entries/index.js";
import { EVERY_STORE, withOverrides } from "../helpers/stores.js";

const T0 = Date.UTC(2026, 0, 1);
const DAY = 86_400_000;

/** A clock the test moves. */
function testClock(at = T0) {
  const clock = { at, now: () => clock.at };
  return clock;
}

const leaf = defineWorkflow({
  name: "leaf",
  async run(ctx, args: { n: number }) {
    return ctx.step("square", async () => args.n * args.n);
  },
});

const tree = defineWorkflow({
  name: "tree",
  async run(ctx, args: { n: number }) {
    const a = await ctx.step("one", async () => args.n + 1);
    const b = await ctx.child("kid", leaf, { n: a });
    return { a, b };
  },
});

const flaky = defineWorkflow({
  name: "flaky",
  maxAttempts: 1,
  async run(ctx) {
    await ctx.step("boom", async () => {
      throw new Error("boom");
    });
  },
});

const waiter = defineWorkflow({
  name: "waiter",
  async run(ctx) {
    return ctx.waitForEvent("go");
  },
});

function engineOn(store: Store, clock = testClock()): { engine: Engine; clock: ReturnType<typeof testClock> } {
  return { engine: createEngine({ store, clock, workflows: [leaf, tree, flaky, waiter] }), clock };
}

async function ids(engine: Engine): Promise<string[]> {
  return (await engine.list()).map((r) => r.id).sort();
}

async function refused(promise: Promise<unknown>, code: string): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isSteplogError(error), `expected ${code}, got ${String(error)}`).toBe(true);
  expect((error as { code: string }).code).toBe(code);
  return error as Error;
}

/** Rows a document holds, counted as prune counts them. */
function rowsOf(doc: RunExport) {
  const all = [doc, ...(doc.children ?? [])];
  return {
    runs: all.length,
    attempts: all.reduce((n, d) => n + d.attempts.length, 0),
    steps: all.reduce((n, d) => n + d.steps.length, 0),
    events: all.reduce((n, d) => n + d.events.length, 0),
  };
}

describe.each(EVERY_STORE)("engine.prune (%s)", (_name, makeStore) => {
  it("deletes a pruned run's streams with it: the same id used again starts its stream from offset 0", async () => {
    const streamer = defineWorkflow({
      name: "streamer",
      async run(ctx, args: { text: string }) {
        await ctx.step("say", async () => {
          const out = ctx.stream("out");
          out.write(args.text);
          out.close();
        });
      },
    });
    const store = makeStore();
    const clock = testClock();
    const engine = createEngine({ store, clock, workflows: [streamer] });
    const read = async (id: string) => {
      const items: unknown[] = [];
      for await (const item of engine.readStream(id, "out", { follow: false })) items.push(item);
      return items;
    };
    expect((await engine.start(streamer, { text: "old" }, { id: "s" })).status).toBe("completed");
    expect(await read("s")).toEqual([{ type: "chunk", offset: 0, chunk: "old", seq: 0 }]);
    clock.at = T0 + 10 * DAY;
    expect((await engine.prune({ endedBefore: new Date(T0 + 5 * DAY) })).runs).toBe(1);
    expect(await store.readStream!("s", "out", -1, 10)).toEqual([]);
    expect((await engine.start(streamer, { text: "new" }, { id: "s" })).status).toBe("completed");
    expect(await read("s")).toEqual([{ type: "chunk", offset: 0, chunk: "new", seq: 0 }]);
    await engine.close();
  });

  it("deletes ended runs before the cut-off with their child runs, exactly the rows export carries; keeps later ones and runs that have not ended", async () => {
    const { engine, clock } = engineOn(makeStore());
    expect((await engine.start(tree, { n: 2 }, { id: "old-tree" })).status).toBe("completed");
    expect((await engine.start(leaf, { n: 3 }, { id: "old-leaf" })).status).toBe("completed");
    expect((await engine.start(waiter, {}, { id: "old-waiter" })).status).toBe("waiting");
    await engine.send("old-waiter", "ignored", 1, { keep: true });
    clock.at = T0 + 10 * DAY;
    expect((await engine.start(leaf, { n: 4 }, { id: "new-leaf" })).status).toBe("completed");
    expect(await ids(engine)).toEqual(["new-leaf", "old-leaf", "old-tree", "old-tree/kid", "old-waiter"]);

    const expected = [rowsOf(await engine.export("old-tree", { children: true })), rowsOf(await engine.export("old-leaf"))].reduce((a, b) => ({
      runs: a.runs + b.runs,
      attempts: a.attempts + b.attempts,
      steps: a.steps + b.steps,
      events: a.events + b.events,
    }));
    const endedBefore = new Date(T0 + 5 * DAY);
    const dry = await engine.prune({ endedBefore, dryRun: true });
    expect(dry).toEqual({ dryRun: true, ...expected });
    expect(await ids(engine)).toEqual(["new-leaf", "old-leaf", "old-tree", "old-tree/kid", "old-waiter"]);

    const pruned = await engine.prune({ endedBefore });
    expect(pruned).toEqual({ dryRun: false, ...expected });
    expect(expected).toEqual({ runs: 3, attempts: 3, steps: 4, events: 0 });
    expect(await ids(engine)).toEqual(["new-leaf", "old-waiter"]);
    await refused(engine.get("old-tree"), "RUN_NOT_FOUND");
    await refused(engine.export("old-tree/kid"), "RUN_NOT_FOUND");
    // Nothing left to prune: a second prune deletes nothing.
    expect(await engine.prune({ endedBefore })).toEqual({ dryRun: false, runs: 0, attempts: 0, steps: 0, events: 0 });
    // The waiting run and its event are whole.
    expect((await engine.export("old-waiter")).events).toHaveLength(1);
    await engine.close();
  });

  it("a child run whose parent is kept stays, however old; status and workflow pick the first run of a group only", async () => {
    const { engine, clock } = engineOn(makeStore());
    await engine.start(tree, { n: 1 }, { id: "t" });
    clock.at = T0 + DAY;
    // The parent continued later (a redo of its first step): it ended after the cut-off, its child before.
    expect((await engine.continue("t", { fromStep: "one" })).status).toBe("completed");
    expect((await engine.get("t/kid")).status).toBe("completed");
    expect(await engine.prune({ endedBefore: T0 + DAY / 2 })).toMatchObject({ runs: 0 });
    expect(await ids(engine)).toEqual(["t", "t/kid"]);
    // Naming the child's workflow never takes a child from its parent.
    expect(await engine.prune({ endedBefore: T0 + 2 * DAY, workflow: "leaf" })).toMatchObject({ runs: 0 });
    expect(await engine.prune({ endedBefore: T0 + 2 * DAY, status: "failed" })).toMatchObject({ runs: 0 });
    expect(await engine.prune({ endedBefore: T0 + 2 * DAY, workflow: "tree", status: ["completed"] })).toMatchObject({ runs: 2 });
    expect(await ids(engine)).toEqual([]);
    await engine.close();
  });

  it("a dead-lettered run is pruned only when named; a pruned id can be used again", async () => {
    const { engine } = engineOn(makeStore());
    expect((await engine.start(flaky, {}, { id: "dead" })).status).toBe("failed");
    // Its one attempt spent: a continue is refused and the run dead-lettered.
    await refused(engine.continue("dead"), "DEAD_LETTERED");
    expect((await engine.get("dead")).status).toBe("dead-lettered");
    await engine.start(leaf, { n: 5 }, { id: "done" });
    const endedBefore = T0 + DAY;
    expect(await engine.prune({ endedBefore })).toMatchObject({ runs: 1 });
    expect(await ids(engine)).toEqual(["dead"]);
    expect(await engine.prune({ endedBefore, status: ["failed", "completed"] })).toMatchObject({ runs: 0 });
    expect(await engine.prune({ endedBefore, status: "dead-lettered" })).toMatchObject({ runs: 1, attempts: 1, steps: 1 });
    expect(await ids(engine)).toEqual([]);
    // The same ids again: fresh runs, with nothing of the pruned ones.
    const again = await engine.start(leaf, { n: 6 }, { id: "done" });
    expect(again.value).toBe(36);
    const view = await engine.get("done");
    expect(view.attempts).toHaveLength(1);
    expect(view.steps.map((s) => s.key)).toEqual(["square"]);
    await engine.close();
  });

  it("a run with an open escalation is pruned only when status names escalated", async () => {
    const store = makeStore();
    const { engine } = engineOn(store);
    await engine.start(leaf, { n: 7 }, { id: "src" });
    const doc = await engine.export("src");
    // A cancelled run whose step is still escalated (as a cancel of an escalated run leaves it).
    const escalated: RunExport = {
      ...doc,
      run: { ...doc.run, id: "esc", status: "cancelled" },
      attempts: doc.attempts.map((a) => ({ ...a, runId: "esc" })),
      steps: doc.steps.map((s) => ({ ...s, runId: "esc", status: "escalated", value: null })),
    };
    await engine.import(escalated);
    expect((await engine.escalations()).map((e) => e.runId)).toEqual(["esc"]);
    const endedBefore = T0 + DAY;
    expect(await engine.prune({ endedBefore, status: "cancelled" })).toMatchObject({ runs: 0 });
    expect(await engine.prune({ endedBefore })).toMatchObject({ runs: 1 });
    expect(await ids(engine)).toEqual(["esc"]);
    expect(await engine.prune({ endedBefore, status: ["cancelled", "escalated"] })).toMatchObject({ runs: 1, steps: 1 });
    expect(await engine.escalations()).toEqual([]);
    await engine.close();
  });

  it("refuses bad options (INVALID_OPTION) and a store without pruneRuns (PRUNE_UNSUPPORTED), deleting nothing", async () => {
    const store = makeStore();
    const { engine } = engineOn(store);
    await engine.start(leaf, { n: 1 }, { id: "kept" });
    const later = T0 + DAY;
    await refused(engine.prune(undefined as never), "INVALID_OPTION");
    await refused(engine.prune({} as never), "INVALID_OPTION");
    expect((await refused(engine.prune({ endedBefore: later, status: "running" as never }), "INVALID_OPTION")).message).toContain("has not ended");
    await refused(engine.prune({ endedBefore: later, status: [] }), "INVALID_OPTION");
    expect((await refused(engine.prune({ endedBefore: later, olderThan: 1 } as never), "INVALID_OPTION")).message).toContain("olderThan");
    const bare = withOverrides(store, {}) as Store & { pruneRuns?: unknown };
    const without = new Proxy(bare, { get: (t, k) => (k === "pruneRuns" ? undefined : Reflect.get(t, k)) });
    const other = createEngine({ store: without, workflows: [leaf] });
    const error = await refused(other.prune({ endedBefore: later }), "PRUNE_UNSUPPORTED");
    expect(error.message).toContain("pruneRuns");
    expect(await ids(engine)).toEqual(["kept"]);
    await engine.close();
  });
});
