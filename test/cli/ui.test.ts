// `steplog ui` end to end, in a real browser: Debian's chromium driven by playwright-core. A
// store holds a crashed run, an escalated one and one waiting for an approval; the test clicks
// through them, resolves the escalation and continues it, approves the other and watches it
// complete on the page while a worker in another process runs it (the page is never reloaded),
// and checks each screenshot has content. Then what protects the buttons: a bad Host, another
// origin, no token, --read-only. And after `npm run demo`, the UI lists the demo's run.
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { uiSuite } from "./ui-suite.js";
import { startUiServer } from "./ui-server.js";
import { spawnNode } from "../helpers/child.js";
import { BIN, childEnv, cli, example, ROOT, writeWorkflow } from "./helpers.js";
import { decodePng, distinctColours } from "./png.js";

const suite = uiSuite();
const { dirs, children } = suite;

/** `steplog ui` on a free port, looking at the store every 200 ms; resolves with its URL. */
const startUi = async (cwd: string, extra: string[] = []) => (await startUiServer(cwd, ["--poll", "200ms", ...extra], children)).url;

/** A screenshot that is not blank: many colours, the badges' among them. */
async function shot(page: Page, dir: string, name: string): Promise<void> {
  const file = path.join(dir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  const image = decodePng(fs.readFileSync(file));
  expect(image.width, name).toBeGreaterThan(600);
  expect(distinctColours(image), name).toBeGreaterThan(20);
  // STEPLOG_UPDATE_SCREENSHOTS=1 keeps them as docs/images/ui-<name>.png (docs/observability.md shows them).
  if (process.env.STEPLOG_UPDATE_SCREENSHOTS === "1") fs.copyFileSync(file, path.join(ROOT, "docs", "images", `ui-${name}.png`));
}

async function seeded(): Promise<string> {
  const cwd = dirs.make();
  await cli(["run", example("crash.mjs"), "--id", "crashed-1"], { cwd }); // killed inside a step
  await cli(["run", example("charge.mjs"), "--id", "charge-1"], { cwd }); // killed inside charge
  await cli(["run", "--continue", "--id", "charge-1"], { cwd }); // escalated
  await cli(["run", example("order.mjs"), "--id", "order-1", "--", '{"item":"book"}'], { cwd });
  await cli(["send", "order-1", "paid", '{"amount":12}'], { cwd });
  await cli(["work", "--until-idle"], { cwd }); // parks on the approval of ship
  return cwd;
}

describe("steplog ui in Chromium", () => {
  it("clicks through a crashed, an escalated and a waiting run; resolves and continues one, approves one and watches it complete", async () => {
    const cwd = await seeded();
    const url = await startUi(cwd);
    const page = await suite.browser.newPage({ viewport: { width: 1280, height: 900 } });
    const dialogs: string[] = [];
    page.on("dialog", (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await page.goto(url);
    await expect.poll(() => page.locator("header .live").textContent()).toBe("● live");
    for (const [id, status] of [
      ["crashed-1", "interrupted"],
      ["charge-1", "escalated"],
      ["order-1", "waiting"],
    ]) {
      expect(await page.locator(`tr[data-run="${id}"] .badge`).textContent(), id).toBe(status);
    }
    await shot(page, cwd, "runs");
    // Filters: by status, by text in the id.
    await page.selectOption("select[name=status]", "escalated");
    await page.click("form.filters button");
    expect(await page.locator("tr[data-run]").count()).toBe(1);
    await page.goto(`${url}/?q=order`);
    expect(await page.locator("tr[data-run]").allTextContents()).toHaveLength(1);

    // The crashed run: attempt 1 interrupted, its cut-off step shown.
    await page.goto(url);
    await page.click('a[href="/runs/crashed-1"]');
    expect(await page.locator("h1 .badge").textContent()).toBe("interrupted");
    expect(await page.locator('section[data-attempt="1"] h3 .badge').textContent()).toBe("interrupted");
    await shot(page, cwd, "crashed");

    // The escalated run: say the charge happened, then continue it; it completes, the charge not run again.
    await page.goto(`${url}/runs/charge-1`);
    expect(await page.locator('.step[data-step="charge"]').first().getAttribute("data-look")).toBe("escalated");
    await shot(page, cwd, "escalated");
    await page.fill("textarea[name=value]", '{"id":"ch_by_hand"}');
    await page.click("text=It happened: record this value");
    await expect.poll(() => page.locator(".flash").textContent()).toContain("recorded as done");
    expect(await page.locator("h1 .badge").textContent()).toBe("ready");
    await page.click("button:has-text('Continue')");
    await expect.poll(() => page.locator("h1 .badge").textContent(), { timeout: 15_000 }).toBe("completed");
    const looks = await page
      .locator('section[data-attempt="3"] .step')
      .evaluateAll((rows) => rows.map((r) => `${r.getAttribute("data-step")}:${r.getAttribute("data-look")}`));
    expect(looks).toEqual(["cart:reused", "charge:person", "receipt:ran"]);
    // The value inspector opens on a click.
    await page.click('section[data-attempt="3"] .step[data-step="receipt"] summary');
    expect(await page.locator('section[data-attempt="3"] .step[data-step="receipt"] pre').textContent()).toContain('"charge": "ch_by_hand"');

    // The waiting run: approve it in the human queue; a worker in another process runs it; the run's page turns completed by itself.
    const worker = spawnNode(BIN, ["work", "--poll", "200ms", "--workflow", example("order.mjs")], { cwd, env: childEnv() as Record<string, string> });
    children.push(worker.child);
    await page.goto(`${url}/queue`);
    expect(await page.locator('.card[data-run="charge-1"]').count()).toBe(0);
    expect(await page.locator('.card[data-run="order-1"] button:has-text("Approve")').count()).toBe(1);
    await shot(page, cwd, "queue");
    // The run's page stays open: the approval is the queue's button's own POST, sent from this page.
    await page.goto(`${url}/runs/order-1`);
    expect(await page.locator("h1 .badge").textContent()).toBe("waiting");
    // (A string: this file is type-checked without the DOM's types.)
    const status = await page.evaluate<number>(`(async () => {
      const form = document.querySelector('form[action$="/approve"]');
      const answer = await fetch(form.action, { method: "POST", body: new URLSearchParams(new FormData(form)) });
      return answer.status;
    })()`);
    expect(status).toBe(200); // the 303 to the page, followed
    await expect.poll(() => page.locator("h1 .badge").textContent(), { timeout: 20_000 }).toBe("completed");
    // It changed in place, by the live stream: the page was never loaded again.
    expect(await page.locator("body").getAttribute("data-updated")).not.toBeNull();
    await shot(page, cwd, "approved");
    expect(dialogs).toEqual([]);
    await page.close();
  });

  it("keeps hostile values text: markup in ids, names, values and errors runs no script", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(
      cwd,
      "hostile.mjs",
      `export default defineWorkflow({
        name: "x<script>alert(1)</script>",
        async run(ctx) {
          await ctx.step("<img src=x onerror=alert(2)>", async () => ({ html: "</pre><script>alert(3)</script>", term: "\\u001b[31mred" }));
          await ctx.step("boom", async () => { throw new Error("<svg onload=alert(4)>"); });
        },
      });`,
    );
    await cli(["run", file, "--id", `<b onclick="alert(5)">x</b>`], { cwd });
    const url = await startUi(cwd);
    const page = await suite.browser.newPage();
    const dialogs: string[] = [];
    page.on("dialog", (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await page.goto(url);
    await page.click("td.id a");
    await page.click("summary:has-text('value')");
    await page.waitForTimeout(300);
    expect(dialogs).toEqual([]);
    expect(await page.locator("script").count()).toBe(1); // ui.js alone
    expect(await page.locator("img").count()).toBe(0);
    const text = await page.locator("main").textContent();
    expect(text).toContain("<img src=x onerror=alert(2)>");
    expect(text).toContain("<svg onload=alert(4)>");
    expect(text).not.toContain("\u001b");
    await page.close();
  });

  it("guards its buttons: a foreign Host, another origin, a missing token and --read-only change nothing", async () => {
    const cwd = await seeded();
    const url = await startUi(cwd);
    const host = new URL(url).host;
    const post = (headers: Record<string, string>, body: string) =>
      fetch(`${url}/runs/charge-1/resolve`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
        body,
      });
    const token = /name="token" value="([^"]+)"/.exec(await (await fetch(`${url}/runs/charge-1`)).text())![1]!;
    // A request naming another host (fetch cannot set Host: a raw request does).
    const misdirected = await new Promise<number>((resolve, reject) => {
      const req = http.request(url, { headers: { host: "evil.example" } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on("error", reject);
      req.end();
    });
    expect(misdirected).toBe(421);
    expect((await post({ origin: "http://evil.example" }, `token=${token}&step=charge&how=redo`)).status).toBe(403);
    expect((await post({ origin: url }, `token=wrong&step=charge&how=redo`)).status).toBe(403);
    expect((await post({}, `token=${token}&step=charge&how=redo`)).status).toBe(403); // no Origin, not same-origin
    expect((await (await fetch(`${url}/runs/charge-1`)).text()).includes("escalated")).toBe(true);
    const ok = await post({ origin: url }, `token=${token}&step=charge&how=redo`);
    expect(ok.status).toBe(303);
    expect(ok.headers.get("location")).toMatch(/^\/runs\/charge-1\?done=/);
    expect(host).toMatch(/^127\.0\.0\.1:\d+$/);

    const readOnly = await startUi(cwd, ["--read-only"]);
    const html = await (await fetch(`${readOnly}/queue`)).text();
    expect(html).not.toContain('<form method="post"');
    expect(html).toContain("read-only");
    const refused = await fetch(`${readOnly}/runs/order-1/approve`, {
      method: "POST",
      headers: { origin: readOnly, "content-type": "application/x-www-form-urlencoded" },
      body: "token=x&step=ship",
    });
    expect(refused.status).toBe(403);
  });

  it("after npm run demo, steplog ui --db <the demo's store> shows the demo's run", async () => {
    const dir = dirs.make();
    const demo = await spawnNode(path.join(ROOT, "examples/demo/main.mjs"), [], { cwd: ROOT, env: { STEPLOG_DEMO_DIR: dir, NO_COLOR: "1" } }).done;
    expect(demo.code, demo.stderr).toBe(0);
    const runId = /run (demo-\d+)/.exec(demo.stdout)![1]!;
    const url = await startUi(dir, ["--db", path.join(dir, "steplog.db")]);
    const page = await suite.browser.newPage();
    await page.goto(url);
    expect(await page.locator(`tr[data-run="${runId}"] .badge`).textContent()).toBe("completed");
    await page.click(`a[href="/runs/${runId}"]`);
    expect(await page.locator("section.attempt").count()).toBe(2);
    await page.close();
  });
});
