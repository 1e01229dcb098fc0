// Budgets from the terminal and the UI, through the built bin: a run parked on its budget is
// shown (waiting, budget line, the next command), `steplog budget` refuses a limit below the
// spend and raises it, a worker goes on; and the run page's form, and the Human queue's, raise it in
// a real browser.
import type { ChildProcess } from "node:child_process";
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { spawnNode } from "../helpers/child.js";
import { launchChromium } from "./browser.js";
import { startUiServer } from "./ui-server.js";
import { assertBuilt, BIN, childEnv, cli, TempDirs, writeWorkflow } from "./helpers.js";

const dirs = new TempDirs();
const children: ChildProcess[] = [];
let browser: Browser | undefined;
beforeAll(assertBuilt);
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  dirs.cleanup();
});
afterAll(async () => {
  await browser?.close();
});

/** Five paid steps of $1 and 150 tokens each, with a budget of $2.50. */
const PAID = `export default defineWorkflow({
  name: "paid",
  budget: { usd: 2.5 },
  async run(ctx) {
    for (let i = 1; i <= 5; i++) await ctx.step("pay-" + i, (info) => info.usage({ costUsd: 1, inputTokens: 100, outputTokens: 50 }));
    return "paid";
  },
});`;

describe("steplog budget", () => {
  it("a run parked on its budget: show says so and suggests the command; budget refuses too little, raises it; work goes on", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(cwd, "paid.mjs", PAID);
    const parked = await cli(["run", file, "--id", "b1", "--json"], { cwd });
    expect(parked.code, parked.output).toBe(1);
    expect(parked.json()).toMatchObject({
      status: "waiting",
      waitingFor: { kind: "budget", step: "pay-4", spent: { usd: 3, tokens: 450 }, budget: { usd: 2.5 } },
    });
    expect(parked.json().next.slice(0, 2)).toEqual(["steplog budget b1 --usd 6", "steplog work"]);

    const shown = await cli(["show", "b1"], { cwd });
    expect(shown.stdout).toMatch(/waiting +for a raise of its budget before step pay-4/);
    expect(shown.stdout).toMatch(/budget +\$3\.00 of \$2\.50 spent/);
    expect((await cli(["show", "b1", "--json"], { cwd })).json()).toMatchObject({ budget: { usd: 2.5 }, spent: { usd: 3, tokens: 450 } });

    const low = await cli(["budget", "b1", "--usd", "3"], { cwd });
    expect(low.code, low.output).toBe(3);
    expect(low.stderr).toMatch(/BUDGET_TOO_LOW/);
    expect(low.stderr).toMatch(/it has spent \$3/);
    const none = await cli(["budget", "b1"], { cwd });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/give --usd N, --tokens N or both/);
    expect((await cli(["budget", "b1", "--usd", "lots"], { cwd })).code).toBe(2);
    expect((await cli(["budget", "nobody", "--usd", "9"], { cwd })).stderr).toMatch(/RUN_NOT_FOUND/);

    const raised = await cli(["budget", "b1", "--usd", "10", "--json"], { cwd });
    expect(raised.code, raised.output).toBe(0);
    expect(raised.json()).toEqual({ id: "b1", budget: { usd: 10 }, next: ["steplog work", "steplog run --continue --id b1"] });
    const text = await cli(["budget", "b1", "--usd", "12"], { cwd });
    // Woken already (no longer parked on its budget): refused.
    expect(text.code).toBe(3);
    expect(text.stderr).toMatch(/NOT_WAITING/);

    const worked = await cli(["work", "--until-idle", "--poll", "100ms"], { cwd });
    expect(worked.code, worked.output).toBe(0);
    expect((await cli(["show", "b1", "--json"], { cwd })).json()).toMatchObject({ status: "completed", spent: { usd: 5, tokens: 750 }, budget: { usd: 10 } });
  });

  it("prints what it did, and the commands to go on", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(cwd, "paid.mjs", PAID);
    await cli(["run", file, "--id", "T-1"], { cwd });
    const raised = await cli(["budget", "T-1", "--usd", "10"], { cwd });
    expect(raised.stdout).toBe("✓ budget of run T-1 raised to $10.00.\nnext: steplog work  or  steplog run --continue --id T-1\n");
  });
});

describe("steplog ui: the run page of a run parked on its budget", () => {
  it("shows the budget and a form that raises it; a worker in another process then completes the run", async () => {
    browser ??= await launchChromium();
    const cwd = dirs.make();
    const file = writeWorkflow(cwd, "paid.mjs", PAID);
    await cli(["run", file, "--id", "b2"], { cwd });
    const { url } = await startUiServer(cwd, ["--poll", "200ms"], children);
    const worker = spawnNode(BIN, ["work", "--poll", "200ms"], { cwd, env: childEnv() as Record<string, string> });
    children.push(worker.child);
    const page = await browser.newPage();
    await page.goto(`${url}/runs/b2`);
    expect(await page.locator("h1 .badge").textContent()).toBe("waiting");
    const facts = await page.locator("dl.facts").textContent();
    expect(facts).toContain("a raise of its budget before step pay-4");
    expect(facts).toContain("$3.00 of $2.50 spent");
    // Too little: said on the page, nothing changed.
    await page.fill('form[action$="/budget"] input[name="usd"]', "2");
    await page.click('form[action$="/budget"] button');
    await expect.poll(() => page.locator(".flash.bad").textContent()).toContain("the new budget would not let it go on: it has spent $3");
    await page.fill('form[action$="/budget"] input[name="usd"]', "20");
    await page.click('form[action$="/budget"] button');
    await expect.poll(() => page.locator(".flash").first().textContent()).toContain("Budget of run b2 raised to $20");
    // The worker process picks the run up at its next look (200 ms); under a loaded machine that can take a while.
    await expect.poll(() => page.locator("h1 .badge").textContent(), { timeout: 60_000 }).toBe("completed");
    await page.close();
  });
});

describe("steplog ui: runs parked on their budget on the Human queue", () => {
  it("lists them with their budget card; raised from there, a worker in another process completes the run and the queue empties", async () => {
    browser ??= await launchChromium();
    const cwd = dirs.make();
    const file = writeWorkflow(cwd, "paid.mjs", PAID);
    await cli(["run", file, "--id", "q1"], { cwd });
    // A run waiting for something else is not on the queue's budget list.
    writeWorkflow(cwd, "sleepy.mjs", `export default defineWorkflow({ name: "sleepy", async run(ctx) { await ctx.sleep("nap", 3_600_000); return 1; } });`);
    await cli(["run", `${cwd}/sleepy.mjs`, "--id", "nap-1"], { cwd });
    const { url } = await startUiServer(cwd, ["--poll", "200ms"], children);
    const page = await browser.newPage();
    await page.goto(`${url}/queue`);
    const card = page.locator('.card[data-run="q1"]');
    expect(await card.textContent()).toContain("a raise of its budget before step pay-4");
    expect(await card.textContent()).toContain("$3.00 of $2.50 spent");
    expect(await card.locator("a").first().getAttribute("href")).toBe("/runs/q1");
    expect(await page.locator('.card[data-run="nap-1"]').count()).toBe(0);
    expect(await page.locator("h2", { hasText: "Budgets" }).textContent()).toBe("Budgets 1");

    await card.locator('input[name="usd"]').fill("20");
    await card.locator("button").click();
    await expect.poll(() => page.locator(".flash").first().textContent()).toContain("Budget of run q1 raised to $20");
    expect(page.url()).toMatch(new RegExp(`^${url}/queue\\?`));
    // Raised, not yet continued: it waits for a worker, and is no longer parked on its budget.
    await expect.poll(() => page.locator('.card[data-run="q1"]').count()).toBe(0);
    expect(await page.locator("h2", { hasText: "Budgets" }).textContent()).toBe("Budgets 0");
    expect(await page.locator("main").textContent()).toContain("No run waits for a raise of its budget.");

    const worker = spawnNode(BIN, ["work", "--poll", "200ms"], { cwd, env: childEnv() as Record<string, string> });
    children.push(worker.child);
    await page.goto(`${url}/runs/q1`);
    await expect.poll(() => page.locator("h1 .badge").textContent(), { timeout: 60_000 }).toBe("completed");
    expect((await cli(["show", "q1", "--json"], { cwd })).json()).toMatchObject({ status: "completed", spent: { usd: 5 }, budget: { usd: 20 } });
    await page.close();
  });
});
