// Bytes and RegExps as values: a Buffer, a Uint8Array, every other typed array, an ArrayBuffer, a
// DataView and a RegExp come back from the store as what they were, on every store, as step
// values, args, results and event payloads; the size cap counts their encoded size; a cycle is
// still refused with its path.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, redact } from "../../src/entries/index.js";
import { testWorkflow } from "../../src/entries/testing.js";
import { EVERY_STORE } from "../helpers/stores.js";

function samples() {
  const shared = new ArrayBuffer(64);
  new Uint8Array(shared).forEach((_, i, a) => (a[i] = 255 - i));
  return {
    buffer: Buffer.from("héllo, bytes"),
    uint8: new Uint8Array([0, 1, 127, 128, 255]),
    int8: new Int8Array([-128, -1, 0, 1, 127]),
    clamped: new Uint8ClampedArray([0, 200, 255]),
    int16: new Int16Array([-32768, -1, 0, 258, 32767]),
    uint16: new Uint16Array([0, 1, 258, 65535]),
    int32: new Int32Array([-(2 ** 31), -1, 0, 2 ** 31 - 1]),
    uint32: new Uint32Array([0, 1, 2 ** 32 - 1]),
    float32: new Float32Array([-0, Number.NaN, Number.POSITIVE_INFINITY, 1.5]),
    float64: new Float64Array([-0, Number.NaN, Number.NEGATIVE_INFINITY, Math.PI]),
    bigInt64: new BigInt64Array([-(2n ** 63n), -1n, 2n ** 63n - 1n]),
    bigUint64: new BigUint64Array([0n, 2n ** 64n - 1n]),
    arrayBuffer: new Uint8Array([9, 8, 7]).buffer,
    dataView: new DataView(shared, 8, 4),
    part: new Uint16Array(shared, 16, 3), // a view on part of a larger buffer
    empty: new Uint8Array(0),
    regExp: /^(?<word>\w+)-\d+$/giu,
  };
}
type Samples = ReturnType<typeof samples>;

describe.each(EVERY_STORE)("bytes and RegExp values (%s)", (_name, makeStore) => {
  it("a step returning each type hands back an equal value of the same type, on the first attempt and on a continue in a new engine", async () => {
    const expected = samples();
    const got: Samples[] = [];
    let calls = 0;
    let fail = true;
    const workflow = defineWorkflow({
      name: "bytes",
      async run(ctx) {
        const value = await ctx.step("read", async () => {
          calls++;
          return samples();
        });
        got.push(value);
        if (fail) throw new Error("after the step");
        return "done";
      },
    });
    const store = makeStore();
    const first = createEngine({ store, workflows: [workflow] });
    expect(await first.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "failed" });
    fail = false;
    const second = createEngine({ store, workflows: [workflow] });
    expect(await second.continue("r")).toMatchObject({ status: "completed", value: "done" });
    expect(calls).toBe(1); // the continue reused the record
    for (const value of got) {
      expect(value).toStrictEqual(expected);
      for (const key of Object.keys(expected) as Array<keyof Samples>) {
        expect(Object.getPrototypeOf(value[key]), key).toBe(Object.getPrototypeOf(expected[key]));
      }
      expect(Buffer.isBuffer(value.buffer)).toBe(true);
      expect(value.buffer.toString()).toBe("héllo, bytes");
      expect(Buffer.isBuffer(value.uint8)).toBe(false);
      expect([...value.part]).toEqual([...expected.part]);
      expect(value.part.buffer.byteLength).toBe(6); // only its own bytes were stored
      expect(value.dataView.getUint32(0)).toBe(expected.dataView.getUint32(0));
      expect(value.regExp.exec("abc-12")?.groups).toEqual({ word: "abc" });
      expect(Object.is(value.float64[0], -0)).toBe(true);
    }
    expect((await second.get("r")).steps[0]!.value).toStrictEqual(expected);
    await first.close();
    await second.close();
  });

  it("args, the workflow's result and an event payload with bytes round-trip", async () => {
    const payloads: unknown[] = [];
    const workflow = defineWorkflow({
      name: "bytes-through",
      async run(ctx, args: { file: Buffer; mask: Uint8Array; pattern: RegExp }) {
        const upload = (await ctx.waitForEvent("upload")) as { chunk: Uint8Array; checksum: ArrayBuffer };
        payloads.push(upload);
        const masked = await ctx.step("mask", async () => Buffer.from(args.file.map((b, i) => b ^ args.mask[i % args.mask.length]!)));
        return { masked, chunk: upload.chunk, checksum: upload.checksum, pattern: args.pattern, isBuffer: Buffer.isBuffer(args.file) };
      },
    });
    const args = { file: Buffer.from([1, 2, 3, 4]), mask: new Uint8Array([0xff, 0]), pattern: /x+/m };
    const store = makeStore();
    const engine = createEngine({ store, workflows: [workflow] });
    expect(await engine.start(workflow, args, { id: "r" })).toMatchObject({ status: "waiting", waitingFor: { kind: "event", event: "upload" } });
    const payload = { chunk: new Uint8Array([10, 20, 30]), checksum: new Uint32Array([0xcafebabe]).buffer };
    await engine.send("r", "upload", payload);
    const later = createEngine({ store, workflows: [workflow] });
    const result = await later.continue("r");
    expect(result).toMatchObject({ status: "completed" });
    const expected = { masked: Buffer.from([0xfe, 2, 0xfc, 4]), chunk: payload.chunk, checksum: payload.checksum, pattern: /x+/m, isBuffer: true };
    expect(result.value).toStrictEqual(expected);
    expect(payloads.at(-1)).toStrictEqual(payload);
    const view = await later.get("r");
    expect(view.args).toStrictEqual(args);
    expect(Buffer.isBuffer((view.args as typeof args).file)).toBe(true);
    expect(Buffer.isBuffer((view.args as typeof args).mask)).toBe(false);
    expect(view.value).toStrictEqual(expected);
    expect(view.steps.find((s) => s.key === "upload")!.value).toStrictEqual(payload);
    await engine.close();
    await later.close();
  });

  it("the size cap counts the encoded size: bytes under maxValueBytes whose encoding is over it are refused with VALUE_TOO_LARGE", async () => {
    const sizes = { read: 800, write: 600 };
    const workflow = defineWorkflow({
      name: "bytes-cap",
      async run(ctx, args: { step: "read" | "write" }) {
        return ctx.step(args.step, async () => new Uint8Array(sizes[args.step]));
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow], maxValueBytes: 1000 });
    // 800 raw bytes are under the cap; their base64 (1,068 characters) and tag are not.
    const over = await engine.start(workflow, { step: "read" }, { id: "over" });
    expect(over).toMatchObject({ status: "failed", error: { code: "VALUE_TOO_LARGE", step: "read" } });
    expect(over.error!.message).toMatch(/1101 bytes.*limit of 1000/);
    expect((await engine.get("over")).steps[0]).toMatchObject({ key: "read", status: "failed" });
    // 600 raw bytes encode to 833: under the cap.
    const under = await engine.start(workflow, { step: "write" }, { id: "under" });
    expect(under).toMatchObject({ status: "completed" });
    expect(under.value).toStrictEqual(new Uint8Array(600));
    // The same for args and event payloads.
    await expect(engine.start(workflow, { step: "write", pad: Buffer.alloc(800) } as never, { id: "big-args" })).rejects.toMatchObject({
      code: "VALUE_TOO_LARGE",
    });
    await engine.close();
  });

  it("a circular value holding a typed array is still refused with its path", async () => {
    const workflow = defineWorkflow({
      name: "bytes-cycle",
      async run(ctx) {
        return ctx.step("fetch", async () => {
          const value: { bytes: Uint8Array; meta: { owner?: unknown } } = { bytes: new Uint8Array([1, 2, 3]), meta: {} };
          value.meta.owner = value;
          return value;
        });
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "r" });
    expect(result).toMatchObject({ status: "failed", error: { code: "VALUE_NOT_SERIALIZABLE", step: "fetch" } });
    expect(result.error!.message).toContain("$.meta.owner is a circular reference");
    expect((await engine.get("r")).steps[0]).toMatchObject({ key: "fetch", status: "failed" });
    await engine.close();
  });

  it("a subclass of a typed array is still refused, naming the class", async () => {
    class Pixels extends Uint8ClampedArray {}
    const workflow = defineWorkflow({
      name: "bytes-subclass",
      async run(ctx) {
        return ctx.step("render", async () => ({ frame: new Pixels(4) }));
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "r" });
    expect(result).toMatchObject({ status: "failed", error: { code: "VALUE_NOT_SERIALIZABLE", step: "render" } });
    expect(result.error!.message).toContain("$.frame is an instance of Pixels");
    await engine.close();
  });
});

describe("bytes in testWorkflow and redaction", () => {
  it("testWorkflow hands back seeded bytes as their own type", async () => {
    const workflow = defineWorkflow({
      name: "seeded-bytes",
      async run(ctx) {
        const key = await ctx.step("key", async () => Buffer.from("not this one"));
        const digest = await ctx.step("digest", async () => new Uint8Array([0]));
        return { key, digest, keyIsBuffer: Buffer.isBuffer(key), digestIsBuffer: Buffer.isBuffer(digest) };
      },
    });
    const run = await testWorkflow(workflow, { args: undefined, earlier: { steps: { key: Buffer.from("seeded"), digest: new Uint8Array([1, 2]) } } });
    expect(run.status).toBe("completed");
    expect(run.reused).toEqual(["key", "digest"]);
    expect(run.value).toStrictEqual({ key: Buffer.from("seeded"), digest: new Uint8Array([1, 2]), keyIsBuffer: true, digestIsBuffer: false });
  });

  it("redaction keeps bytes and a RegExp whole, or replaces them whole", () => {
    const value = { bytes: new Uint8Array([1, 2]), token: Buffer.from("secret"), pattern: /p/g };
    expect(redact(value, ["token"])).toStrictEqual({ bytes: new Uint8Array([1, 2]), token: "[redacted]", pattern: /p/g });
  });
});
