// The approval queue in the steplog command: `steplog approvals` (one line per input, its digest,
// a stale marker with both inputs; --json all of it), `steplog approve --input-digest` (refused
// with APPROVAL_STALE when the input waiting changed), `steplog show`'s next commands, and
// `steplog escalations` showing a cut-off step's input.
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { testWorkflow } from "../../src/entries/testing.js";
import { assertBuilt, cli, TempDirs, writeWorkflow } from "./helpers.js";

const dirs = new TempDirs();
beforeAll(assertBuilt);
afterEach(() => dirs.cleanup());

const MAILER = `export default defineWorkflow({
  name: "mailer",
  async run(ctx) {
    return ctx.step("send", { approval: true, input: { to: "ana@example.com", token: "s3cret", body: process.env.DRAFT ?? "v1" } }, async (info) => "sent " + info.input.body);
  },
});`;

describe("steplog approvals and approve --input-digest", () => {
  it("lists the input to be approved and its digest; approves only that input; a changed input is stale", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(cwd, "mailer.mjs", MAILER);
    expect((await cli(["run", file, "--id", "m1"], { cwd })).stdout).toContain("waiting");

    const text = (await cli(["approvals"], { cwd })).stdout;
    expect(text).toContain("m1 · send");
    expect(text).toMatch(/ input +\{"to":"ana@example.com","token":"s3cret","body":"v1"\}\n/);
    const digest = /digest +(sha256:[0-9a-f]{64})/.exec(text)?.[1];
    expect(digest).toBeDefined();
    expect(text).toContain(`steplog approve m1 send --input-digest ${digest}`);
    expect(text).not.toContain("stale");

    const [listed] = (await cli(["approvals", "--json"], { cwd })).json();
    expect(listed).toMatchObject({ runId: "m1", workflow: "mailer", step: "send", input: { body: "v1" }, inputDigest: digest });
    const redacted = await cli(["approvals", "--json", "--redact", "token"], { cwd });
    expect(redacted.stdout).not.toContain("s3cret");
    // steplog show names the commands: look, then approve what was seen.
    expect((await cli(["show", "m1"], { cwd })).stdout).toContain(`steplog approve m1 send --input-digest ${digest}`);

    // Approved for v1; the draft changes; the continue parks it again, stale.
    const approved = await cli(["approve", "m1", "send", "--by", "ana", "--input-digest", digest!, "--json"], { cwd });
    expect(approved.json()).toMatchObject({ id: "m1", step: "send", approved: true, inputDigest: digest });
    expect((await cli(["run", "--continue", "--id", "m1"], { cwd, env: { DRAFT: "v2" } })).code).not.toBe(0);
    const stale = (await cli(["approvals"], { cwd })).stdout;
    expect(stale).toContain("stale");
    expect(stale).toMatch(/approved before +by ana at .*, for another input/);
    expect(stale).toMatch(/it approved +\{"to":"ana@example.com","token":"s3cret","body":"v1"\}/);
    expect(stale).toMatch(/now +\{"to":"ana@example.com","token":"s3cret","body":"v2"\}/);
    const [again] = (await cli(["approvals", "--json"], { cwd })).json();
    expect(again.stale).toMatchObject({ by: "ana", inputDigest: digest });

    // The old digest is refused, with the code and what to type next; the new one approves.
    const refused = await cli(["approve", "m1", "send", "--input-digest", digest!], { cwd });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("APPROVAL_STALE");
    expect(refused.stderr).toContain("steplog approvals");
    expect((await cli(["approve", "m1", "send", "--input-digest", again.inputDigest], { cwd })).code).toBe(0);
    const done = await cli(["run", "--continue", "--id", "m1", "--json"], { cwd, env: { DRAFT: "v2" } });
    expect(done.json()).toMatchObject({ status: "completed", value: "sent v2" });
    expect((await cli(["approvals"], { cwd })).stdout).toContain("No run waits for an approval");
  });

  it("steplog escalations shows the cut-off step's input", async () => {
    const cwd = dirs.make();
    const db = path.join(cwd, "esc.db");
    const workflow = defineWorkflow({
      name: "payer",
      async run(ctx) {
        return ctx.step("pay", { effect: "irreversible", input: { user: "u1", amount: 12 } }, async () => "paid");
      },
    });
    await testWorkflow(workflow, {
      args: undefined,
      earlier: { intended: ["pay"], inputs: { pay: { user: "u1", amount: 12 } } },
      store: sqliteStore({ path: db }),
    });
    const engine = createEngine({ store: sqliteStore({ path: db }) });
    expect(await engine.escalations()).toMatchObject([{ step: "pay", input: { user: "u1", amount: 12 } }]);
    await engine.close();
    const text = (await cli(["escalations", "--db", db], { cwd })).stdout;
    expect(text).toMatch(/ input +\{"user":"u1","amount":12\}/);
    const [listed] = (await cli(["escalations", "--db", db, "--json"], { cwd })).json();
    expect(listed.input).toEqual({ user: "u1", amount: 12 });
    expect((await cli(["escalations", "--db", db, "--json", "--redact", "amount"], { cwd })).json()[0].input).toEqual({ user: "u1", amount: "[redacted]" });
  });
});
