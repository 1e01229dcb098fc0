// Case 10: what `import "steplog"` costs an app, against `import "better-sqlite3"` (issue 38:
// at most 2×). Each sample is a new Node process that times its own import, from just before
// the import() to its end (Node's own start-up is the same for both and not counted); the two
// kinds of process alternate. The same processes report the CPU time the import used, which
// a loaded machine blurs less than the wall clock (info), and the CommonJS build (`require`) is
// timed the same way (info).

import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { interleave, median } from "../lib.mjs";

/** Issue 38: the median of 15 fresh processes. */
export const IMPORT_REPS = 15;

// The checkout's root: "steplog" resolves there to its own dist/ (the package's self-reference).
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** One fresh process importing (for "cjs", requiring) `specifier`: { ms, cpuMs }. */
function importOnce(specifier, format) {
  const load = format === "cjs" ? `require(${JSON.stringify(specifier)})` : `await import(${JSON.stringify(specifier)})`;
  const code = `const c = process.cpuUsage(); const t = performance.now(); ${load}; const u = process.cpuUsage(c); console.log(performance.now() - t, (u.user + u.system) / 1000);`;
  const args = format === "cjs" ? ["-e", code] : ["--input-type=module", "-e", code];
  const child = spawnSync(process.execPath, args, { cwd: ROOT, encoding: "utf8" });
  const [ms, cpuMs] = child.stdout.trim().split(" ").map(Number);
  if (child.status !== 0 || !Number.isFinite(ms) || !Number.isFinite(cpuMs)) {
    throw new Error(`case 10: ${format} import of ${specifier} failed: ${child.stderr || child.stdout}`);
  }
  return { ms, cpuMs };
}

export async function importCase() {
  const out = {};
  for (const format of ["esm", "cjs"]) {
    // One of each first, so both read their files from the page cache.
    importOnce("better-sqlite3", format);
    importOnce("steplog", format);
    const cpu = { baseline: [], steplog: [] };
    const timed = (specifier, into) => () => {
      const { ms, cpuMs } = importOnce(specifier, format);
      into.push(cpuMs);
      return ms;
    };
    const timing = await interleave(timed("better-sqlite3", cpu.baseline), timed("steplog", cpu.steplog), IMPORT_REPS);
    const cpuRatio = median(cpu.steplog) / median(cpu.baseline);
    out[format] = {
      ...timing,
      ratio: timing.steplogMedianMs / timing.baselineMedianMs,
      cpu: { baselineMs: cpu.baseline, steplogMs: cpu.steplog, baselineMedianMs: median(cpu.baseline), steplogMedianMs: median(cpu.steplog), ratio: cpuRatio },
    };
  }
  return out;
}
