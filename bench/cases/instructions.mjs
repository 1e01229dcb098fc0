// Case 1's figure that does not drift: CPU instructions per step, counted by valgrind's callgrind
// (user space: SQLite, V8, steplog; not the kernel's fsync), for steplog and the raw baseline on
// the same workload (sequential no-op steps at NORMAL). Per step = (count at N2 − count at N1) /
// (N2 − N1), so start-up and the module loading cancel out. Two spans: 1,000 → 4,000 steps
// still holds V8 compiling steplog's functions (the figure first reported), 4,000 → 12,000 the
// steady state the timed case 1 runs in (its samples follow a warm-up).
//
// Case 2's shape counted the same way: 100 runs at once (raw: group commit of the same rows),
// 10,000 → 30,000 steps in all, at NORMAL. Its ratio is given as case 2's is, raw ÷ steplog:
// the share of raw's rate the instructions allow, which the timed ratio tends to when the
// disk's fsync is fast.

import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { tmpFile } from "../lib.mjs";

const run = promisify(execFile);
const CHILD = fileURLToPath(new URL("../instructions-child.mjs", import.meta.url));
const SIZES = [1000, 4000, 12000];
const CONCURRENT_SIZES = [10000, 30000];

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

async function valgrindMissing() {
  try {
    await run("valgrind", ["--version"]);
    return undefined;
  } catch {
    return { skipped: "valgrind is not installed (apt-get install valgrind)" };
  }
}

export async function instructionsCase() {
  const missing = await valgrindMissing();
  if (missing) return missing;
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

export async function concurrentInstructionsCase() {
  const missing = await valgrindMissing();
  if (missing) return missing;
  const perStep = {};
  for (const kind of ["raw-conc", "steplog-conc"]) {
    const [a, b] = await Promise.all(CONCURRENT_SIZES.map((steps) => collected(kind, steps)));
    perStep[kind] = (b - a) / (CONCURRENT_SIZES[1] - CONCURRENT_SIZES[0]);
  }
  return {
    sizes: CONCURRENT_SIZES,
    runs: 100,
    rawPerStep: perStep["raw-conc"],
    steplogPerStep: perStep["steplog-conc"],
    ratio: perStep["raw-conc"] / perStep["steplog-conc"],
  };
}
