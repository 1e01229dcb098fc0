// The live progress view on a real terminal: `script` (util-linux) runs the bin in a
// pseudo-terminal, so stdout is a TTY: spinner frames redrawn in place, colour unless NO_COLOR.
import { execFile } from "node:child_process";
import fs from "node:fs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { SPINNER } from "../../src/cli/progress.js";
import { assertBuilt, BIN, childEnv, example, TempDirs } from "./helpers.js";
import { shellQuote } from "../../src/cli/format.js";

const dirs = new TempDirs();
beforeAll(assertBuilt);
afterEach(() => dirs.cleanup());

const SCRIPT = ["/usr/bin/script", "/bin/script"].find((p) => fs.existsSync(p));
const ttyIt = SCRIPT ? it : it.skip;

function inPty(args: string[], cwd: string, env: Record<string, string | undefined> = {}): Promise<{ code: number; out: string }> {
  const line = [process.execPath, BIN, ...args].map(shellQuote).join(" ");
  return new Promise((resolve, reject) => {
    execFile(
      SCRIPT!,
      ["-q", "-e", "-c", `stty cols 100 rows 40; ${line}`, "/dev/null"],
      { cwd, env: childEnv({ TERM: "xterm-256color", ...env }), timeout: 30_000 },
      (error, stdout) => {
        if (error && typeof (error as { code?: unknown }).code !== "number") return reject(error);
        resolve({ code: error ? ((error as { code: number }).code ?? 1) : 0, out: stdout });
      },
    );
  });
}

describe("steplog run on a terminal", () => {
  ttyIt("spins while a step runs, redraws it in place, and colours ✓ ↺", async () => {
    const cwd = dirs.make();
    const first = await inPty(["run", example("hello.mjs"), "--id", "p1", "--", '{"topic":"x","failFirst":"publish"}'], cwd);
    expect(first.code, first.out).toBe(1);
    expect(
      SPINNER.some((frame) => first.out.includes(frame)),
      first.out,
    ).toBe(true);
    expect(first.out).toMatch(/\x1b\[\d+A\r\x1b\[J/); // cursor up + clear: the running line redrawn
    expect(first.out).toContain("\x1b[32m✓\x1b[39m plan");
    expect(first.out).toContain("\x1b[31m✗\x1b[39m publish");
    const second = await inPty(["run", "--continue", "--id", "p1"], cwd);
    expect(second.code, second.out).toBe(0);
    expect(second.out).toContain("\x1b[36m↺\x1b[39m plan");
  });

  ttyIt("NO_COLOR keeps colour off on a terminal (the spinner stays)", async () => {
    const cwd = dirs.make();
    const r = await inPty(["run", example("hello.mjs"), "--id", "p2", "--", '{"topic":"x"}'], cwd, { NO_COLOR: "1" });
    expect(r.code, r.out).toBe(0);
    expect(r.out).not.toMatch(/\x1b\[\d+m/);
    expect(
      SPINNER.some((frame) => r.out.includes(frame)),
      r.out,
    ).toBe(true);
    expect(r.out).toMatch(/✓ publish/);
  });
});
