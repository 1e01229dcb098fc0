// Step values and every call's error in the command's views: `steplog show` prints each step's
// value (a line; --full for all of it) and each failed call's error, --json carries them and the
// args, the HTML page shows them as text, and --redact hides what it names in all of them.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, TempDirs, writeWorkflow } from "./helpers.js";

const dirs = new TempDirs();
beforeAll(assertBuilt);
afterEach(() => dirs.cleanup());

const BODY = `export default defineWorkflow({
  name: "vals",
  async run(ctx, args) {
    const page = await ctx.step("fetch", { retry: { maxAttempts: 3, backoffMs: 1 } }, async ({ retry }) => {
      if (retry < 2) throw new Error("timeout #" + (retry + 1) + " <b>");
      return { items: [1, 2, 3], token: "s3cret", note: "x".repeat(300) };
    });
    return ctx.step("sum", async () => page.items.reduce((a, b) => a + b, 0) + args.add);
  },
});`;

describe("step values and call errors in steplog show", () => {
  it("text, --full, --json and --html show each value and each failed call; --redact hides values", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(cwd, "vals.mjs", BODY);
    expect((await cli(["run", file, "--id", "v1", "--", '{"add":4}'], { cwd })).code).toBe(0);

    const text = (await cli(["show", "v1"], { cwd })).stdout;
    expect(text).toMatch(/✓ fetch +ran +\S+ +3 calls\n +=.*"items":\[1,2,3\].*…\n +call 1 ✗ timeout #1 <b>\n +call 2 ✗ timeout #2 <b>\n/);
    expect(text).toMatch(/✓ sum +ran +\S+\n += 10\n/);
    // One line each: the long note is cut.
    expect(text.split("\n").every((line) => line.length < 160)).toBe(true);

    const full = (await cli(["show", "v1", "--full"], { cwd })).stdout;
    expect(full).toContain(`"note": "${"x".repeat(300)}"`);

    const json = (await cli(["show", "v1", "--json"], { cwd })).json();
    expect(json.args).toEqual({ add: 4 });
    const fetch = json.attempts[0].entries.find((e: { key: string }) => e.key === "fetch");
    expect(fetch.value).toMatchObject({ items: [1, 2, 3], token: "s3cret" });
    expect(fetch.callErrors.map((c: { call: number; error: { message: string } }) => [c.call, c.error.message])).toEqual([
      [1, "timeout #1 <b>"],
      [2, "timeout #2 <b>"],
    ]);

    const page = path.join(cwd, "v1.html");
    await cli(["show", "v1", "--html", page], { cwd });
    const html = fs.readFileSync(page, "utf8");
    expect(html).toContain("call 1 ✗ timeout #1 &lt;b&gt;");
    expect(html).toContain("= {&quot;items&quot;:[1,2,3]");

    const redacted = (await cli(["show", "v1", "--json", "--redact", "token"], { cwd })).json();
    const hidden = redacted.attempts[0].entries.find((e: { key: string }) => e.key === "fetch");
    expect(hidden.value.token).not.toBe("s3cret");
    expect(JSON.stringify(redacted)).not.toContain("s3cret");
  });
});
