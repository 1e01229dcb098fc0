// What the UI's browser test files share: Chromium launched once a file (after checking that
// dist/ is built), the child processes a test started killed after it, its temp folders removed.
import type { ChildProcess } from "node:child_process";
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll } from "vitest";
import { launchChromium } from "./browser.js";
import { assertBuilt, TempDirs } from "./helpers.js";

export interface UiSuite {
  readonly dirs: TempDirs;
  /** Processes a test started: killed after it. */
  readonly children: ChildProcess[];
  /** The file's Chromium (inside a test). */
  readonly browser: Browser;
}

export function uiSuite(): UiSuite {
  const dirs = new TempDirs();
  const children: ChildProcess[] = [];
  let browser: Browser | undefined;
  beforeAll(async () => {
    assertBuilt();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(() => {
    for (const child of children.splice(0)) child.kill("SIGKILL");
    dirs.cleanup();
  });
  return {
    dirs,
    children,
    get browser() {
      if (!browser) throw new Error("Chromium is launched in beforeAll: use the browser inside a test");
      return browser;
    },
  };
}
