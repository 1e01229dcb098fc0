// Values: what a continue hands back is exactly what the first attempt got, or the step fails clearly.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { decodeValue, encodeValue, encodeValueAndDecoded, NOT_DECODED, tryEncode, Unencodable } from "../../src/payloads/values.js";
import { STORES } from "../helpers/stores.js";

const RICH = {
  date: new Date("2024-02-29T12:34:56.789Z"),
  big: 12345678901234567890n,
  map: new Map<unknown, unknown>([
    ["a", 1],
    [2, { nested: new Set([1, "x"]) }],
  ]),
  set: new Set([new Date(0), 3n]),
  nothing: undefined,
  holes: [1, undefined, 3],
  nan: Number.NaN,
  inf: Number.POSITIVE_INFINITY,
  ninf: Number.NEGATIVE_INFINITY,
  negZero: -0,
  $type: "a user key that looks like a tag",
  deep: { $type: "Date", value: "not really a date" },
  nullProto: Object.assign(Object.create(null), { k: "v" }),
  text: "quotes \" ' and \u2028 and emoji 🙂 and \u0000 nul",
};

describe("the value codec", () => {
  it("round-trips Date, BigInt, Map, Set, undefined, NaN, ±Infinity, -0 and objects with $type keys", () => {
    const text = encodeValue(RICH, "v", { maxBytes: 1e6 });
    expect(JSON.parse(text)).toBeTypeOf("object"); // readable JSON
    const back = decodeValue(text) as typeof RICH;
    expect(back).toStrictEqual({ ...RICH, nullProto: { k: "v" } });
    expect(Object.is(back.negZero, -0)).toBe(true);
    expect(back.map.get(2)).toEqual({ nested: new Set([1, "x"]) });
  });

  it.each([
    ["a function", { a: { fn: () => 1 } }, "$.a.fn", "a function"],
    ["a symbol", { s: Symbol("x") }, "$.s", "a symbol"],
    ["a class instance", { when: new URL("http://x") }, "$.when", "an instance of URL"],
    ["an Error", [new Error("boom")], "$[0]", "an instance of Error"],
    [
      "a circular reference",
      (() => {
        const o: Record<string, unknown> = {};
        o.self = o;
        return o;
      })(),
      "$.self",
      "a circular reference",
    ],
    ["a key that needs quoting", { "a b": () => 1 }, '$["a b"]', "a function"],
  ])("refuses %s, naming the path", (_what, value, path, found) => {
    const result = tryEncode(value);
    expect(result).toBeInstanceOf(Unencodable);
    expect(result).toMatchObject({ path, found: expect.stringContaining(found) });
  });

  it("plain JSON is written as JSON.stringify writes it; anything that needs a tag, at any depth, still gets one", () => {
    const plain = { a: [1, "x", null, true, { b: 2.5 }], s: "é \u2028", n: -3, empty: {}, list: [] };
    expect(tryEncode(plain)).toBe(JSON.stringify(plain));
    const nullProto = Object.assign(Object.create(null), { k: [1] });
    expect(tryEncode(nullProto)).toBe('{"k":[1]}');
    let deep: unknown = "bottom";
    for (let i = 0; i < 200; i++) deep = i % 2 ? [deep] : { d: deep };
    expect(tryEncode(deep)).toBe(JSON.stringify(deep));
    expect(decodeValue(tryEncode(deep) as string)).toEqual(deep);
    for (const [value, tag] of [
      [{ a: { b: [1, -0] } }, '{"$type":"Number","value":"-0"}'],
      [{ a: [1, undefined] }, '{"$type":"undefined"}'],
      [{ a: { b: undefined } }, '{"$type":"undefined"}'],
      [{ a: [{ $type: "x" }] }, '{"$type":"Object","value":{"$type":"x"}}'],
      [{ a: [new Date(0)] }, '{"$type":"Date","value":"1970-01-01T00:00:00.000Z"}'],
      [{ a: 1n }, '{"$type":"BigInt","value":"1"}'],
      [{ a: Number.NaN }, '{"$type":"Number","value":"NaN"}'],
      // eslint-disable-next-line no-sparse-arrays
      [[1, , 3], '{"$type":"undefined"}'],
    ] as const) {
      const text = tryEncode(value) as string;
      expect(text).toContain(tag);
      expect(decodeValue(text)).toStrictEqual(value instanceof Array && value.length === 3 ? [1, undefined, 3] : value);
    }
    // A toJSON (own, inherited or hidden) does not change what is recorded: the full encoder decides.
    const withOwn = Object.assign([1, 2], { toJSON: () => "hijacked" });
    class Sub extends Array<number> {
      toJSON() {
        return "sub";
      }
    }
    const hidden = Object.defineProperty({ x: 1 }, "toJSON", { value: () => ({ evil: true }), enumerable: false });
    expect(tryEncode(withOwn)).toBe("[1,2]");
    expect(tryEncode(Sub.from([1, 2]))).toBe("[1,2]");
    expect(tryEncode(hidden)).toBe('{"x":1}');
    // A cycle deeper than the plain check looks is still found by the full encoder.
    const chain: Record<string, unknown> = {};
    let at = chain;
    for (let i = 0; i < 100; i++) at = (at.next = {}) as Record<string, unknown>;
    at.next = chain;
    expect(tryEncode(chain)).toBeInstanceOf(Unencodable);
    expect((tryEncode({ s: Symbol("x") }) as Unencodable).found).toBe("a symbol (Symbol(x))");
    expect(tryEncode(Object.assign({ a: 1 }, { [Symbol("k")]: 1 }))).toBeInstanceOf(Unencodable);
  });

  it("what an encoding hands back is what decoding its text gives, for arrays and objects that only look plain", () => {
    class Sub extends Array<number> {}
    const species = Object.assign([1, 2], { constructor: { [Symbol.species]: Sub } });
    const ownConstructor = Object.assign([1, 2], { constructor: "x" });
    const nullProtoArray = Object.setPrototypeOf([1, 2], null) as unknown[];
    const posingAsArray = Object.assign(Object.create(Array.prototype) as object, { 0: "x", length: 1 });
    for (const value of [species, ownConstructor, nullProtoArray, { nested: [species, nullProtoArray] }]) {
      const { text, decoded } = encodeValueAndDecoded(value, "v", { maxBytes: 1e6 });
      expect(text).toContain("[1,2]");
      const fromText = decodeValue(text);
      if (decoded !== NOT_DECODED) expect(decoded).toStrictEqual(fromText);
      expect(JSON.stringify(decoded === NOT_DECODED ? fromText : decoded)).toBe(JSON.stringify(fromText));
    }
    // An object posing as an array is not taken for one: it is refused, naming it.
    expect(tryEncode(posingAsArray)).toMatchObject({ path: "$", found: "an instance of Array" });
    // A key added to Object.prototype does not make every stored object read as a tag.
    const polluted = Object.prototype as Record<string, unknown>;
    polluted.$type = "undefined";
    try {
      const text = encodeValue({ a: { b: 1 }, s: "$type" }, "v", { maxBytes: 1e6 });
      expect(decodeValue(text)).toEqual({ a: { b: 1 }, s: "$type" });
    } finally {
      delete polluted.$type;
    }
  });

  it("an enumerable property inherited from Object.prototype is not part of a value, and the copy handed back has none of it", () => {
    const polluted = Object.prototype as Record<string, unknown>;
    polluted.inherited = { from: "the prototype" };
    try {
      for (const value of [{ a: 1, b: { c: [1, { d: "x" }] } }, [{ a: 1 }]]) {
        const { text, decoded } = encodeValueAndDecoded(value, "v", { maxBytes: 1e6 });
        expect(text).not.toContain("inherited");
        expect(decodeValue(text)).toStrictEqual(value);
        const handedBack = decoded === NOT_DECODED ? decodeValue(text) : decoded;
        expect(handedBack).toStrictEqual(value);
        expect(JSON.stringify(handedBack)).toBe(JSON.stringify(value));
      }
    } finally {
      delete polluted.inherited;
    }
  });

  it("an enumerable symbol key is refused on both paths; a non-enumerable property, symbol or string, is not part of the value", () => {
    const sym = Symbol("k");
    // Plain, and beside a Date (the tagged encoder's path), at depth.
    for (const wrap of [(o: object) => o, (o: object) => ({ when: new Date(0), inner: [o] })]) {
      expect(tryEncode(wrap({ a: 1, [sym]: 1 }))).toMatchObject({ found: "an object with symbol keys" });
      const hidden = Object.defineProperty(Object.defineProperty({ a: 1 }, sym, { value: 2, enumerable: false }), "b", { value: 3, enumerable: false });
      const { text, decoded } = encodeValueAndDecoded(wrap(hidden), "v", { maxBytes: 1e6 });
      const back = decodeValue(text);
      expect(back).toStrictEqual(wrap({ a: 1 }));
      if (decoded !== NOT_DECODED) expect(decoded).toStrictEqual(back);
    }
    // A proxy that shows a symbol key to the copy is refused like any object with one.
    const proxy = new Proxy(
      { a: 1 },
      { ownKeys: () => ["a", sym], getOwnPropertyDescriptor: (_t, k) => ({ value: k === sym ? 2 : 1, enumerable: true, configurable: true }) },
    );
    expect(tryEncode(proxy)).toBeInstanceOf(Unencodable);
  });

  it("a shared (not circular) reference is fine", () => {
    const shared = { x: 1 };
    expect(decodeValue(encodeValue({ a: shared, b: shared }, "v", { maxBytes: 1e6 }))).toEqual({ a: { x: 1 }, b: { x: 1 } });
  });
});

describe.each(STORES)("step values (%s)", (_name, makeStore) => {
  it("the first attempt gets the decoded stored value, equal to what a continue hands back", async () => {
    const got: unknown[] = [];
    let fail = true;
    const workflow = defineWorkflow({
      name: "values",
      async run(ctx) {
        const value = await ctx.step("rich", async () => RICH);
        got.push(value);
        if (fail) throw new Error("after the step");
        return value;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "r" });
    fail = false;
    const result = await engine.continue("r");
    expect(got[0]).toStrictEqual(got[1]);
    expect(got[0]).not.toBe(RICH); // a copy, not the object the function returned
    expect(result.value).toStrictEqual(got[0]);
    expect((await engine.get("r")).steps[0]!.value).toStrictEqual(got[0]);
  });

  it("a plain value is handed back as a continue hands it back: a copy, plain prototypes, the same key order, a getter read once", async () => {
    const got: unknown[] = [];
    let reads = 0;
    let fail = true;
    const kept = { inner: [1], rows: [{ n: 1 }] };
    const workflow = defineWorkflow({
      name: "plain-values",
      async run(ctx) {
        const value = await ctx.step("plain", async () => {
          const nullProto = Object.assign(Object.create(null) as Record<string, unknown>, { z: 1, 10: "ten", a: [{ n: 2 }] });
          const withProtoKey = JSON.parse('{"__proto__": {"polluted": true}, "b": 1}') as Record<string, unknown>;
          // A getter that answers differently on each read: what is recorded is what is handed back.
          const moving = Object.defineProperty({}, "count", { get: () => ++reads, enumerable: true });
          return { nullProto, withProtoKey, moving, list: [1, "x", null, true, 2.5], nested: kept };
        });
        // The function's own objects, changed after it returned, do not reach what was handed back.
        kept.inner.push(2);
        kept.rows[0]!.n = 99;
        got.push(value);
        if (fail) throw new Error("after the step");
        return null;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "p" });
    fail = false;
    await engine.continue("p");
    const [first, second] = got as Array<Record<string, Record<string, unknown>>>;
    expect(first).toStrictEqual(second);
    expect(reads).toBe(1);
    expect(first!.nested).toEqual({ inner: [1], rows: [{ n: 1 }] });
    expect(first!.moving).toEqual({ count: 1 });
    expect(Object.getPrototypeOf(first!.nullProto)).toBe(Object.prototype);
    expect(Object.keys(first!.nullProto!)).toEqual(["10", "z", "a"]);
    expect(Object.keys(first!.nullProto!)).toEqual(Object.keys(second!.nullProto!));
    // "__proto__" stays an own key, as JSON.parse makes it; it does not become the prototype.
    expect(Object.hasOwn(first!.withProtoKey!, "__proto__")).toBe(true);
    expect(Object.getPrototypeOf(first!.withProtoKey)).toBe(Object.prototype);
    expect((first!.withProtoKey as { polluted?: boolean }).polluted).toBeUndefined();
    expect((await engine.get("p")).steps[0]!.value).toStrictEqual(first);
  });

  it("mutating the returned object after the step does not change what was recorded", async () => {
    const workflow = defineWorkflow({
      name: "mutate",
      async run(ctx) {
        const source = { items: [1, 2] };
        const value = await ctx.step("list", async () => source);
        source.items.push(3);
        value.items.push(4);
        return null;
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "r" });
    expect((await engine.get("r")).steps[0]!.value).toEqual({ items: [1, 2] });
  });

  it("a value that cannot be stored faithfully fails the step with VALUE_NOT_SERIALIZABLE naming step and path; never left intended", async () => {
    const workflow = defineWorkflow({
      name: "bad-value",
      async run(ctx) {
        return ctx.step("fetch", async () => ({ user: { name: "a", save: () => {} } }));
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const result = await engine.start(workflow, undefined, { id: "r" });
    expect(result).toMatchObject({ status: "failed", error: { code: "VALUE_NOT_SERIALIZABLE", step: "fetch" } });
    expect(result.error!.message).toContain("$.user.save is a function");
    expect(result.error!.message).toContain(`step "fetch"`);
    const [row] = (await engine.get("r")).steps;
    expect(row).toMatchObject({ key: "fetch", status: "failed", error: { code: "VALUE_NOT_SERIALIZABLE" } });
  });

  it("a value over the size cap fails with VALUE_TOO_LARGE; never left intended; the cap is configurable", async () => {
    const workflow = defineWorkflow({
      name: "big-value",
      async run(ctx) {
        return ctx.step("blob", async () => "x".repeat(2000));
      },
    });
    const store = makeStore();
    const engine = createEngine({ store, workflows: [workflow], maxValueBytes: 1000 });
    const result = await engine.start(workflow, undefined, { id: "r" });
    expect(result).toMatchObject({ status: "failed", error: { code: "VALUE_TOO_LARGE", step: "blob" } });
    expect(result.error!.message).toMatch(/2002 bytes.*limit of 1000/);
    expect((await engine.get("r")).steps[0]).toMatchObject({ status: "failed" });
    const roomy = createEngine({ store, workflows: [workflow], maxValueBytes: 10_000 });
    expect(await roomy.continue("r")).toMatchObject({ status: "completed", value: "x".repeat(2000) });
  });

  it("the default cap is 1 MiB", async () => {
    const workflow = defineWorkflow({
      name: "mib",
      async run(ctx) {
        return ctx.step("blob", async () => "é".repeat(600_000)); // 1.2 MB of UTF-8
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "failed", error: { code: "VALUE_TOO_LARGE" } });
  });

  it("a workflow result that cannot be stored ends the attempt failed; args that cannot be stored are refused at start", async () => {
    const workflow = defineWorkflow({
      name: "bad-result",
      async run() {
        return { when: new URL("http://example.com") };
      },
    });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "failed", error: { code: "VALUE_NOT_SERIALIZABLE" } });
    await expect(engine.start(workflow, { cb: () => 1 } as never, { id: "r2" })).rejects.toMatchObject({ code: "VALUE_NOT_SERIALIZABLE" });
    await expect(engine.get("r2")).rejects.toMatchObject({ code: "RUN_NOT_FOUND" });
  });
});

describe("the value codec and __proto__", () => {
  it("an own __proto__ key round-trips as data and never becomes a prototype", () => {
    const hostile = JSON.parse('{"__proto__": {"polluted": true}, "$type": "x", "nested": {"__proto__": {"also": 1}}}') as Record<string, unknown>;
    const back = decodeValue(encodeValue(hostile, "v", { maxBytes: 1e6 })) as Record<string, unknown>;
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(back).sort()).toEqual(["$type", "__proto__", "nested"]);
    expect(Object.getOwnPropertyDescriptor(back, "__proto__")!.value).toEqual({ polluted: true });
    expect((back as { polluted?: unknown }).polluted).toBeUndefined();
  });
});

describe("the value codec and bytes and RegExp", () => {
  const big = new ArrayBuffer(32);
  new Uint8Array(big).forEach((_, i, a) => (a[i] = i));
  /** One of each, with contents that tell the bytes apart. */
  const SAMPLES: Array<[string, unknown]> = [
    ["Buffer", Buffer.from("héllo")],
    ["Uint8Array", new Uint8Array([0, 1, 127, 128, 255])],
    ["Int8Array", new Int8Array([-128, -1, 0, 1, 127])],
    ["Uint8ClampedArray", new Uint8ClampedArray([0, 200, 255])],
    ["Int16Array", new Int16Array([-32768, -1, 0, 258, 32767])],
    ["Uint16Array", new Uint16Array([0, 1, 258, 65535])],
    ["Int32Array", new Int32Array([-(2 ** 31), -1, 0, 2 ** 31 - 1])],
    ["Uint32Array", new Uint32Array([0, 1, 2 ** 32 - 1])],
    ["Float32Array", new Float32Array([-0, Number.NaN, Number.POSITIVE_INFINITY, 1.5, -3.25])],
    ["Float64Array", new Float64Array([-0, Number.NaN, Number.NEGATIVE_INFINITY, Math.PI, Number.MIN_VALUE])],
    ["BigInt64Array", new BigInt64Array([-(2n ** 63n), -1n, 0n, 2n ** 63n - 1n])],
    ["BigUint64Array", new BigUint64Array([0n, 2n ** 64n - 1n])],
    ["ArrayBuffer", new Uint8Array([9, 8, 7]).buffer],
    ["DataView", new DataView(big, 4, 6)],
    ["RegExp", /^a+(?<rest>b|c)$/giu],
  ];

  it.each(SAMPLES)("a %s comes back as a %s with the same contents", (type, value) => {
    const text = encodeValue({ wrapped: [value] }, "v", { maxBytes: 1e6 });
    expect(JSON.parse(text)).toMatchObject({ wrapped: [{ $type: type }] }); // readable, tagged JSON
    const back = (decodeValue(text) as { wrapped: unknown[] }).wrapped[0];
    expect(Object.getPrototypeOf(back)).toBe(Object.getPrototypeOf(value));
    expect(back).toStrictEqual(value);
    expect(back).not.toBe(value);
  });

  it("writes bytes as base64 of their own bytes, little-endian, and a RegExp as its source and flags", () => {
    expect(tryEncode(new Uint8Array([1, 2, 3]))).toBe('{"$type":"Uint8Array","value":"AQID"}');
    expect(tryEncode(Buffer.from("hi"))).toBe('{"$type":"Buffer","value":"aGk="}');
    expect(tryEncode(new Uint16Array([1, 258]))).toBe('{"$type":"Uint16Array","value":"AQACAQ=="}'); // 01 00 02 01
    expect(tryEncode(new Uint8Array([255, 254]).buffer)).toBe('{"$type":"ArrayBuffer","value":"//4="}');
    expect(tryEncode(/a\/b/g)).toBe('{"$type":"RegExp","value":{"source":"a\\\\/b","flags":"g"}}');
    expect(tryEncode(new Uint8Array(0))).toBe('{"$type":"Uint8Array","value":""}');
  });

  it("a Uint8Array comes back as a Uint8Array, not a Buffer; a Buffer as a Buffer", () => {
    const back = decodeValue(tryEncode({ bytes: new Uint8Array([1]), buffer: Buffer.from([1]) }) as string) as { bytes: Uint8Array; buffer: Buffer };
    expect(Buffer.isBuffer(back.bytes)).toBe(false);
    expect(back.bytes).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(back.buffer)).toBe(true);
    expect(back.buffer.toString("hex")).toBe("01");
  });

  it("a view on part of a larger buffer stores only its own bytes, and comes back on a buffer of just those", () => {
    const whole = new ArrayBuffer(1024);
    const part = new Uint32Array(whole, 8, 2);
    part.set([0xdeadbeef, 7]);
    const text = tryEncode(part) as string;
    expect(text).toBe('{"$type":"Uint32Array","value":"776t3gcAAAA="}'); // 8 bytes, not 1,024
    const back = decodeValue(text) as Uint32Array;
    expect([...back]).toEqual([0xdeadbeef, 7]);
    expect(back.byteOffset).toBe(0);
    expect(back.buffer.byteLength).toBe(8);
    const view = new DataView(whole, 8, 4);
    expect(decodeValue(tryEncode(view) as string)).toStrictEqual(new DataView(new Uint8Array([0xef, 0xbe, 0xad, 0xde]).buffer));
    // Node's small Buffers share one pool: only the Buffer's own bytes are stored.
    const pooled = Buffer.from("abc");
    expect(pooled.buffer.byteLength).toBeGreaterThan(3);
    expect(tryEncode(pooled)).toBe('{"$type":"Buffer","value":"YWJj"}');
  });

  it("keeps bytes and RegExps inside Maps, Sets and arrays, and a RegExp's lastIndex", () => {
    const sticky = /x/y;
    sticky.lastIndex = 3;
    const value = { m: new Map<unknown, unknown>([[new Uint8Array([1]), [/k/]]]), s: new Set([new Float32Array([0.5])]), sticky };
    const back = decodeValue(encodeValue(value, "v", { maxBytes: 1e6 })) as typeof value;
    expect(back).toStrictEqual(value);
    expect(back.sticky.lastIndex).toBe(3);
    expect([...back.m.keys()][0]).toBeInstanceOf(Uint8Array);
  });

  it("an empty or detached buffer comes back empty", () => {
    const buffer = new ArrayBuffer(8);
    const view = new Uint8Array(buffer, 2, 4);
    structuredClone(buffer, { transfer: [buffer] }); // detaches it
    expect(decodeValue(tryEncode(buffer) as string)).toStrictEqual(new ArrayBuffer(0));
    expect(decodeValue(tryEncode(view) as string)).toStrictEqual(new Uint8Array(0));
  });

  it.each([
    ["a subclass of Uint8Array", { b: new (class Bytes extends Uint8Array {})(2) }, "$.b", "an instance of Bytes"],
    ["a subclass of RegExp", { r: new (class Pattern extends RegExp {})("x") }, "$.r", "an instance of Pattern"],
    ["a SharedArrayBuffer", { s: new SharedArrayBuffer(4) }, "$.s", "an instance of SharedArrayBuffer"],
    ["an object that only pretends to be a Uint8Array", { f: Object.create(Uint8Array.prototype) as object }, "$.f", "an instance of Uint8Array"],
    ["an object that only pretends to be an ArrayBuffer", { f: Object.create(ArrayBuffer.prototype) as object }, "$.f", "an instance of ArrayBuffer"],
    ["an object that only pretends to be a RegExp", { f: Object.create(RegExp.prototype) as object }, "$.f", "an instance of RegExp"],
  ])("still refuses %s, naming the path", (_what, value, path, found) => {
    expect(tryEncode(value)).toMatchObject({ path, found });
  });

  it("a circular value holding a typed array is still refused with its path", () => {
    const value: Record<string, unknown> = { bytes: new Uint8Array([1, 2]), nested: {} };
    (value.nested as Record<string, unknown>).back = value;
    expect(tryEncode(value)).toMatchObject({ path: "$.nested.back", found: "a circular reference" });
    expect(() => encodeValue(value, "The value", { maxBytes: 1e6 })).toThrow(expect.objectContaining({ code: "VALUE_NOT_SERIALIZABLE" }));
  });

  it("the size cap counts the encoded size: bytes under the cap whose base64 is over it are refused", () => {
    const bytes = new Uint8Array(900); // 900 raw bytes, 1,200 characters of base64
    const encodedSize = (tryEncode(bytes) as string).length;
    expect(encodedSize).toBe('{"$type":"Uint8Array","value":""}'.length + 1200);
    expect(() => encodeValue(bytes, "The value", { maxBytes: 1000 })).toThrow(
      expect.objectContaining({ code: "VALUE_TOO_LARGE", message: expect.stringContaining(`${encodedSize} bytes`) }),
    );
    expect(encodeValue(bytes, "The value", { maxBytes: encodedSize })).toHaveLength(encodedSize);
    expect(() => encodeValue(bytes, "The value", { maxBytes: encodedSize - 1 })).toThrow(expect.objectContaining({ code: "VALUE_TOO_LARGE" }));
  });

  it("text written before these tags existed decodes as it did: a user's own $type key was always wrapped", () => {
    // What older code wrote for { $type: "Uint8Array", value: "AQID" } and { $type: "RegExp", value: {...} }.
    const old =
      '[{"$type":"Object","value":{"$type":"Uint8Array","value":"AQID"}},{"$type":"Object","value":{"$type":"RegExp","value":{"source":"x","flags":""}}},{"$type":"Date","value":"1970-01-01T00:00:00.000Z"}]';
    expect(decodeValue(old)).toStrictEqual([{ $type: "Uint8Array", value: "AQID" }, { $type: "RegExp", value: { source: "x", flags: "" } }, new Date(0)]);
    // And such objects are still written that way.
    const lookalike = { $type: "Buffer", value: "aGk=" };
    expect(tryEncode(lookalike)).toBe('{"$type":"Object","value":{"$type":"Buffer","value":"aGk="}}');
    expect(decodeValue(tryEncode(lookalike) as string)).toStrictEqual(lookalike);
  });

  it("plain JSON takes the fast path unchanged; a typed array anywhere takes the tagged one", () => {
    const plain = { a: [1, "x", null, true, { b: 2.5 }], list: [] };
    expect(tryEncode(plain)).toBe(JSON.stringify(plain));
    // JSON.stringify would write a Buffer as {"type":"Buffer","data":[...]} and a Uint8Array as {"0":…}.
    expect(tryEncode({ a: [{ b: Buffer.from([1]) }] })).toBe('{"a":[{"b":{"$type":"Buffer","value":"AQ=="}}]}');
    expect(tryEncode({ a: [{ b: new Int8Array([-1]) }] })).toBe('{"a":[{"b":{"$type":"Int8Array","value":"/w=="}}]}');
  });
});
