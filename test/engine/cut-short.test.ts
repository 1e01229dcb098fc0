// A step that settles after its attempt was cut short (a cancel, close(), an aborted signal):
// a value it returns anyway is the truth (its effect happened) and is recorded succeeded; a
// throw after the abort is recorded failed. The attempt still ends cancelled.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, type Engine } from "../../src/entries/index.js";
import { jsonlStore } from "../../src/entries/jsonl.js";
import { memoryStore } from "../../src/entries/memory.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import type { Store } from "../../src/store/types.js";
import { withOverrides } from "../helpers/stores.js";
import { tmpDb } from "../helpers/tmp.js";

/** Per store kind: a fresh place for records, and a way to open another store object on it (close() closes the first). */
const PLACES: Array<[string, () => () => Store]> = [
  [
    "memory",
    () => {
      const store = memoryStore();
      return () => withOverrides(store, { close: async () => {} });
    },
  ],
  [
    "sqlite",
    () => {
      const path = tmpDb();
      return () => sqliteStore({ path });
    },
  ],
  [
    "jsonl",
    () => {
      const path = tmpDb("steplog.jsonl");
      return () => jsonlStore({ path });
    },
  ],
];

describe.each(PLACES)("a step that settles after its attempt was cut short (%s)", (_name, place) => {
  function stubborn(throwsAfterAbort: boolean) {
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let calls = 0;
    const workflow = defineWorkflow({
      name: "stubborn",
      async run(ctx) {
        const receipt = await ctx.step("charge", { effect: "irreversible" }, async ({ signal }) => {
          calls++;
          entered();
          await new Promise((resolve) => setTimeout(resolve, 80));
          if (throwsAfterAbort && signal.aborted) throw new Error("gave up after the abort");
          return `receipt ${calls}`;
        });
        return ctx.step("email", async () => `sent ${receipt}`);
      },
    });
    return { workflow, inside, calls: () => calls };
  }

  const cuts: Array<[string, (engine: Engine, controller: AbortController) => Promise<unknown>]> = [
    ["engine.cancel(id)", (engine) => engine.cancel("r")],
    ["engine.close()", (engine) => engine.close()],
    ["the start's signal", async (_engine, controller) => controller.abort(new Error("user pressed stop"))],
  ];

  it.each(cuts)("%s: a value returned anyway is recorded succeeded and reused by the continue", async (_how, cut) => {
    const open = place();
    const { workflow, inside, calls } = stubborn(false);
    const engine = createEngine({ store: open(), workflows: [workflow] });
    const controller = new AbortController();
    const started = engine.start(workflow, undefined, { id: "r", signal: controller.signal });
    await inside;
    await Promise.all([
      cut(engine, controller),
      started.then((result) => expect(result).toMatchObject({ status: "cancelled", error: { code: "RUN_CANCELLED" } })),
    ]);
    await engine.close();
    const again = createEngine({ store: open(), workflows: [workflow] });
    expect((await again.get("r")).steps.map((s) => [s.key, s.status, s.value])).toEqual([["charge", "succeeded", "receipt 1"]]);
    expect(await again.continue("r")).toMatchObject({ status: "completed", value: "sent receipt 1" });
    expect(calls()).toBe(1);
    await again.close();
  });

  it.each(cuts)("%s: a throw after the abort is recorded failed, and the continue redoes the step", async (_how, cut) => {
    const open = place();
    const { workflow, inside, calls } = stubborn(true);
    const engine = createEngine({ store: open(), workflows: [workflow] });
    const controller = new AbortController();
    const started = engine.start(workflow, undefined, { id: "r", signal: controller.signal });
    await inside;
    await Promise.all([cut(engine, controller), started]);
    await engine.close();
    const again = createEngine({ store: open(), workflows: [workflow] });
    expect((await again.get("r")).steps.map((s) => [s.key, s.status])).toEqual([["charge", "failed"]]);
    expect(await again.continue("r")).toMatchObject({ status: "completed", value: "sent receipt 2" });
    expect(calls()).toBe(2);
    await again.close();
  });
});
