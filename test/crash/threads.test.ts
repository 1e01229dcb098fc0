// Two engines in one process on different worker threads, one store file: each thread has its
// own registry of live attempts, so "this process holds it" cannot be asked across threads. A
// run held by another thread is alive while its lease is: a continue is RUN_BUSY, and the step
// runs once.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "steplog-threads-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const fixture = new URL("./fixtures/thread-engine.mjs", import.meta.url);

type Message = { inside?: true; result?: { status: string; attempt: number }; error?: string };

function thread(file: string, runId: string, mode: "hold" | "continue") {
  const worker = new Worker(fixture, { workerData: { file, runId, mode } });
  const messages: Message[] = [];
  const waiters: Array<() => void> = [];
  worker.on("message", (m: Message) => {
    messages.push(m);
    for (const wake of waiters.splice(0)) wake();
  });
  const next = async (has: (m: Message) => boolean): Promise<Message> => {
    for (;;) {
      const found = messages.find(has);
      if (found) return found;
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  return { worker, inside: () => next((m) => m.inside === true), done: () => next((m) => m.result !== undefined || m.error !== undefined) };
}

describe("engines on two worker threads of one process", () => {
  it("a run held by a worker thread: the main thread's continue is RUN_BUSY and does not call the step; the holder completes", async () => {
    const file = path.join(dir, "held-by-thread.db");
    const holder = thread(file, "r", "hold");
    await holder.inside();
    let calls = 0;
    const pay = defineWorkflow({ name: "pay", run: (ctx) => ctx.step("charge", async () => (calls++, "charged")) });
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [pay] });
    expect((await engine.get("r")).status).toBe("running");
    await expect(engine.continue("r")).rejects.toMatchObject({ code: "RUN_BUSY" });
    expect(await engine.recover()).toEqual([]);
    expect(calls).toBe(0);
    holder.worker.postMessage("finish");
    expect(await holder.done()).toEqual({ result: { status: "completed", attempt: 1 } });
    expect((await engine.get("r")).status).toBe("completed");
    await engine.close();
    await holder.worker.terminate();
  });

  it("a run held by the main thread: a worker thread's continue is RUN_BUSY", async () => {
    const file = path.join(dir, "held-by-main.db");
    let release!: () => void;
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const pay = defineWorkflow({
      name: "pay",
      run: (ctx) =>
        ctx.step("charge", async () => {
          entered();
          await new Promise<void>((resolve) => (release = resolve));
          return "charged";
        }),
    });
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [pay] });
    const started = engine.start(pay, undefined, { id: "r" });
    await inside;
    const other = thread(file, "r", "continue");
    expect(await other.done()).toEqual({ error: "RUN_BUSY" });
    release();
    expect(await started).toMatchObject({ status: "completed", attempt: 1 });
    await engine.close();
    await other.worker.terminate();
  });
});
