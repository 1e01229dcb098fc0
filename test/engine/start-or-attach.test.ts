// Start or attach: start(workflow, args, { id, ifExists: "attach" }) on an id that exists hands
// back that run's result (waiting for its attempt when one runs in this process) instead of
// refusing with RUN_EXISTS; it never starts an attempt. Through the public API, on every store,
// and from a second process against the built package (dist/, built by `pretest`).
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, encryptedCodec, type Engine } from "../../src/entries/index.js";
import { jsonlStore } from "../../src/entries/jsonl.js";
import { postgresStore } from "../../src/entries/postgres.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import type { Store } from "../../src/store/types.js";
import { spawnNode } from "../helpers/child.js";
import { PG_URL } from "../helpers/pg.js";
import { EVERY_STORE } from "../helpers/stores.js";
import { tmpDb, tmpDir } from "../helpers/tmp.js";
import { distBuilt } from "../helpers/worker.js";

/** A workflow whose one step counts its calls; `gate`, when set, holds the step until it resolves. */
function doubling(name = "attach-double") {
  const calls: number[] = [];
  let gate: Promise<void> | undefined;
  let entered = () => {};
  const workflow = defineWorkflow({
    name,
    async run(ctx, args: { n: number }) {
      return ctx.step("double", async () => {
        calls.push(args.n);
        entered();
        await gate;
        return args.n * 2;
      });
    },
  });
  /** Hold the step; resolves once it has been entered, with the function that lets it go on. */
  const hold = () => {
    let release = () => {};
    gate = new Promise<void>((resolve) => (release = resolve));
    const inside = new Promise<void>((resolve) => (entered = resolve));
    return { inside, release: () => release() };
  };
  return { workflow, calls, hold };
}

const settledYet = async (promise: Promise<unknown>) => {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setTimeout(resolve, 50));
  return settled;
};

describe.each(EVERY_STORE)('start with ifExists: "attach" (%s)', (_name, makeStore) => {
  const engines: Engine[] = [];
  const engineOn = (store: Store, options: Parameters<typeof createEngine>[0] = {}) => {
    const engine = createEngine({ store, ...options });
    engines.push(engine);
    return engine;
  };
  afterAll(async () => {
    for (const engine of engines.splice(0)) await engine.close();
  });

  it("to a completed run: the same value, and the function is not called again", async () => {
    const { workflow, calls } = doubling();
    const engine = engineOn(makeStore());
    const first = await engine.start(workflow, { n: 21 }, { id: "r", ifExists: "attach" });
    expect(first).toMatchObject({ id: "r", status: "completed", runStatus: "completed", value: 42, attempt: 1 });
    expect(first).not.toHaveProperty("attached");
    const again = await engine.start(workflow, { n: 21 }, { id: "r", ifExists: "attach" });
    // The sign that it attached: nothing else tells a start that created the run from one that found it.
    expect(again).toEqual({ ...first, attached: true });
    expect(calls).toEqual([21]);
    expect(await engine.get("r")).toMatchObject({ status: "completed", attemptCount: 1, value: 42 });
  });

  it("to a failed run: its error, and nothing run again (a continue is what goes on with it)", async () => {
    let calls = 0;
    const failing = defineWorkflow({
      name: "attach-fails",
      async run(ctx) {
        await ctx.step("charge", async () => {
          calls++;
          throw new Error("card declined");
        });
      },
    });
    const engine = engineOn(makeStore());
    const first = await engine.start(failing, undefined, { id: "f" });
    expect(first).toMatchObject({ status: "failed", runStatus: "failed", error: { message: "card declined", step: "charge" } });
    const attached = await engine.start(failing, undefined, { id: "f", ifExists: "attach" });
    expect(attached).toEqual({ ...first, attached: true });
    expect(calls).toBe(1);
    expect((await engine.get("f")).attemptCount).toBe(1);
  });

  it("to a waiting run: status waiting, with what it waits for", async () => {
    const parked = defineWorkflow({
      name: "attach-waits",
      async run(ctx) {
        return ctx.waitForEvent("go");
      },
    });
    const engine = engineOn(makeStore());
    const first = await engine.start(parked, undefined, { id: "w" });
    expect(first).toMatchObject({ status: "waiting", runStatus: "waiting", waitingFor: { kind: "event", event: "go" } });
    const attached = await engine.start(parked, undefined, { id: "w", ifExists: "attach" });
    expect(attached).toEqual({ ...first, attached: true });
    expect(await engine.get("w")).toMatchObject({ status: "waiting", attemptCount: 1 });
  });

  it("to a run whose attempt runs in this engine: resolves when that attempt ends, with its result; one attempt only", async () => {
    const { workflow, calls, hold } = doubling();
    const engine = engineOn(makeStore());
    const step = hold();
    const starting = engine.start(workflow, { n: 5 }, { id: "live" });
    await step.inside;
    const attaching = engine.start(workflow, { n: 5 }, { id: "live", ifExists: "attach" });
    expect(await settledYet(attaching)).toBe(false);
    step.release();
    const [started, attached] = await Promise.all([starting, attaching]);
    expect(started).toMatchObject({ status: "completed", value: 10, attempt: 1 });
    // The starter's result is its own: the attach's sign is on the attach's copy only.
    expect(attached).toEqual({ ...started, attached: true });
    expect(started).not.toHaveProperty("attached");
    expect(calls).toEqual([5]);
    expect((await engine.get("live")).attempts).toHaveLength(1);
  });

  it("to a run whose attempt runs in another engine of this process: waits for it too", async () => {
    const { workflow, calls, hold } = doubling();
    const store = makeStore();
    const running = engineOn(store);
    const other = engineOn(store);
    const step = hold();
    const starting = running.start(workflow, { n: 4 }, { id: "elsewhere-here" });
    await step.inside;
    const attaching = other.start(workflow, { n: 4 }, { id: "elsewhere-here", ifExists: "attach" });
    expect(await settledYet(attaching)).toBe(false);
    step.release();
    const started = await starting;
    expect(await attaching).toEqual({ ...started, attached: true });
    expect(started).not.toHaveProperty("attached");
    expect(calls).toEqual([4]);
  });

  it("a different workflow: RUN_EXISTS naming both workflows and what to type", async () => {
    const { workflow } = doubling();
    const { workflow: another } = doubling("attach-other");
    const engine = engineOn(makeStore());
    await engine.start(workflow, { n: 1 }, { id: "same-id" });
    const error = await engine.start(another, { n: 1 }, { id: "same-id", ifExists: "attach" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "RUN_EXISTS", runId: "same-id", differs: "workflow" });
    const message = (error as Error).message;
    expect(message).toContain(`belongs to workflow "attach-double", not "attach-other"`);
    expect(message).toContain(`engine.get("same-id")`);
    expect(message).toContain("start with another id");
    expect(await engine.get("same-id")).toMatchObject({ workflow: "attach-double", attemptCount: 1 });
  });

  it("different args: RUN_EXISTS naming the args (where they differ, not their values) and what to type", async () => {
    const { workflow, calls } = doubling();
    const engine = engineOn(makeStore());
    await engine.start(workflow, { n: 1 }, { id: "args" });
    const error = await engine.start(workflow, { n: 2 }, { id: "args", ifExists: "attach" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "RUN_EXISTS", runId: "args", differs: "args" });
    const message = (error as Error).message;
    expect(message).toContain("with other args than this start's (they differ at $.n)");
    expect(message).toContain(`engine.continue("args")`);
    expect(message).toContain(`engine.get("args")`);
    expect(message).not.toMatch(/\b2\b/);
    expect(calls).toEqual([1]);
    expect(await engine.get("args")).toMatchObject({ args: { n: 1 }, value: 2, attemptCount: 1 });
  });

  it("args are compared as decoded values: key order does not matter, Dates and BigInts compare as themselves, a codec's fresh IVs do not", async () => {
    const codec = encryptedCodec({ keys: { k1: crypto.randomBytes(32) }, current: "k1" });
    const rich = defineWorkflow({
      name: "attach-rich",
      async run(ctx, args: { when: Date; big: bigint; tags: string[] }) {
        return ctx.step("count", async () => args.tags.length);
      },
    });
    const engine = engineOn(makeStore(), { codec });
    const first = await engine.start(rich, { when: new Date(0), big: 10n, tags: ["a", "b"] }, { id: "rich" });
    expect(first).toMatchObject({ status: "completed", value: 2 });
    const reordered = { tags: ["a", "b"], big: 10n, when: new Date(0) };
    expect(await engine.start(rich, reordered, { id: "rich", ifExists: "attach" })).toEqual({ ...first, attached: true });
    const later = engine.start(rich, { ...reordered, when: new Date(1) }, { id: "rich", ifExists: "attach" });
    await expect(later).rejects.toMatchObject({ code: "RUN_EXISTS", differs: "args", message: expect.stringContaining("differ at $.when") });
    const shorter = engine.start(rich, { ...reordered, tags: ["a"] }, { id: "rich", ifExists: "attach" });
    await expect(shorter).rejects.toMatchObject({ code: "RUN_EXISTS", message: expect.stringContaining("differ at $.tags (2 items recorded, 1 given)") });
  });

  it('ifExists: "refuse" and the default refuse as before, pointing to continue and to attach', async () => {
    const { workflow } = doubling();
    const engine = engineOn(makeStore());
    await engine.start(workflow, { n: 1 }, { id: "refused" });
    for (const options of [{ id: "refused" }, { id: "refused", ifExists: "refuse" as const }]) {
      const error = await engine.start(workflow, { n: 1 }, options).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "RUN_EXISTS", runId: "refused", differs: undefined });
      expect((error as Error).message).toContain(`engine.continue("refused")`);
      expect((error as Error).message).toContain(`{ id: "refused", ifExists: "attach" }`);
    }
  });

  it("any other ifExists, or a misspelt key: INVALID_OPTION, nothing recorded", async () => {
    const { workflow, calls } = doubling();
    const engine = engineOn(makeStore());
    for (const ifExists of ["attatch", "continue", true, null, 1]) {
      const error = await engine.start(workflow, { n: 1 }, { id: "bad", ifExists } as never).catch((e: unknown) => e);
      expect(error, String(ifExists)).toMatchObject({ code: "INVALID_OPTION", runId: "bad" });
      expect((error as Error).message).toContain(`ifExists must be "attach" or "refuse"`);
    }
    await expect(engine.start(workflow, { n: 1 }, { id: "bad", ifexists: "attach" } as never)).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringContaining("ifExists"),
    });
    expect(calls).toEqual([]);
    expect(await engine.list()).toEqual([]);
  });
});

// ---- a second process ----------------------------------------------------------------------

const WORKER = fileURLToPath(new URL("./fixtures/attach-worker.mjs", import.meta.url));

const pgSchemas: string[] = [];
afterAll(async () => {
  if (!PG_URL || pgSchemas.length === 0) return;
  const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
  try {
    for (const schema of pgSchemas.splice(0)) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await admin.end();
  }
});

/** Stores a child process can open too: `where` names it to the worker, `store` is this process's handle on it. */
const SHARED_KINDS = ["sqlite", "jsonl", ...(PG_URL ? ["postgres"] : [])];
function sharedStore(kind: string): { kind: string; where: string; store: Store } {
  if (kind === "postgres") {
    const schema = `steplog_attach_${process.pid}_${pgSchemas.length}`;
    pgSchemas.push(schema);
    return { kind, where: schema, store: postgresStore({ connectionString: PG_URL!, schema }) };
  }
  const where = tmpDb(kind === "jsonl" ? "steplog.jsonl" : "steplog.db");
  return { kind, where, store: kind === "jsonl" ? jsonlStore({ path: where }) : sqliteStore({ path: where }) };
}

describe.runIf(distBuilt()).each(SHARED_KINDS)("attach from a second process (%s)", (kind) => {
  const worker = (shared: { kind: string; where: string }, runId: string, n: number, calls: string, env: Record<string, string> = {}) =>
    spawnNode(WORKER, [shared.kind, shared.where, runId, String(n)], { env: { CALLS: calls, ...env } });
  const lines = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter(Boolean) : []);

  it("hands back the run the first process completed; the step's function is not called in the second", async () => {
    const shared = sharedStore(kind);
    const { workflow, calls } = doubling();
    const engine = createEngine({ store: shared.store });
    const first = await engine.start(workflow, { n: 21 }, { id: "two-procs", ifExists: "attach" });
    expect(first).toMatchObject({ status: "completed", value: 42 });

    const callsFile = path.join(tmpDir(), "calls");
    const child = await worker(shared, "two-procs", 21, callsFile).done;
    expect(child.code, child.stderr).toBe(0);
    expect(child.report).toEqual({ result: { ...first, attached: true } });
    expect(lines(callsFile)).toEqual([]);
    expect(calls).toEqual([21]);

    const other = await worker(shared, "two-procs", 22, callsFile).done;
    expect(other.report).toMatchObject({ refused: { code: "RUN_EXISTS", message: expect.stringContaining("differ at $.n") } });
    expect((await engine.get("two-procs")).attemptCount).toBe(1);
    await engine.close();
  });

  it("to a run another process is running: status running; once that process is killed: interrupted; attach continues neither", async () => {
    const shared = sharedStore(kind);
    const callsFile = path.join(tmpDir(), "calls");
    const holder = worker(shared, "held", 3, callsFile, { HOLD: "1" });
    await holder.ready;
    const { workflow, calls } = doubling();
    const engine = createEngine({ store: shared.store });
    const running = await engine.start(workflow, { n: 3 }, { id: "held", ifExists: "attach" });
    expect(running).toEqual({ id: "held", status: "running", runStatus: "running", attempt: 1, attached: true });

    holder.child.kill("SIGKILL");
    await holder.done;
    const interrupted = await engine.start(workflow, { n: 3 }, { id: "held", ifExists: "attach" });
    expect(interrupted).toMatchObject({ id: "held", status: "interrupted", runStatus: "interrupted", attempt: 1, attached: true });
    expect(calls).toEqual([]);
    expect(lines(callsFile)).toHaveLength(1);
    const view = await engine.get("held");
    expect(view).toMatchObject({ status: "interrupted", attemptCount: 1 });

    // What the user types to go on with it.
    expect(await engine.continue("held")).toMatchObject({ status: "completed", value: 6, attempt: 2 });
    expect(await engine.start(workflow, { n: 3 }, { id: "held", ifExists: "attach" })).toMatchObject({ status: "completed", value: 6, attempt: 2 });
    await engine.close();
  });
});
