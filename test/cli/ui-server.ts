// `steplog ui` in a child process for the UI's tests: on a free port, its URL once it says where
// it listens. The child is added to `children`, which the test kills after each case.
import type { ChildProcess } from "node:child_process";
import { spawnNode, type ChildRun } from "../helpers/child.js";
import { BIN, childEnv } from "./helpers.js";

/** `args` follow `steplog ui --port 0 --json` (`--poll 200ms`, `--read-only`, `--redact …`). */
export async function startUiServer(
  cwd: string,
  args: string[],
  children: ChildProcess[],
  env: Record<string, string> = {},
): Promise<{ url: string; run: ChildRun }> {
  const run = spawnNode(BIN, ["ui", "--port", "0", "--json", ...args], { cwd, env: { ...(childEnv() as Record<string, string>), ...env } });
  children.push(run.child);
  for (let i = 0; i < 200; i++) {
    const line = run
      .output()
      .split("\n")
      .find((l) => l.startsWith("{"));
    if (line) return { url: (JSON.parse(line) as { url: string }).url, run };
    if (run.child.exitCode !== null) throw new Error(`steplog ui exited: ${run.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`steplog ui did not start: ${run.output()}`);
}
