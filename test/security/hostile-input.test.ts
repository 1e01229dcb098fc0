// Hostile names and values, driven through the public API on every store by fast-check: each
// either round-trips exactly or is refused cleanly (INVALID_NAME, VALUE_NOT_SERIALIZABLE,
// VALUE_TOO_LARGE), with nothing else in the store changed. Never interpreted.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, isSteplogError, type Engine, type Store } from "../../src/entries/index.js";
import { EVERY_STORE } from "../helpers/stores.js";

const NASTY = [
  `'; DROP TABLE runs; --`,
  `\\'; DROP TABLE runs; --`,
  "back\\slash \\n",
  `" OR 1=1 --`,
  "line\nbreak",
  "nul\u0000byte",
  "rtl\u202eoverride",
  "\u2066isolate\u2069",
  "tab\there",
  " leading",
  "trailing ",
  "#hash",
  "emoji 🙂 and 中文",
  "x".repeat(10_000),
  "x".repeat(200),
  "x".repeat(201),
  "\ud800 lone surrogate",
  "%s %d ${injection} {{template}} <script>alert(1)</script>",
  "../../etc/passwd",
  "",
];

const names = fc.oneof(
  fc.constantFrom(...NASTY),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ minLength: 190, maxLength: 210 }),
);

const values = fc.oneof(
  fc.jsonValue(),
  fc.anything({
    withBigInt: true,
    withDate: true,
    withMap: true,
    withSet: true,
    withNullPrototype: true,
    withSparseArray: true,
    withTypedArray: true,
    withBoxedValues: true,
  }),
  fc.constantFrom(...NASTY),
);

/**
 * What "returned exactly" means for values (DESIGN.md, "Values"): deep-equal, where an array's
 * holes read as undefined and an object without a prototype reads as a plain object.
 */
function normal(value: unknown): unknown {
  if (Array.isArray(value)) return Array.from(value, normal);
  if (value instanceof Map) return new Map([...value].map(([k, v]) => [normal(k), normal(v)]));
  if (value instanceof Set) return new Set([...value].map(normal));
  if (value !== null && typeof value === "object" && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normal(v)]));
  }
  return value;
}

const accepted = new Set(["INVALID_NAME", "VALUE_NOT_SERIALIZABLE", "VALUE_TOO_LARGE"]);

/** Everything the store shows, to check that a refusal changed nothing. */
async function snapshot(engine: Engine) {
  const runs = await engine.list();
  return Promise.all(runs.map(async (r) => ({ summary: r, view: await engine.get(r.id) })));
}

describe.each(EVERY_STORE)("hostile input (%s)", (_name, makeStore) => {
  it("run ids, step names and event names: stored and returned exactly, or refused with INVALID_NAME and nothing changed", async () => {
    const store: Store = makeStore();
    const engine = createEngine({ store, workflows: [] });
    let n = 0;
    await fc.assert(
      fc.asyncProperty(names, names, names, async (runId, stepName, eventName) => {
        const workflow = defineWorkflow({
          name: `w${n++}`,
          async run(ctx) {
            await ctx.step(stepName, async () => "stepped");
            return ctx.waitForEvent(eventName);
          },
        });
        const before = await snapshot(engine);
        let started;
        try {
          started = await engine.start(workflow, undefined, { id: runId });
        } catch (error) {
          expect(isSteplogError(error), String(error)).toBe(true);
          expect(["INVALID_NAME", "RUN_EXISTS"]).toContain((error as { code: string }).code);
          expect(await snapshot(engine)).toEqual(before);
          return;
        }
        const view = await engine.get(runId);
        expect(view.id).toBe(runId);
        if (started.status === "failed") {
          // The step or event name was refused inside the run, before any record of it.
          expect(started.error!.code).toBe("INVALID_NAME");
          expect(view.steps.every((s) => s.name === stepName)).toBe(true);
          return;
        }
        expect(started.status).toBe("waiting");
        expect(view.steps[0]).toMatchObject({ key: stepName, name: stepName, value: "stepped" });
        expect(view.waitingFor).toMatchObject({ kind: "event", event: eventName });
        await engine.send(runId, eventName, "payload");
        expect(await engine.continue(runId)).toMatchObject({ status: "completed", value: "payload" });
        expect((await engine.list()).map((r) => r.id)).toContain(runId);
      }),
      { numRuns: 60 },
    );
    await engine.close();
  });

  it("workflow names: stored and returned exactly, or refused with INVALID_NAME by defineWorkflow", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [] });
    const seen = new Set<string>();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(names, async (name) => {
        let workflow;
        try {
          workflow = defineWorkflow({
            name,
            async run() {
              return name;
            },
          });
        } catch (error) {
          expect((error as { code?: string }).code).toBe("INVALID_NAME");
          expect((error as Error).message).toContain("1 to 200 characters");
          return;
        }
        if (seen.has(name)) return; // a name belongs to one workflow per engine
        seen.add(name);
        const id = `wf-${n++}`;
        expect(await engine.start(workflow, undefined, { id })).toMatchObject({ status: "completed", value: name });
        expect((await engine.get(id)).workflow).toBe(name);
        expect((await engine.list({ workflow: name })).map((r) => r.id)).toEqual([id]);
      }),
      { numRuns: 60 },
    );
    await engine.close();
  });

  it("values: returned exactly (deep-equal) or refused cleanly, never left intended", async () => {
    const engine = createEngine({ store: makeStore(), workflows: [], maxValueBytes: 64 * 1024 });
    let n = 0;
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        const id = `v${n++}`;
        const workflow = defineWorkflow({
          name: `values-${id}`,
          async run(ctx) {
            return ctx.step("echo", async () => value);
          },
        });
        const result = await engine.start(workflow, undefined, { id });
        const view = await engine.get(id);
        if (result.status === "completed") {
          expect(normal(result.value)).toStrictEqual(normal(value));
          expect(normal(view.steps[0]!.value)).toStrictEqual(normal(value));
        } else {
          expect(accepted.has(result.error!.code!), JSON.stringify(result.error)).toBe(true);
          expect(view.steps[0]).toMatchObject({ status: "failed" });
        }
      }),
      { numRuns: 120 },
    );
    await engine.close();
  });
});
