// Payload codec and encryption: a secret a step returns is never written in plain text.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createEngine, defineWorkflow, encryptedCodec, type Codec } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { tmpDb } from "../helpers/tmp.js";

const SECRET = "sk-live-4f1e8c2a9b7d6e5f";

const fetchToken = defineWorkflow({
  name: "fetch-token",
  args: z.object({ account: z.string(), password: z.string() }),
  async run(ctx, args) {
    const token = await ctx.step("login", async () => ({ token: SECRET, account: args.account }));
    const who = await ctx.waitForEvent("confirm");
    if (who === "fail") throw new Error(`could not use ${SECRET}`);
    return ctx.step("use", async () => `used ${token.token} for ${String(who)}`);
  },
});

/** Every byte steplog wrote for this store: the database, its WAL and shared memory. */
function storeBytes(file: string): Buffer {
  const dir = path.dirname(file);
  return Buffer.concat(
    fs
      .readdirSync(dir)
      .filter((f) => f.startsWith(path.basename(file)))
      .map((f) => fs.readFileSync(path.join(dir, f))),
  );
}

const keys = { k1: crypto.randomBytes(32), k2: crypto.randomBytes(32) };

describe("encryptedCodec", () => {
  it("a secret returned by a step, in args, in an event and in an error never appears in the store file's bytes; everything reads back", async () => {
    const file = tmpDb();
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [fetchToken], codec: encryptedCodec({ keys, current: "k1" }) });
    await engine.start(fetchToken, { account: "acme", password: SECRET }, { id: "t" });
    await engine.send("t", "confirm", { by: SECRET });
    const result = await engine.continue("t");
    expect(result).toMatchObject({ status: "completed", value: `used ${SECRET} for [object Object]` });
    await engine.start(fetchToken, { account: "acme", password: "x" }, { id: "t2" });
    await engine.send("t2", "confirm", "fail");
    expect(await engine.continue("t2")).toMatchObject({ status: "failed", error: { message: `could not use ${SECRET}` } });
    const view = await engine.get("t");
    expect(view.args).toEqual({ account: "acme", password: SECRET });
    expect(view.steps.map((s) => s.value)).toEqual([{ token: SECRET, account: "acme" }, { by: SECRET }, `used ${SECRET} for [object Object]`]);
    expect((await engine.get("t2")).error!.message).toContain(SECRET);
    // Queries on the plain columns still work.
    expect((await engine.list({ status: "completed" })).map((r) => r.id)).toEqual(["t"]);
    await engine.close();
    const bytes = storeBytes(file);
    expect(bytes.includes(Buffer.from(SECRET))).toBe(false);
    expect(bytes.includes(Buffer.from("enc:v1:k1:"))).toBe(true);
    expect(bytes.includes(Buffer.from("fetch-token"))).toBe(true); // names stay plain
  });

  it("a continue without the right key fails with CODEC_KEY_MISSING naming the key id, and nothing is overwritten", async () => {
    const file = tmpDb();
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [fetchToken], codec: encryptedCodec({ keys, current: "k1" }) });
    await engine.start(fetchToken, { account: "acme", password: SECRET }, { id: "t" });
    await engine.close();
    const before = storeBytes(file);
    const wrong = createEngine({
      store: sqliteStore({ path: file }),
      workflows: [fetchToken],
      codec: encryptedCodec({ keys: { k2: keys.k2 }, current: "k2" }),
    });
    const error = await wrong.continue("t").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "CODEC_KEY_MISSING", keyId: "k1" });
    expect((error as Error).message).toContain(`key "k1"`);
    await expect(wrong.get("t")).rejects.toMatchObject({ code: "CODEC_KEY_MISSING" });
    // The plain columns still answer.
    expect((await wrong.list()).map((r) => [r.id, r.status])).toEqual([["t", "waiting"]]);
    await wrong.close();
    expect(storeBytes(file).equals(before)).toBe(true);
  });

  it("rotation: new values are sealed with the current key, old runs stay readable with the old key kept", async () => {
    const file = tmpDb();
    const first = createEngine({
      store: sqliteStore({ path: file }),
      workflows: [fetchToken],
      codec: encryptedCodec({ keys: { k1: keys.k1 }, current: "k1" }),
    });
    await first.start(fetchToken, { account: "old", password: "p" }, { id: "old" });
    await first.close();
    const rotated = createEngine({ store: sqliteStore({ path: file }), workflows: [fetchToken], codec: encryptedCodec({ keys, current: "k2" }) });
    await rotated.send("old", "confirm", "ok");
    expect(await rotated.continue("old")).toMatchObject({ status: "completed", value: `used ${SECRET} for ok` });
    await rotated.close();
    const text = storeBytes(file).toString("latin1");
    expect(text).toContain("enc:v1:k1:");
    expect(text).toContain("enc:v1:k2:");
  });

  it("a tampered payload is refused (STORE_UNREADABLE), and bad keys are refused at creation", async () => {
    const codec = encryptedCodec({ keys, current: "k1" });
    const sealed = await codec.encode('"hello"');
    const tampered = sealed.slice(0, -4) + (sealed.endsWith("AAAA") ? "BBBB" : "AAAA");
    expect(() => codec.decode(tampered)).toThrow(expect.objectContaining({ code: "STORE_UNREADABLE" }));
    expect(codec.decode('"written before encryption"')).toBe('"written before encryption"');
    expect(() => encryptedCodec({ keys: { a: Buffer.alloc(16) }, current: "a" })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    expect(() => encryptedCodec({ keys, current: "k9" })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
  });

  it("any codec, async too, sees every stored payload", async () => {
    const seen: string[] = [];
    const codec: Codec = {
      encode: async (plain) => {
        seen.push(plain);
        return Buffer.from(plain).toString("base64");
      },
      decode: async (stored) => Buffer.from(stored, "base64").toString(),
    };
    const workflow = defineWorkflow({
      name: "b64",
      async run(ctx) {
        return ctx.step("s", async () => ({ n: 1 }));
      },
    });
    const engine = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [workflow], codec });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "completed", value: { n: 1 } });
    expect(seen).toEqual(['{"$type":"undefined"}', '{"n":1}', '{"n":1}']);
    expect((await engine.get("r")).steps[0]!.value).toEqual({ n: 1 });
  });
});

describe("redaction for display", () => {
  it("get(id, { redact: true }) hides matching paths in args, step values and the result; the records are untouched", async () => {
    const workflow = defineWorkflow({
      name: "redacted",
      async run(ctx, _args: unknown) {
        await ctx.step("login", async () => ({ token: SECRET, user: { name: "ana", card: { number: "4242", exp: "12/30" } } }));
        return { ok: true, token: SECRET };
      },
    });
    const engine = createEngine({ store: sqliteStore({ path: tmpDb() }), workflows: [workflow], redact: ["token", "password", "user.card.number"] });
    await engine.start(workflow, { password: SECRET, list: [{ token: "t" }] }, { id: "r" });
    const shown = await engine.get("r", { redact: true });
    expect(shown.args).toEqual({ password: "[redacted]", list: [{ token: "[redacted]" }] });
    expect(shown.steps[0]!.value).toEqual({ token: "[redacted]", user: { name: "ana", card: { number: "[redacted]", exp: "12/30" } } });
    expect(shown.value).toEqual({ ok: true, token: "[redacted]" });
    expect(JSON.stringify(shown)).not.toContain(SECRET);
    expect((await engine.get("r")).steps[0]!.value).toMatchObject({ token: SECRET });
    const byFunction = createEngine({ store: engine.store, workflows: [workflow], redact: (_path, value) => value === SECRET });
    expect(JSON.stringify(await byFunction.get("r", { redact: true }))).not.toContain(SECRET);
  });
});

describe.skipIf(!process.env.STEPLOG_PG_URL)("encryptedCodec on Postgres", () => {
  it("a secret returned by a step does not appear in any Postgres row", async () => {
    const { pgStore } = await import("../helpers/pg.js");
    const pgModule = await import("pg");
    const store = pgStore();
    const engine = createEngine({ store, workflows: [fetchToken], codec: encryptedCodec({ keys, current: "k1" }) });
    await engine.start(fetchToken, { account: "acme", password: SECRET }, { id: "t" });
    await engine.send("t", "confirm", { by: SECRET });
    expect(await engine.continue("t")).toMatchObject({ status: "completed" });
    await engine.close();
    const schema = (store as unknown as { schema: string }).schema;
    const admin = new pgModule.default.Pool({ connectionString: process.env.STEPLOG_PG_URL, max: 1 });
    try {
      let seen = 0;
      for (const table of ["runs", "attempts", "steps", "events", "leases"]) {
        const { rows } = await admin.query(`SELECT * FROM "${schema}".${table}`);
        seen += rows.length;
        expect(JSON.stringify(rows)).not.toContain(SECRET);
      }
      expect(seen).toBeGreaterThan(5);
    } finally {
      await admin.end();
    }
  });

  it("a run sealed with a key this engine lacks takes no plain payload: send, approve, reject, cancel and resolve are refused, nothing written", async () => {
    const file = tmpDb();
    const sealed = createEngine({ store: sqliteStore({ path: file }), workflows: [fetchToken], codec: encryptedCodec({ keys, current: "k1" }) });
    await sealed.start(fetchToken, { account: "acme", password: "x" }, { id: "t" });
    await sealed.close();
    const before = storeBytes(file).length;
    const plain = createEngine({ store: sqliteStore({ path: file }) });
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ["send", () => plain.send("t", "confirm", { by: "eve" })],
      ["send keep", () => plain.send("t", "other", "x", { keep: true })],
      ["approve", () => plain.approve("t", "login", { by: "eve" })],
      ["reject", () => plain.reject("t", "login", { by: "eve", reason: "plain text" })],
      ["cancel", () => plain.cancel("t", { reason: "plain text" })],
      ["resolve", () => plain.resolve("t", "login", { value: "plain text" })],
    ];
    for (const [what, call] of attempts) {
      await expect(call(), what).rejects.toMatchObject({ code: "CODEC_KEY_MISSING", message: expect.stringContaining(`key "k1"`) });
    }
    await plain.close();
    const after = createEngine({ store: sqliteStore({ path: file }), codec: encryptedCodec({ keys, current: "k1" }) });
    const view = await after.get("t");
    expect(view.status).toBe("waiting");
    expect((await after.store.loadRun("t"))!.events).toEqual([]);
    await after.close();
    expect(storeBytes(file).toString("latin1")).not.toContain("plain text");
    expect(before).toBeGreaterThan(0);
  });
});
