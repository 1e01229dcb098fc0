// Case 1's figure that does not drift: CPU instructions per step, counted by valgrind's callgrind
// (user space: SQLite, V8, steplog; not the kernel's fsync), for steplog and the raw baseline on
// the same workload (sequential no-op steps at NORMAL). Per step = (count at N2 − count at N1) /
// (N2 − N1), so start-up and the module loading cancel out. Two spans: 1,000 → 4,000 steps
// still holds V8 compiling steplog's functions (the figure first reported), 4,000 → 12,000 the
// steady state the timed case 1 runs in (its samples follow a warm-up).

import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { tmpFile } from "../lib.mjs";

const run = promisify(execFile);
const CHILD = fileURLToPath(new URL("../instructions-child.mjs", import.meta.url));
const SIZES = [1000, 4000, 12000];

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
  // Two children at a time (the machine's two cores): the counts do not depend on what else runs.
  const counts = {};
  for (const kind of ["raw", "steplog"]) {
    const [a, b, c] = [...(await Promise.all([collected(kind, SIZES[0]), collected(kind, SIZES[1])])), await collected(kind, SIZES[2])];
    counts[kind] = { warm: (b - a) / (SIZES[1] - SIZES[0]), steady: (c - b) / (SIZES[2] - SIZES[1]) };
  }
  return {
    sizes: SIZES,
    rawPerStep: counts.raw.warm,
    steplogPerStep: counts.steplog.warm,
    ratio: counts.steplog.warm / counts.raw.warm,
    steady: { rawPerStep: counts.raw.steady, steplogPerStep: counts.steplog.steady, ratio: counts.steplog.steady / counts.raw.steady },
  };
}
