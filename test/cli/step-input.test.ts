// A step's input in `steplog show`: one line under the step (`input …`), all of it with --full,
// carried by --json with its digest, and hidden by --redact.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, TempDirs, writeWorkflow } from "./helpers.js";

const dirs = new TempDirs();
beforeAll(assertBuilt);
afterEach(() => dirs.cleanup());

const BODY = `export default defineWorkflow({
  name: "inputs",
  async run(ctx) {
    await ctx.step("plain", async () => 1);
    return ctx.step("send", { input: { to: "ann@example.com", token: "s3cret", body: "y".repeat(300) } }, async (info) => info.input.to);
  },
});`;

describe("a step's input in steplog show", () => {
  it("text (one line), --full, --json (with its digest) and --redact", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(cwd, "inputs.mjs", BODY);
    expect((await cli(["run", file, "--id", "i1"], { cwd })).code).toBe(0);

    const text = (await cli(["show", "i1"], { cwd })).stdout;
    expect(text).toMatch(/✓ send +ran[^\n]*\n +input \{"to":"ann@example.com","token":"s3cret","body":"y+…\n += "ann@example.com"\n/);
    expect(text).toMatch(/✓ plain +ran[^\n]*\n += 1\n/);
    expect(text.split("\n").every((line) => line.length < 160)).toBe(true);

    const full = (await cli(["show", "i1", "--full"], { cwd })).stdout;
    expect(full).toContain(`"body": "${"y".repeat(300)}"`);

    const json = (await cli(["show", "i1", "--json"], { cwd })).json();
    const send = json.attempts[0].entries.find((e: { key: string }) => e.key === "send");
    expect(send.input).toMatchObject({ to: "ann@example.com", token: "s3cret" });
    expect(send.inputDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const plain = json.attempts[0].entries.find((e: { key: string }) => e.key === "plain");
    expect(plain).not.toHaveProperty("input");

    const redacted = (await cli(["show", "i1", "--json", "--redact", "token"], { cwd })).json();
    expect(JSON.stringify(redacted)).not.toContain("s3cret");
  });
});
