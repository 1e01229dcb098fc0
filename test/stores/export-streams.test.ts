// Streams travel with engine.export and engine.import, on every store: every record (chunks as
// stored, resets, closes) in the document, written back with the run, read the same on the new
// store, and reset there as on the old one by a continue that redoes a step. Older documents
// without streams still import; a malformed stream record is refused with IMPORT_INVALID.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, encryptedCodec, isSteplogError, type Engine, type RunExport, type StreamItem } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { EVERY_STORE } from "../helpers/stores.js";
import { tmpDb } from "../helpers/tmp.js";

/** Streams "answer" (a chunk outside a step, two inside "turn", closed at the end) and "log" (closed early); "check" fails while `failing.check` is set. */
function chatWorkflow() {
  const failing = { check: true };
  const workflow = defineWorkflow({
    name: "chat",
    async run(ctx) {
      const answer = ctx.stream("answer");
      const log = ctx.stream("log");
      answer.write("intro");
      await ctx.step("turn", async (info) => {
        answer.write(`a${info.attempt}`);
        answer.write({ secret: "s3cret", n: info.attempt });
      });
      log.write("turned");
      log.close();
      await ctx.step("check", async () => {
        if (failing.check) throw new Error("bad answer");
        return true;
      });
      answer.close();
      return "ok";
    },
  });
  return { workflow, failing };
}

async function readAll(engine: Engine, id: string, name: string, options: { after?: number } = {}): Promise<StreamItem[]> {
  const items: StreamItem[] = [];
  for await (const item of engine.readStream(id, name, { follow: false, ...options })) items.push(item);
  return items;
}

async function refusedWith(promise: Promise<unknown>, code: string): Promise<Error & { reason?: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isSteplogError(error), `expected ${code}, got ${String(error)}`).toBe(true);
  expect((error as { code: string }).code).toBe(code);
  return error as Error & { reason?: string };
}

const chunk = (offset: number, value: unknown, seq: number): StreamItem => ({ type: "chunk", offset, chunk: value, seq });

describe.each(EVERY_STORE)("streams in export and import (%s)", (_name, makeStore) => {
  it("the document holds every stream record; the imported run's streams read as they did, and a continue that redoes a step resets them as on the old store", async () => {
    const { workflow, failing } = chatWorkflow();
    const source = createEngine({ store: makeStore(), workflows: [workflow] });
    const target = createEngine({ store: makeStore(), workflows: [workflow] });
    try {
      expect((await source.start(workflow, undefined, { id: "c1" })).status).toBe("failed");
      const doc = await source.export("c1");
      expect(doc.streams!.map((r) => [r.stream, r.seq, r.kind, r.offset, r.step])).toEqual([
        ["answer", 0, "chunk", 0, null],
        ["answer", 1, "chunk", 1, "turn"],
        ["answer", 2, "chunk", 2, "turn"],
        ["log", 0, "chunk", 0, null],
        ["log", 1, "close", 1, null],
      ]);
      expect(doc.streams![1]).toMatchObject({ runId: "c1", chunk: '"a1"', attempt: 1 });
      expect(await target.import(JSON.parse(JSON.stringify(doc)) as RunExport)).toEqual({ id: "c1", runs: ["c1"] });
      expect(await target.export("c1")).toEqual(doc);
      for (const name of ["answer", "log"]) expect(await readAll(target, "c1", name)).toEqual(await readAll(source, "c1", name));

      const before = await readAll(target, "c1", "answer");
      expect(before).toEqual([chunk(0, "intro", 0), chunk(1, "a1", 1), chunk(2, { secret: "s3cret", n: 1 }, 2)]);

      // The same continue on both stores: the redone turn's chunks are superseded (a reset); the replay writes "intro" and the log once.
      failing.check = false;
      for (const engine of [source, target]) expect((await engine.continue("c1", { fromStep: "turn" })).status).toBe("completed");
      // A reader that had shown everything before resumes after its last seq: told of the reset, then the redone chunks.
      const resumed = await readAll(target, "c1", "answer", { after: 2 });
      expect(resumed).toEqual([{ type: "reset", offset: 1, seq: 3 }, chunk(1, "a2", 4), chunk(2, { secret: "s3cret", n: 2 }, 5)]);
      expect(resumed).toEqual(await readAll(source, "c1", "answer", { after: 2 }));
      for (const name of ["answer", "log"]) expect(await readAll(target, "c1", name)).toEqual(await readAll(source, "c1", name));
      expect(await readAll(target, "c1", "log")).toEqual([chunk(0, "turned", 0)]);
      expect((await target.export("c1")).streams!.map((r) => [r.stream, r.seq, r.kind, r.offset])).toEqual([
        ["answer", 0, "chunk", 0],
        ["answer", 1, "chunk", 1],
        ["answer", 2, "chunk", 2],
        ["answer", 3, "reset", 1],
        ["answer", 4, "chunk", 1],
        ["answer", 5, "chunk", 2],
        ["answer", 6, "close", 3],
        ["log", 0, "chunk", 0],
        ["log", 1, "close", 1],
      ]);
    } finally {
      await source.close();
      await target.close();
    }
  });

  it("a document without streams (a run that wrote none, or one exported before streams) imports; its streams read empty", async () => {
    const { workflow } = chatWorkflow();
    const source = createEngine({ store: makeStore(), workflows: [workflow] });
    const target = createEngine({ store: makeStore(), workflows: [workflow] });
    const quiet = defineWorkflow({ name: "quiet", run: async (ctx) => ctx.step("only", async () => 1) });
    try {
      await source.start(workflow, undefined, { id: "c2" });
      await source.start(quiet, undefined, { id: "q" });
      const none = await source.export("q");
      expect("streams" in none, "a run without streams: the document is as before streams").toBe(false);
      await target.import(none);
      const { streams: _streams, ...older } = await source.export("c2");
      await target.import(older as RunExport);
      expect(await readAll(target, "c2", "answer")).toEqual([]);
      expect((await target.get("c2")).status).toBe("failed");
    } finally {
      await source.close();
      await target.close();
    }
  });

  it("a malformed stream record is refused with IMPORT_INVALID naming what is wrong, and nothing is written", async () => {
    const { workflow } = chatWorkflow();
    const source = createEngine({ store: makeStore(), workflows: [workflow] });
    const target = createEngine({ store: makeStore(), workflows: [workflow] });
    try {
      await source.start(workflow, undefined, { id: "c3" });
      const doc = await source.export("c3");
      const s = doc.streams!;
      const cases: Array<[unknown, RegExp]> = [
        ["not a list", /streams is not a list/],
        [[{ ...s[0], kind: "maybe" }, ...s.slice(1)], /streams\[0\]\.kind must be one of "chunk", "reset", "close"/],
        [[{ ...s[0], runId: "other" }, ...s.slice(1)], /streams\[0\]\.runId is "other", not its run's id "c3"/],
        [[s[0], s[2], ...s.slice(3)], /streams\[1\]: stream "answer" goes from seq 0 to 2, not to the next/],
        [[s[1], ...s.slice(2)], /streams\[0\]: stream "answer" starts at seq 1, not 0/],
        [[s[0], { ...s[1], chunk: null }, ...s.slice(2)], /streams\[1\]: a chunk record needs a chunk/],
        [[s[0], { ...s[1], offset: 5 }, ...s.slice(2)], /streams\[1\]: a chunk at offset 5, where the stream has 1 standing chunks/],
        [[s[0], s[3], s[1]], /streams\[2\]: the records of stream "answer" are not together/],
        [[s[0], { ...s[1], extra: 1 }, ...s.slice(2)], /streams\[1\] has a field "extra"/],
        [[{ ...s[0], stream: "" }], /streams\[0\]: .*stream name/],
      ];
      for (const [streams, message] of cases) {
        const error = await refusedWith(target.import({ ...doc, streams } as RunExport), "IMPORT_INVALID");
        expect(error.reason).toBe("shape");
        expect(error.message).toMatch(message);
      }
      expect(await target.list()).toEqual([]);
    } finally {
      await source.close();
      await target.close();
    }
  });
});

describe("streams in export and import: sealed chunks, redaction, a store without streams", () => {
  const key = Buffer.alloc(32, 7).toString("base64");
  const codec = encryptedCodec({ keys: { k1: key }, current: "k1" });

  it("a sealed chunk stays sealed in the document and reads back with the key; a redacted export holds it decoded and redacted", async () => {
    const { workflow } = chatWorkflow();
    const source = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [workflow], codec, redact: ["secret"] });
    const target = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [workflow], codec });
    try {
      await source.start(workflow, undefined, { id: "c4" });
      const doc = await source.export("c4");
      expect(doc.streams!.filter((r) => r.kind === "chunk").every((r) => r.chunk!.startsWith("enc:v1:k1:"))).toBe(true);
      expect(JSON.stringify(doc)).not.toContain("s3cret");
      await target.import(doc);
      expect(await readAll(target, "c4", "answer")).toEqual(await readAll(source, "c4", "answer"));
      const redacted = await source.export("c4", { redact: true });
      expect(redacted.streams!.map((r) => (r.chunk === null ? null : JSON.parse(r.chunk)))).toEqual([
        "intro",
        "a1",
        { secret: "[redacted]", n: 1 },
        "turned",
        null,
      ]);
      expect(JSON.stringify(redacted)).not.toMatch(/enc:v1|s3cret/);
    } finally {
      await source.close();
      await target.close();
    }
  });

  it("into a store that keeps no streams: STREAMS_UNSUPPORTED, nothing written (its streams are not dropped on the way)", async () => {
    const { workflow } = chatWorkflow();
    const source = createEngine({ store: memoryStore(), workflows: [workflow] });
    const inner = memoryStore({ name: "a store of my own" });
    const bare = new Proxy(inner, {
      get: (t, k) => {
        if (k === "appendStream" || k === "readStream" || k === "streamNames") return undefined;
        const value = Reflect.get(t, k);
        return typeof value === "function" ? value.bind(t) : value;
      },
    });
    const target = createEngine({ store: bare, workflows: [workflow] });
    try {
      await source.start(workflow, undefined, { id: "c5" });
      const error = await refusedWith(target.import(await source.export("c5")), "STREAMS_UNSUPPORTED");
      expect(error.message).toContain("a store of my own");
      expect(await target.list()).toEqual([]);
      // A run without streams exports from such a store, and imports into it.
      const quiet = defineWorkflow({ name: "quiet", run: async (ctx) => ctx.step("only", async () => 1) });
      await source.start(quiet, undefined, { id: "q" });
      await target.import(await source.export("q"));
      expect("streams" in (await target.export("q"))).toBe(false);
      // A store that reads streams but cannot list a run's: its export is refused rather than made without them.
      const unlisted = new Proxy(source.store, {
        get: (t, k) => {
          if (k === "streamNames") return undefined;
          if (k === "close") return async () => {};
          const value = Reflect.get(t, k);
          return typeof value === "function" ? value.bind(t) : value;
        },
      });
      const lister = createEngine({ store: unlisted, workflows: [workflow] });
      const unlistedError = await refusedWith(lister.export("c5"), "STREAMS_UNSUPPORTED");
      expect(unlistedError.message).toContain("streamNames");
      expect(unlistedError.message).toContain("cannot be listed");
      await lister.close();
    } finally {
      await source.close();
      await target.close();
    }
  });
});
