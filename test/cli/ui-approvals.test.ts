// `steplog ui` in Chromium: an approval shows what is to be approved. The Human queue and the
// run's page show the step's input (one line, all of it on a click, redacted by --redact), its
// digest and, once the input changed after an approval, a stale marker with both inputs; the
// Approve button sends the digest it showed, so a click on a page shown before the input changed
// is refused with APPROVAL_STALE on the page. Each step's input is on the run page and in the
// HTML timeline.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { uiSuite } from "./ui-suite.js";
import { startUiServer } from "./ui-server.js";
import { cli, writeWorkflow } from "./helpers.js";

const suite = uiSuite();
const { dirs, children } = suite;

/** `steplog ui` on a free port, looking at the store every 200 ms; resolves with its URL. */
const startUi = async (cwd: string, extra: string[] = []) => (await startUiServer(cwd, ["--poll", "200ms", ...extra], children)).url;

const MAILER = `export default defineWorkflow({
  name: "mailer",
  async run(ctx) {
    const to = await ctx.step("recipient", { input: { user: "u1" } }, async () => "ana@example.com");
    return ctx.step("send", { approval: true, input: { to, token: "s3cret", body: process.env.DRAFT ?? "first draft" } }, async (info) => "sent " + info.input.body);
  },
});`;

describe("steplog ui: approvals show their input", () => {
  it("the Human queue and the run page show the input, digest and stale marker; Approve sends the digest shown", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(cwd, "mailer.mjs", MAILER);
    await cli(["run", file, "--id", "m1"], { cwd });
    const url = await startUi(cwd, ["--redact", "token"]);
    const page = await suite.browser.newPage({ viewport: { width: 1280, height: 900 } });

    await page.goto(`${url}/queue`);
    const card = page.locator('.card.approval[data-run="m1"]');
    expect(await card.locator("code.input").textContent()).toBe('{"to":"ana@example.com","token":"[redacted]","body":"first draft"}');
    const digest = (await card.locator("code.digest").textContent())!;
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(await card.locator('input[name="inputDigest"]').getAttribute("value")).toBe(digest);
    expect(await card.locator(".stale-mark").count()).toBe(0);
    await card.locator("summary").click();
    expect(await card.locator("pre").textContent()).toContain('"body": "first draft"');
    expect(await page.content()).not.toContain("s3cret");

    // The run page: the same card, and each step's input in its row.
    await page.goto(`${url}/runs/m1`);
    expect(await page.locator(".card.approval code.input").textContent()).toContain('"body":"first draft"');
    expect(await page.locator('.step[data-step="recipient"] code.input').textContent()).toBe('{"user":"u1"}');

    // Approved for the first draft; the draft changes; the continue parks it again, stale.
    await cli(["approve", "m1", "send", "--by", "ana"], { cwd });
    await cli(["run", "--continue", "--id", "m1"], { cwd, env: { DRAFT: "second draft" } });
    await page.goto(`${url}/queue`);
    await expect.poll(() => card.locator(".stale-mark").count()).toBe(1);
    const staleText = (await card.locator(".stale").textContent())!;
    expect(staleText).toContain("by ana");
    expect(staleText).toContain('"body":"first draft"');
    expect(staleText).toContain('"body":"second draft"');
    expect(await card.locator("code.digest").textContent()).not.toBe(digest);

    // A click on a card showing the first draft's digest (a page loaded before the change) is refused on the page.
    await card.locator('input[name="inputDigest"]').evaluate((el, old) => el.setAttribute("value", old), digest);
    await card.locator('button:has-text("Approve")').click();
    await expect.poll(() => page.locator(".flash.bad").textContent()).toContain("APPROVAL_STALE");
    expect(await page.locator(".card.approval").count()).toBe(1);
    // The card as shown now approves the second draft.
    await page.locator('.card.approval[data-run="m1"] button:has-text("Approve")').click();
    await expect.poll(() => page.locator(".flash").first().textContent()).toContain("approved");
    const done = await cli(["run", "--continue", "--id", "m1", "--json"], { cwd, env: { DRAFT: "second draft" } });
    expect(done.json()).toMatchObject({ status: "completed", value: "sent second draft" });
    await page.close();

    // The HTML timeline (steplog show --html): each step's input, on one line.
    const html = path.join(cwd, "m1.html");
    await cli(["show", "m1", "--html", html, "--redact", "token"], { cwd });
    const written = fs.readFileSync(html, "utf8");
    expect(written).toContain("input {&quot;user&quot;:&quot;u1&quot;}");
    expect(written).toContain("second draft");
    expect(written).not.toContain("s3cret");
  });
});
