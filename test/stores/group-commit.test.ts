// The group-commit module on its own (store/group-commit.ts), with writers that only record what
// they were given: what joins a batch, the order batches commit in, and how each write settles.
import { describe, expect, it } from "vitest";
import { GroupCommit, type BatchWriter, type QueuedWrite } from "../../src/store/group-commit.js";

type W = QueuedWrite<string, undefined>;

/** An asynchronous writer: each batch takes a turn of the event loop; `refuse` names writes refused alone, `failBatch` batches that fail whole. */
function asyncWriter(options: { refuse?: string[]; failBatch?: (names: string[]) => boolean } = {}) {
  const batches: string[][] = [];
  let idle = 0;
  const writer: BatchWriter<string, undefined> = {
    sync: false,
    async write(batch: W[]) {
      const names = batch.map((w) => w.a);
      batches.push(names);
      await new Promise((resolve) => setImmediate(resolve));
      if (options.failBatch?.(names)) throw new Error("disk full");
      for (const w of batch) {
        if (options.refuse?.includes(w.a)) w.refused = new Error(`${w.a} refused`);
        else w.result = `${w.a} done`;
      }
    },
    failed: (error, w) => new Error(`${w.a}: ${(error as Error).message}`),
    idle: () => void idle++,
  };
  return { writer, batches, idle: () => idle };
}

describe("group commit", () => {
  it("writes issued in one turn share a batch; those issued while it commits form the next, committed after it", async () => {
    const { writer, batches, idle } = asyncWriter();
    const queue = new GroupCommit(writer);
    const first = [queue.enqueue<string>(0, "r1", "a", undefined, false), queue.enqueue<string>(0, "r2", "b", undefined, false)];
    await new Promise((resolve) => setImmediate(resolve)); // the first batch is being written now
    const second = queue.enqueue<string>(0, "r1", "c", undefined, false);
    expect(await Promise.all([...first, second])).toEqual(["a done", "b done", "c done"]);
    expect(batches).toEqual([["a", "b"], ["c"]]);
    expect(idle()).toBe(1);
  });

  it("a write refused alone fails alone; a batch that fails whole rejects each of its writes with the store's error", async () => {
    const { writer } = asyncWriter({ refuse: ["b"], failBatch: (names) => names.includes("x") });
    const queue = new GroupCommit(writer);
    const results = await Promise.allSettled(["a", "b", "c"].map((name) => queue.enqueue(0, "r", name, undefined, false)));
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual(["a done", "b refused", "c done"]);
    const failed = await Promise.allSettled(["x", "y"].map((name) => queue.enqueue(0, "r", name, undefined, false)));
    expect(failed.map((r) => (r.status === "rejected" ? (r.reason as Error).message : "fulfilled"))).toEqual(["x: disk full", "y: disk full"]);
  });

  it("settled() waits for the writes queued so far, not for later ones; drain() commits what is queued without waiting for the turn", async () => {
    const { writer, batches } = asyncWriter();
    const queue = new GroupCommit(writer, { turnBetweenBatches: true });
    let aDone = false;
    void queue.enqueue(0, "r", "a", undefined, false).then(() => (aDone = true));
    const settled = queue.settled();
    let lateDone = false;
    await new Promise((resolve) => setImmediate(resolve));
    void queue.enqueue(0, "r", "late", undefined, false).then(() => (lateDone = true));
    await settled;
    expect(aDone).toBe(true);
    expect(lateDone).toBe(false);
    await queue.drain();
    expect(lateDone).toBe(true);
    expect(batches).toEqual([["a"], ["late"]]);
  });

  it("a synchronous writer: flush() commits at once; callbacks are called in the batch's order with the promises", async () => {
    const order: string[] = [];
    const writer: BatchWriter<string, undefined> = {
      sync: true,
      write(batch: W[]) {
        order.push(`commit ${batch.map((w) => w.a).join(",")}`);
      },
      failed: (error) => error,
    };
    const queue = new GroupCommit(writer);
    const a = queue.enqueue(0, "r", "a", undefined, false).then(() => order.push("a settled"));
    queue.enqueueWithCallbacks(
      0,
      "r",
      "b",
      undefined,
      () => order.push("b done"),
      () => order.push("b failed"),
    );
    expect(order).toEqual([]);
    queue.flush();
    expect(order).toEqual(["commit a,b", "b done"]);
    await a;
    expect(order).toEqual(["commit a,b", "b done", "a settled"]);
    queue.flush(); // nothing queued: no commit
    expect(order).toHaveLength(3);
  });
});
