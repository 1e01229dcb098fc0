// DESIGN.md, "A step's input: what it acts on" — approvals bind to it: approve records the digest
// of the input it approved; a continue that reaches the step with another input parks it for a
// new approval (the old one kept, the wait marked stale); approve(id, step, { inputDigest })
// approves only that input (APPROVAL_STALE otherwise); engine.approvals() lists what is to be
// approved with its input. A step without input behaves as before.
import { createHash } from "node:crypto";
import { readFileSync, existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, encryptedCodec } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { EVERY_STORE } from "../helpers/stores.js";
import { tmpDb } from "../helpers/tmp.js";

const sha = (text: string) => `sha256:${createHash("sha256").update(text).digest("hex")}`;

/** An email sent after approval; the draft is the test's to change between attempts. */
function mailer() {
  const state = { draft: { to: "ana@example.com", body: "Hello!" } as { to: string; body: string }, sent: [] as string[] };
  const workflow = defineWorkflow({
    name: "mailer",
    async run(ctx) {
      const draft = await ctx.step("draft", async () => "drafted");
      return ctx.step("send", { effect: "irreversible", approval: true, input: state.draft }, async (info) => {
        const { body } = info.input as { body: string };
        state.sent.push(body);
        return `${draft}: sent ${body}`;
      });
    },
  });
  return { workflow, state };
}

describe.each(EVERY_STORE)("approvals bound to the step's input (%s)", (_name, makeStore) => {
  it("the wait carries the input's digest; approve with that digest runs the step for that input", async () => {
    const { workflow, state } = mailer();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const digest = sha(JSON.stringify(state.draft));
    const parked = await engine.start(workflow, undefined, { id: "m" });
    expect(parked).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: "send", inputDigest: digest } });
    // The wait shown has no stored input text in it: the queue shows the input decoded.
    expect(parked.waitingFor).not.toHaveProperty("input");
    expect((await engine.get("m")).waitingFor).toEqual({ kind: "approval", step: "send", inputDigest: digest });
    const [pending, ...more] = await engine.approvals();
    expect(more).toEqual([]);
    expect(pending).toMatchObject({ runId: "m", workflow: "mailer", step: "send", input: state.draft, inputDigest: digest });
    expect(Date.parse(pending!.since)).not.toBeNaN();
    expect(pending).not.toHaveProperty("stale");
    await engine.approve("m", "send", { by: "ana", inputDigest: pending!.inputDigest! });
    expect(await engine.approvals()).toEqual([]);
    expect(await engine.continue("m")).toMatchObject({ status: "completed", value: "drafted: sent Hello!" });
    expect(state.sent).toEqual(["Hello!"]);
    await engine.close();
  });

  it("approve with a digest of another input is refused with APPROVAL_STALE and records nothing", async () => {
    const { workflow, state } = mailer();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "m" });
    const seen = sha(JSON.stringify({ to: "ana@example.com", body: "Hi!" }));
    const refused = await engine.approve("m", "send", { inputDigest: seen }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "APPROVAL_STALE", runId: "m", step: "send" });
    const message = (refused as Error).message;
    expect(message).toContain(seen);
    expect(message).toContain(sha(JSON.stringify(state.draft)));
    expect(message).toContain("steplog approvals");
    expect(message).toContain("engine.approvals()");
    // Nothing was recorded: the run still waits, and approving what waits now goes on.
    expect(await engine.get("m")).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: "send" } });
    await expect(engine.approve("m", "send", { inputDigest: "" })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await engine.approve("m", "send");
    expect(await engine.continue("m")).toMatchObject({ status: "completed" });
    expect(state.sent).toEqual(["Hello!"]);
    await engine.close();
  });

  it("an approval given for one input does not run the step with another: it parks for a new approval, marked stale with what changed", async () => {
    const { workflow, state } = mailer();
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    await engine.start(workflow, undefined, { id: "m" });
    const approvedDigest = sha(JSON.stringify(state.draft));
    // Approved without a digest: the input waiting now is approved, its digest recorded.
    await engine.approve("m", "send", { by: "ana" });
    // A bug fix changes the draft before the run goes on.
    state.draft = { to: "ana@example.com", body: "Hello, fixed!" };
    const parked = await engine.continue("m");
    expect(parked).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: "send", inputDigest: sha(JSON.stringify(state.draft)) } });
    expect(parked.waitingFor!.stale).toMatchObject({ by: "ana", inputDigest: approvedDigest });
    expect(state.sent).toEqual([]);
    const [pending] = await engine.approvals({ runId: "m" });
    expect(pending).toMatchObject({
      step: "send",
      input: state.draft,
      stale: {
        by: "ana",
        inputDigest: approvedDigest,
        input: { to: "ana@example.com", body: "Hello!" },
        previews: { approved: '{"to":"ana@example.com","body":"Hello!"}', now: '{"to":"ana@example.com","body":"Hello, fixed!"}' },
      },
    });
    expect(Date.parse(pending!.stale!.at)).not.toBeNaN();
    // The old approval is kept in the run's events; the old digest no longer approves.
    await expect(engine.approve("m", "send", { inputDigest: approvedDigest })).rejects.toMatchObject({ code: "APPROVAL_STALE" });
    await engine.approve("m", "send", { by: "bo", inputDigest: pending!.inputDigest! });
    expect(await engine.continue("m")).toMatchObject({ status: "completed", value: "drafted: sent Hello, fixed!" });
    expect(state.sent).toEqual(["Hello, fixed!"]);
    const exported = await engine.export("m");
    expect(exported.events.filter((e) => e.name === "steplog:approval:send")).toHaveLength(2);
    await engine.close();
  });

  it("a step without input is approved as before (no digest, no stale), and approve with a digest is refused", async () => {
    let sent = 0;
    let body = "one";
    const workflow = defineWorkflow({ name: "plain", run: (ctx) => ctx.step("deploy", { approval: true }, async () => `${body} ${++sent}`) });
    const engine = createEngine({ store: makeStore(), workflows: [workflow] });
    const parked = await engine.start(workflow, undefined, { id: "p" });
    expect(parked.waitingFor).toEqual({ kind: "approval", step: "deploy" });
    const [pending] = await engine.approvals();
    expect(pending).toEqual({ runId: "p", workflow: "plain", step: "deploy", since: pending!.since });
    await expect(engine.approve("p", "deploy", { inputDigest: sha('"x"') })).rejects.toMatchObject({ code: "APPROVAL_STALE" });
    await engine.approve("p", "deploy");
    body = "two";
    expect(await engine.continue("p")).toMatchObject({ status: "completed", value: "two 1" });
    await engine.close();
  });

  it("approvals() filters by workflow and run, and redacts the input with the engine's rules when asked", async () => {
    const { workflow, state } = mailer();
    state.draft = { to: "ana@example.com", body: "secret body" };
    const other = defineWorkflow({ name: "other", run: (ctx) => ctx.step("go", { approval: true, input: { n: 1 } }, async () => 1) });
    const engine = createEngine({ store: makeStore(), workflows: [workflow, other], redact: ["body"] });
    await engine.start(workflow, undefined, { id: "m1" });
    await engine.start(other, undefined, { id: "o1" });
    expect((await engine.approvals()).map((a) => a.runId).sort()).toEqual(["m1", "o1"]);
    expect((await engine.approvals({ workflow: "other" })).map((a) => a.runId)).toEqual(["o1"]);
    expect((await engine.approvals({ runId: "m1" }))[0]!.input).toEqual({ to: "ana@example.com", body: "secret body" });
    expect((await engine.approvals({ runId: "m1", redact: true }))[0]!.input).toEqual({ to: "ana@example.com", body: "[redacted]" });
    await expect(engine.approvals({ step: "x" } as never)).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await engine.close();
  });
});

describe("an approval's input in a redacted export", () => {
  it("is written plain and redacted, in the wait and in the approval, without its digests", async () => {
    const { memoryStore } = await import("../../src/entries/memory.js");
    const { workflow, state } = mailer();
    state.draft = { to: "ana@example.com", body: "secret one" };
    const engine = createEngine({ store: memoryStore(), workflows: [workflow], redact: ["body"] });
    await engine.start(workflow, undefined, { id: "m" });
    await engine.approve("m", "send", { by: "ana" });
    state.draft = { to: "ana@example.com", body: "secret two" };
    expect(await engine.continue("m")).toMatchObject({ status: "waiting", waitingFor: { stale: { by: "ana" } } });
    const whole = JSON.stringify(await engine.export("m"));
    expect(whole).toContain("secret one");
    expect(whole).toContain("secret two");
    const redacted = JSON.stringify(await engine.export("m", { redact: true }));
    expect(redacted).not.toContain("secret");
    expect(redacted).not.toContain("sha256:");
    expect(redacted).toContain("ana@example.com");
    await engine.close();
  });
});

describe("a sealed input waiting for approval", () => {
  const keys = { k1: Buffer.alloc(32, 7) };

  it("is absent from the SQLite file's bytes, and from approvals() of an engine without the key", async () => {
    const path = tmpDb();
    const secret = "card-4111-1111-1111-1111";
    const workflow = defineWorkflow({ name: "sealed", run: (ctx) => ctx.step("charge", { approval: true, input: { card: secret } }, async () => "charged") });
    const engine = createEngine({ store: sqliteStore({ path }), workflows: [workflow], codec: encryptedCodec({ keys, current: "k1" }) });
    expect(await engine.start(workflow, undefined, { id: "s" })).toMatchObject({ status: "waiting" });
    const [pending] = await engine.approvals();
    expect(pending!.input).toEqual({ card: secret });
    expect(pending!.inputDigest).toMatch(/^hmac-sha256:k1:[0-9a-f]{64}$/);
    await engine.close();
    const bytes = Buffer.concat([readFileSync(path), ...(existsSync(`${path}-wal`) ? [readFileSync(`${path}-wal`)] : [])]);
    expect(bytes.includes(Buffer.from("4111"))).toBe(false);

    const keyless = createEngine({ store: sqliteStore({ path }), workflows: [workflow] });
    const [seen] = await keyless.approvals();
    expect(seen).toMatchObject({ runId: "s", step: "charge", inputSealed: "k1", inputDigest: pending!.inputDigest });
    expect(seen).not.toHaveProperty("input");
    expect(JSON.stringify(seen)).not.toContain("4111");
    // An engine without the key cannot approve beside the sealed records.
    await expect(keyless.approve("s", "charge")).rejects.toMatchObject({ code: "CODEC_KEY_MISSING" });
    await keyless.close();

    const keyed = createEngine({ store: sqliteStore({ path }), workflows: [workflow], codec: encryptedCodec({ keys, current: "k1" }) });
    await keyed.approve("s", "charge", { inputDigest: pending!.inputDigest! });
    expect(await keyed.continue("s")).toMatchObject({ status: "completed", value: "charged" });
    await keyed.close();
    const after = Buffer.concat([readFileSync(path), ...(existsSync(`${path}-wal`) ? [readFileSync(`${path}-wal`)] : [])]);
    expect(after.includes(Buffer.from("4111"))).toBe(false);
  });
});
