// `steplog ui` over a store of many runs, in Chromium (Debian's, driven by playwright-core): the
// runs page reaches every run of a filter a page at a time and says how many match and which
// slice it shows; an idle open page costs the UI process next to nothing (its CPU time, measured
// against the same page while another process writes); and no page asks for a file the server
// does not have (the favicon).
import fs from "node:fs";
import path from "node:path";
import type { Locator, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { uiSuite } from "./ui-suite.js";
import { startUiServer } from "./ui-server.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { attemptRow, runRow } from "../../src/entries/testing.js";
import type { RunStatus, Store } from "../../src/store/types.js";

const suite = uiSuite();
const { dirs, children } = suite;
const T = Date.UTC(2031, 0, 1);

/** The default store of a folder (what `steplog ui` there reads). */
const storeIn = (cwd: string): Store => sqliteStore({ path: path.join(cwd, ".steplog", "steplog.db"), durability: "process" });

/** A run that ended with `status`, created at `createdAt`. */
async function put(store: Store, id: string, status: RunStatus, createdAt: number): Promise<void> {
  const lease = await store.createRun(
    runRow(id, { workflow: id.startsWith("a") ? "alpha" : "beta", version: null, args: "null", createdAt, updatedAt: createdAt }),
    attemptRow(id, 1, { host: "h", bootId: null, pid: 1, processStart: null, startedAt: createdAt }),
    { expiresAt: createdAt + 1000, now: createdAt },
  );
  if ("exists" in lease) throw new Error(`run ${id} exists`);
  await store.endAttempt(lease, { attempt: 1, ending: status === "failed" ? "failed" : "completed", endedAt: createdAt, error: null, run: { status } });
}

/** `count` runs, three to a millisecond (so pages split ties), every other one failed; their ids newest first (ties by id). */
async function seed(cwd: string, count: number): Promise<{ all: string[]; failed: string[] }> {
  const store = storeIn(cwd);
  const runs: Array<{ id: string; failed: boolean; at: number }> = [];
  for (let i = 0; i < count; i++) {
    const run = { id: `${i % 3 ? "a" : "b"}-${String(i).padStart(5, "0")}`, failed: i % 2 === 0, at: T + Math.floor(i / 3) };
    runs.push(run);
    await put(store, run.id, run.failed ? "failed" : "completed", run.at);
  }
  await store.close();
  runs.sort((x, y) => y.at - x.at || (x.id < y.id ? -1 : 1));
  return { all: runs.map((r) => r.id), failed: runs.filter((r) => r.failed).map((r) => r.id) };
}

/** `steplog ui --read-only` on a free port, looking at the store every `poll`. */
const startUi = (cwd: string, poll: string, env: Record<string, string> = {}) => startUiServer(cwd, ["--poll", poll, "--read-only"], children, env);

/** Click a link and wait until its page is the one shown. */
async function follow(page: Page, link: Locator): Promise<void> {
  const target = new URL((await link.getAttribute("href"))!, page.url()).toString();
  await link.click();
  await page.waitForURL(target);
}

const shown = (page: Page) => page.locator("tr[data-run]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-run")!));
const countLine = async (page: Page) => (await page.locator("p.count").textContent())?.replace(/\s+/g, " ").trim();

describe("steplog ui over many runs", () => {
  it("pages through every run of a filter with the Older link, saying how many match and which slice is shown", async () => {
    const cwd = dirs.make();
    const { all, failed } = await seed(cwd, 1200);
    const { url } = await startUi(cwd, "1s");
    const page = await suite.browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(url);
    expect(await countLine(page)).toBe("1–100 of 1,200 runs, newest first");
    expect(await shown(page)).toEqual(all.slice(0, 100));

    await page.selectOption("select[name=status]", "failed");
    await page.click("form.filters button");
    await page.waitForURL(/status=failed/);
    const reached: string[] = [];
    const lines: string[] = [];
    for (let i = 0; i < 20; i++) {
      reached.push(...(await shown(page)));
      lines.push((await countLine(page))!);
      const older = page.locator("a.older");
      if ((await older.count()) === 0) break;
      await follow(page, older);
    }
    expect(reached).toEqual(failed); // every failed run, once, in order
    expect(lines[0]).toBe("1–100 of 600 runs matching these filters (1,200 in all)");
    expect(lines.at(-1)).toBe("501–600 of 600 runs matching these filters (1,200 in all)");
    expect(lines).toHaveLength(6);
    // The filter stays on every page; Newest goes back to the first.
    expect(new URL(page.url()).searchParams.get("status")).toBe("failed");
    await follow(page, page.locator("a.newest"));
    expect(await shown(page)).toEqual(failed.slice(0, 100));

    // A filter by workflow and text: the count is the filter's.
    await page.goto(`${url}/?workflow=beta&q=-001`);
    const beta = all.filter((id) => id.startsWith("b") && id.includes("-001"));
    expect(await countLine(page)).toBe(`1–${beta.length} of ${beta.length} runs matching these filters (1,200 in all)`);
    expect(await shown(page)).toEqual(beta);
    // A cursor naming no run: said, and the newest shown.
    await page.goto(`${url}/?after=nope`);
    expect(await page.locator(".flash.bad").textContent()).toContain('no run "nope"');
    expect(await shown(page)).toEqual(all.slice(0, 100));
    await page.close();
  }, 120_000);

  it("an idle open page costs the UI process a small share of what the same page costs while the store changes", async () => {
    const cwd = dirs.make();
    await seed(cwd, 2000);
    // The UI process tells its own CPU time (process.cpuUsage) when sent SIGUSR2.
    const report = path.join(cwd, "cpu-report.mjs");
    fs.writeFileSync(report, `process.on("SIGUSR2", () => { const u = process.cpuUsage(); process.stdout.write("cpu " + (u.user + u.system) + "\\n"); });\n`);
    const { url, run } = await startUi(cwd, "100ms", { NODE_OPTIONS: `--import ${JSON.stringify(report).slice(1, -1)}` });
    const cpu = async (): Promise<number> => {
      const seen = run
        .output()
        .split("\n")
        .filter((l) => l.startsWith("cpu ")).length;
      run.child.kill("SIGUSR2");
      for (let i = 0; i < 100; i++) {
        const lines = run
          .output()
          .split("\n")
          .filter((l) => l.startsWith("cpu "));
        if (lines.length > seen) return Number(lines.at(-1)!.slice(4));
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`no CPU report: ${run.output()}`);
    };
    const page = await suite.browser.newPage();
    await page.goto(url);
    await expect.poll(() => page.locator("header .live").textContent()).toBe("● live");
    await new Promise((r) => setTimeout(r, 1000)); // past the first looks

    const idleFrom = await cpu();
    await new Promise((r) => setTimeout(r, 3000));
    const idle = (await cpu()) - idleFrom;

    // The same page while another process (this one) adds a run every 50 ms.
    const store = storeIn(cwd);
    const busyFrom = await cpu();
    const until = Date.now() + 3000;
    for (let i = 0; Date.now() < until; i++) {
      await put(store, `a-new-${i}`, "completed", T + 10_000 + i);
      await new Promise((r) => setTimeout(r, 50));
    }
    const busy = (await cpu()) - busyFrom;
    await store.close();
    expect(await page.locator("tr[data-run]").first().getAttribute("data-run")).toMatch(/^a-new-/); // the page followed
    // Measured here: idle about 10 ms, busy about 120 ms; before the change marker, idle cost as much as busy (650 ms).
    expect(idle, `idle ${idle} µs, busy ${busy} µs of CPU over 3 s`).toBeLessThan(busy / 3);
    await page.close();
  }, 60_000);

  it("serves a favicon: no page of the UI gets a 404", async () => {
    const cwd = dirs.make();
    await seed(cwd, 3);
    const { url } = await startUi(cwd, "1s");
    const page = await suite.browser.newPage();
    const failures: string[] = [];
    page.on("response", (response) => {
      if (response.status() >= 400) failures.push(`${response.status()} ${response.url()}`);
    });
    page.on("console", (message) => {
      if (message.type() === "error") failures.push(message.text());
    });
    for (const at of ["/", "/queue", `/runs/${encodeURIComponent("b-00000")}`]) {
      await page.goto(`${url}${at}`);
      await page.waitForLoadState("networkidle");
    }
    expect(failures).toEqual([]);
    const icon = await fetch(`${url}/favicon.ico`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get("content-type")).toContain("image/svg+xml");
    expect(await icon.text()).toContain("<svg");
    expect(await page.locator('link[rel="icon"]').getAttribute("href")).toBe("/favicon.ico");
    await page.close();
  });
});
