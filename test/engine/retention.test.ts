// createEngine({ retention }): checked when the engine is made; applied by workers, by status,
// one pruner at a time across engines (and processes: the store's turn), given back when the
// worker that held it stops.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, isSteplogError, type Engine, type Store } from "../../src/entries/index.js";
import { EVERY_STORE, sameDataStores, withOverrides } from "../helpers/stores.js";
import { until } from "../helpers/until.js";

const T0 = Date.UTC(2026, 0, 1);
const DAY = 86_400_000;

const job = defineWorkflow({
  name: "job",
  maxAttempts: 5,
  async run(ctx, args: { fail?: boolean }) {
    return ctx.step("only", async () => {
      if (args.fail) throw new Error("no");
      return 1;
    });
  },
});

function refusedToMake(retention: unknown): string {
  try {
    createEngine({ retention: retention as never, store: undefined });
  } catch (error) {
    expect(isSteplogError(error, "INVALID_OPTION"), String(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error(`retention ${JSON.stringify(retention)} was accepted`);
}

describe("retention options", () => {
  it("are checked when the engine is made: statuses, lengths of time, every", () => {
    expect(refusedToMake({ completed: "soon" })).toContain('"soon" is not a length of time');
    expect(refusedToMake({ completed: 0 })).toContain("not a length of time");
    expect(refusedToMake({ running: "1d" })).toContain("has not ended");
    expect(refusedToMake({ complete: "1d" })).toContain('did you mean "completed"');
    expect(refusedToMake({})).toContain("names no status");
    expect(refusedToMake({ every: "1h" })).toContain("names no status");
    expect(refusedToMake({ completed: "1d", every: "5ms" })).toContain("at least 10 ms");
    expect(refusedToMake("30d")).toContain("must be an object");
  });
});

describe.each(EVERY_STORE)("retention applied by workers (%s)", (name, makeStore) => {
  it("a worker prunes each status after its own time; one pruner at a time, and the turn is given back when its worker stops", async () => {
    const open = sameDataStores(name, makeStore);
    const clock = { at: T0, now: () => clock.at };
    const setup = createEngine({ store: open(), clock, workflows: [job] });
    await setup.start(job, {}, { id: "done-old" });
    expect((await setup.start(job, { fail: true }, { id: "failed-old" })).status).toBe("failed");
    clock.at = T0 + 20 * DAY;
    await setup.start(job, {}, { id: "done-new" });
    await setup.close();
    clock.at = T0 + 40 * DAY;

    const calls = { a: 0, b: 0 };
    // A prune pass lists from the cut-off (a cursor with an empty id): counted per engine.
    const counted = (who: "a" | "b"): Store =>
      withOverrides(open(), {
        listRuns: (original, filter) => {
          if (filter.after?.id === "") calls[who]++;
          return original(filter);
        },
      });
    const retention = { completed: "30d", failed: "90d", every: "20ms" };
    const a = createEngine({ store: counted("a"), clock, workflows: [job], retention });
    const b = createEngine({ store: counted("b"), clock, workflows: [job], retention });
    const stopA = new AbortController();
    const stopB = new AbortController();
    const workingA = a.work({ signal: stopA.signal, pollMs: 20 });
    const ids = async (engine: Engine) => (await engine.list()).map((r) => r.id).sort();
    await until("a's worker to prune the old completed run", async () => !(await ids(a)).includes("done-old"));
    const workingB = b.work({ signal: stopB.signal, pollMs: 20 });
    await new Promise((r) => setTimeout(r, 200));
    expect(await ids(a)).toEqual(["done-new", "failed-old"]);
    expect(calls.b, "b never prunes while a holds the turn").toBe(0);
    expect(calls.a).toBeGreaterThan(0);

    // a stops and gives the turn back: b prunes from its next look.
    stopA.abort();
    await workingA;
    clock.at = T0 + 100 * DAY;
    await until("b's worker to prune the rest", async () => (await ids(b)).length === 0);
    expect(calls.b).toBeGreaterThan(0);
    stopB.abort();
    await workingB;
    await a.close();
    await b.close();
  });
});
