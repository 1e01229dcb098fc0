// ctx.stream and engine.readStream through the public API, on every store.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, type StreamItem } from "../../src/entries/index.js";
import { EVERY_STORE } from "../helpers/stores.js";

async function collect(items: AsyncIterable<StreamItem>, until?: (got: StreamItem[]) => boolean): Promise<StreamItem[]> {
  const got: StreamItem[] = [];
  for await (const item of items) {
    got.push(item);
    if (until?.(got)) break;
  }
  return got;
}

const chunk = (offset: number, value: unknown, seq: number): StreamItem => ({ type: "chunk", offset, chunk: value, seq });
const reset = (offset: number, seq: number): StreamItem => ({ type: "reset", offset, seq });

describe.each(EVERY_STORE)("streams (%s)", (_name, makeStore) => {
  it("keeps chunks in order, from inside and outside steps, and reads them back from an offset", async () => {
    const workflow = defineWorkflow({
      name: "writes",
      async run(ctx) {
        const out = ctx.stream("out");
        out.write("start");
        await ctx.step("turn", async () => {
          out.write("hello ");
          out.write({ text: "world", n: 2 });
        });
        out.write("end");
        out.close();
        return "done";
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    try {
      expect((await engine.start(workflow, undefined, { id: "s1" })).status).toBe("completed");
      expect(await collect(engine.readStream("s1", "out"))).toEqual([
        chunk(0, "start", 0),
        chunk(1, "hello ", 1),
        chunk(2, { text: "world", n: 2 }, 2),
        chunk(3, "end", 3),
      ]);
      expect(await collect(engine.readStream("s1", "out", { from: 2 }))).toEqual([chunk(2, { text: "world", n: 2 }, 2), chunk(3, "end", 3)]);
      expect(await collect(engine.readStream("s1", "other"))).toEqual([]);
      await expect(collect(engine.readStream("nope", "out"))).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
    } finally {
      await engine.close();
    }
  });

  it("follows a live run: a reader started first gets each chunk as it is written and ends with the run", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const waiting = new Promise<void>((resolve) => (entered = resolve));
    const workflow = defineWorkflow({
      name: "live",
      async run(ctx) {
        const out = ctx.stream("out");
        await ctx.step("first", async () => out.write("one"));
        await ctx.step("wait", async () => {
          entered();
          await gate;
        });
        await ctx.step("second", async () => out.write("two"));
        return null;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    try {
      const running = engine.start(workflow, undefined, { id: "s2" });
      await waiting;
      const got: StreamItem[] = [];
      const reading = (async () => {
        for await (const item of engine.readStream("s2", "out", { pollMs: 20 })) {
          got.push(item);
          if (got.length === 1) release();
        }
      })();
      await running;
      await reading;
      expect(got).toEqual([chunk(0, "one", 0), chunk(1, "two", 1)]);
    } finally {
      await engine.close();
    }
  });

  it("a write after close throws STREAM_CLOSED inside the workflow", async () => {
    const workflow = defineWorkflow({
      name: "closed",
      async run(ctx) {
        const out = ctx.stream("out");
        out.write("a");
        out.close();
        out.write("b");
        return null;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    try {
      const result = await engine.start(workflow, undefined, { id: "s3" });
      expect(result.status).toBe("failed");
      expect(result.error).toMatchObject({ code: "STREAM_CLOSED" });
      expect(await collect(engine.readStream("s3", "out"))).toEqual([chunk(0, "a", 0)]);
    } finally {
      await engine.close();
    }
  });

  it("a continue that redoes a step supersedes its chunks: a following reader gets a reset, then the new chunks; the replay writes nothing twice", async () => {
    const workflow = defineWorkflow({
      name: "redo",
      async run(ctx) {
        const out = ctx.stream("out");
        out.write("intro");
        await ctx.step("turn", async (info) => {
          out.write(`a${info.attempt}`);
          out.write(`b${info.attempt}`);
        });
        await ctx.waitForEvent("go");
        return null;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const stop = new AbortController();
    try {
      expect((await engine.start(workflow, undefined, { id: "s4" })).status).toBe("waiting");
      // The continue only once the reader has the first attempt's chunks (else it would find them superseded already).
      let caughtUp!: () => void;
      const firstThree = new Promise<void>((resolve) => (caughtUp = resolve));
      const reading = collect(engine.readStream("s4", "out", { pollMs: 20, signal: stop.signal }), (got) => {
        if (got.length === 3) caughtUp();
        return got.length === 6;
      });
      await firstThree;
      expect((await engine.continue("s4", { fromStep: "turn" })).status).toBe("waiting");
      const got = await reading;
      expect(got).toEqual([
        chunk(0, "intro", 0),
        chunk(1, "a1", 1),
        chunk(2, "b1", 2),
        { type: "reset", offset: 1, seq: 3 },
        chunk(1, "a2", 4),
        chunk(2, "b2", 5),
      ]);
      // A reader from the start sees the stream as it stands.
      expect(await collect(engine.readStream("s4", "out", { follow: false }))).toEqual([chunk(0, "intro", 0), chunk(1, "a2", 4), chunk(2, "b2", 5)]);
    } finally {
      stop.abort();
      await engine.close();
    }
  });

  it("a reader that resumes after an item's seq gets what followed it: a reset made between two reads, then the new chunks; after the close it ends at once", async () => {
    const workflow = defineWorkflow({
      name: "resume",
      async run(ctx) {
        const out = ctx.stream("out");
        out.write("intro");
        await ctx.step("turn", async (info) => {
          out.write(`a${info.attempt}`);
          out.write(`b${info.attempt}`);
        });
        await ctx.waitForEvent("go");
        out.close();
        return null;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    try {
      expect((await engine.start(workflow, undefined, { id: "s7" })).status).toBe("waiting");
      // The first read: the reader shows up to "a1" (seq 1) and goes away.
      const first = await collect(engine.readStream("s7", "out", { follow: false }), (got) => got.length === 2);
      expect(first).toEqual([chunk(0, "intro", 0), chunk(1, "a1", 1)]);
      expect((await engine.continue("s7", { fromStep: "turn" })).status).toBe("waiting");
      // The second read resumes after seq 1: "b1" was superseded meanwhile (not given); the reset, then the redone chunks.
      const resumed = [reset(1, 3), chunk(1, "a2", 4), chunk(2, "b2", 5)];
      expect(await collect(engine.readStream("s7", "out", { after: 1, follow: false }))).toEqual(resumed);
      expect(await collect(engine.readStream("s7", "out", { after: 2, follow: false }))).toEqual(resumed);
      // A reader that had only "intro" had nothing superseded: no reset.
      expect(await collect(engine.readStream("s7", "out", { after: 0, follow: false }))).toEqual([chunk(1, "a2", 4), chunk(2, "b2", 5)]);
      expect(await collect(engine.readStream("s7", "out", { after: 5, follow: false }))).toEqual([]);
      // Following from the last seq: nothing more until the close, then the end.
      const following = collect(engine.readStream("s7", "out", { after: 5, pollMs: 20 }));
      await engine.send("s7", "go");
      expect((await engine.continue("s7")).status).toBe("completed");
      expect(await following).toEqual([]);
      const stored = await engine.readStream("s7", "out", { after: 6 })[Symbol.asyncIterator]().next();
      expect(stored.done, "a resume after the close ends at once").toBe(true);
      expect(() => engine.readStream("s7", "out", { after: 1, from: 0 })).toThrow(
        expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringContaining("from and after were both given") }),
      );
      expect(() => engine.readStream("s7", "out", { after: -1 })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    } finally {
      await engine.close();
    }
  });

  it("waitForRunMs: a reader opened before its run is recorded waits for it (bounded); without it, RUN_NOT_FOUND at once", async () => {
    const workflow = defineWorkflow({
      name: "late",
      async run(ctx) {
        const out = ctx.stream("out");
        await ctx.step("say", async () => out.write("hi"));
        out.close();
        return null;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    try {
      await expect(collect(engine.readStream("late", "out"))).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
      const reading = collect(engine.readStream("late", "out", { waitForRunMs: 10_000, pollMs: 20 }));
      await new Promise((r) => setTimeout(r, 100));
      expect((await engine.start(workflow, undefined, { id: "late" })).status).toBe("completed");
      expect(await reading).toEqual([chunk(0, "hi", 0)]);
      // A run that does not appear within the bound: RUN_NOT_FOUND once it has passed.
      const began = Date.now();
      await expect(collect(engine.readStream("never", "out", { waitForRunMs: 300, pollMs: 50 }))).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
      expect(Date.now() - began).toBeGreaterThanOrEqual(290);
      // Stopped while waiting: the iteration just ends.
      const stop = new AbortController();
      const stopped = collect(engine.readStream("never", "out", { waitForRunMs: 10_000, pollMs: 20, signal: stop.signal }));
      stop.abort();
      expect(await stopped).toEqual([]);
      expect(() => engine.readStream("late", "out", { waitForRunMs: -1 })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    } finally {
      await engine.close();
    }
  });

  it("engine.streams lists the run's streams as they stand (chunks after a reset, closed or open); readStream redacts when asked", async () => {
    const workflow = defineWorkflow({
      name: "listed",
      async run(ctx) {
        const log = ctx.stream("log");
        const out = ctx.stream("out");
        await ctx.step("turn", async (info) => {
          // The redo (attempt 2) writes fewer chunks than the first call did.
          for (let i = 0; i < (info.attempt === 1 ? 3 : 1); i++) out.write({ text: `t${i}`, token: "s3cret" });
        });
        log.write("done");
        log.close();
        await ctx.waitForEvent("go");
        return null;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow], redact: ["token"] });
    try {
      expect((await engine.start(workflow, undefined, { id: "s7" })).status).toBe("waiting");
      expect(await engine.streams("s7")).toEqual([
        { name: "log", chunks: 1, closed: true },
        { name: "out", chunks: 3, closed: false },
      ]);
      expect((await engine.continue("s7", { fromStep: "turn" })).status).toBe("waiting");
      expect(await engine.streams("s7")).toEqual([
        { name: "log", chunks: 1, closed: true },
        { name: "out", chunks: 1, closed: false },
      ]);
      expect(await collect(engine.readStream("s7", "out", { follow: false, redact: true }))).toEqual([chunk(0, { text: "t0", token: "[redacted]" }, 4)]);
      expect(await collect(engine.readStream("s7", "out", { follow: false }))).toEqual([chunk(0, { text: "t0", token: "s3cret" }, 4)]);
      await expect(engine.streams("nope")).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
    } finally {
      await engine.close();
    }
  });

  it("with a codec that seals asynchronously: chunks are sealed in the store, read back plain and in order, before the next step's records", async () => {
    const codec = {
      encode: async (plain: string) => {
        await new Promise((r) => setTimeout(r, 2));
        return `sealed:${Buffer.from(plain).toString("base64")}`;
      },
      decode: async (stored: string) => Buffer.from(stored.slice("sealed:".length), "base64").toString(),
    };
    const workflow = defineWorkflow({
      name: "sealed",
      async run(ctx) {
        const out = ctx.stream("out");
        await ctx.step("a", async () => {
          for (let i = 0; i < 5; i++) out.write(`a${i}`);
        });
        out.write({ between: true });
        await ctx.step("b", async () => out.write("b0"));
        return null;
      },
    });
    const store = makeStore();
    const engine = createEngine({ store, workflows: [workflow], codec });
    try {
      expect((await engine.start(workflow, undefined, { id: "s6" })).status).toBe("completed");
      expect(await collect(engine.readStream("s6", "out"))).toEqual([
        chunk(0, "a0", 0),
        chunk(1, "a1", 1),
        chunk(2, "a2", 2),
        chunk(3, "a3", 3),
        chunk(4, "a4", 4),
        chunk(5, { between: true }, 5),
        chunk(6, "b0", 6),
      ]);
      const stored = await store.readStream!("s6", "out", -1, 100);
      expect(stored.every((r) => r.chunk!.startsWith("sealed:"))).toBe(true);
      expect(stored.map((r) => r.step)).toEqual(["a", "a", "a", "a", "a", null, "b"]);
    } finally {
      await engine.close();
    }
  });

  it("refuses a chunk beyond maxValueBytes, and a bad from", async () => {
    const workflow = defineWorkflow({
      name: "big",
      async run(ctx) {
        ctx.stream("out").write("x".repeat(2000));
        return null;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow], maxValueBytes: 1000 });
    try {
      const result = await engine.start(workflow, undefined, { id: "s5" });
      expect(result.error).toMatchObject({ code: "VALUE_TOO_LARGE" });
      expect(() => engine.readStream("s5", "out", { from: -1 })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    } finally {
      await engine.close();
    }
  });
});
