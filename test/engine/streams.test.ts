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

const chunk = (offset: number, value: unknown): StreamItem => ({ type: "chunk", offset, chunk: value });

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
        chunk(0, "start"),
        chunk(1, "hello "),
        chunk(2, { text: "world", n: 2 }),
        chunk(3, "end"),
      ]);
      expect(await collect(engine.readStream("s1", "out", { from: 2 }))).toEqual([chunk(2, { text: "world", n: 2 }), chunk(3, "end")]);
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
      expect(got).toEqual([chunk(0, "one"), chunk(1, "two")]);
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
      expect(await collect(engine.readStream("s3", "out"))).toEqual([chunk(0, "a")]);
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
      const reading = collect(engine.readStream("s4", "out", { pollMs: 20, signal: stop.signal }), (got) => got.length === 6);
      await new Promise((r) => setTimeout(r, 50));
      expect((await engine.continue("s4", { fromStep: "turn" })).status).toBe("waiting");
      const got = await reading;
      expect(got).toEqual([chunk(0, "intro"), chunk(1, "a1"), chunk(2, "b1"), { type: "reset", offset: 1 }, chunk(1, "a2"), chunk(2, "b2")]);
      // A reader from the start sees the stream as it stands.
      expect(await collect(engine.readStream("s4", "out", { follow: false }))).toEqual([chunk(0, "intro"), chunk(1, "a2"), chunk(2, "b2")]);
    } finally {
      stop.abort();
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
      expect(await collect(engine.readStream("s7", "out", { follow: false, redact: true }))).toEqual([chunk(0, { text: "t0", token: "[redacted]" })]);
      expect(await collect(engine.readStream("s7", "out", { follow: false }))).toEqual([chunk(0, { text: "t0", token: "s3cret" })]);
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
        chunk(0, "a0"),
        chunk(1, "a1"),
        chunk(2, "a2"),
        chunk(3, "a3"),
        chunk(4, "a4"),
        chunk(5, { between: true }),
        chunk(6, "b0"),
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
