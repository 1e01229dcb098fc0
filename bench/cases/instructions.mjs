// Case 1's figure that does not drift: CPU instructions per step, counted by valgrind's callgrind
// (user space: SQLite, V8, steplog; not the kernel's fsync), for steplog and the raw baseline on
// the same workload (sequential no-op steps at NORMAL). Per step = (count at N2 − count at N1) /
// (N2 − N1), so start-up and the module loading cancel out.

import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { tmpFile } from "../lib.mjs";

const run = promisify(execFile);
const CHILD = fileURLToPath(new URL("../instructions-child.mjs", import.meta.url));
const SIZES = [1000, 4000];

async function collected(kind, steps) {
  const { stderr } = await run(
    "valgrind",
    ["--tool=callgrind", "--callgrind-out-file=/dev/null", process.execPath, CHILD, kind, String(steps), tmpFile(`c1i-${kind}-${steps}`)],
    { maxBuffer: 16 * 1024 * 1024, timeout: 600_000 },
  );
  const match = /Collected\s*:\s*(\d+)/.exec(stderr);
  if (!match) throw new Error(`callgrind printed no count: ${stderr.slice(-400)}`);
  return Number(match[1]);
}

export async function instructionsCase() {
  try {
    await run("valgrind", ["--version"]);
  } catch {
    return { skipped: "valgrind is not installed (apt-get install valgrind)" };
  }
  const per = {};
  for (const kind of ["raw", "steplog"]) {
    const [a, b] = [await collected(kind, SIZES[0]), await collected(kind, SIZES[1])];
    per[kind] = (b - a) / (SIZES[1] - SIZES[0]);
  }
  return { sizes: SIZES, rawPerStep: per.raw, steplogPerStep: per.steplog, ratio: per.steplog / per.raw };
}
