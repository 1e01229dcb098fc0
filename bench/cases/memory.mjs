// Case 5: memory after many completed runs in one engine vs after 100, each measured in a
// child process (--expose-gc) so the other cases' garbage does not count. The raw step log
// doing the same writes is measured the same way, for reference.

import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { tmpFile } from "../lib.mjs";

function child(mode, total, batch) {
  const script = fileURLToPath(new URL("./memory-child.mjs", import.meta.url));
  const out = execFileSync(process.execPath, ["--expose-gc", script, mode, tmpFile(`c5-${mode}`), String(total), String(batch)], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const { points, idle, ms } = JSON.parse(out.trim().split("\n").at(-1));
  const first = points[0];
  const last = points.at(-1);
  return {
    points,
    idle,
    ms,
    // With BENCH_IDLE=1: once idle (V8's young generation given back), after `total` runs vs after 100.
    ...(idle.length === 2
      ? {
          idleRssDeltaMB: idle[1].rssMB - idle[0].rssMB,
          idleShrunk: idle.every((p) => p.newSpaceShrunk),
          idleSeconds: idle.map((p) => Math.round(p.idleMs / 1000)),
        }
      : {}),
    heapDeltaMB: last.heapUsedMB - first.heapUsedMB,
    rssDeltaMB: last.rssMB - first.rssMB,
    peakRssDeltaMB: last.peakRssMB - first.peakRssMB,
    newSpaceDeltaMB: last.newSpaceMB - first.newSpaceMB,
    rssOutsideNewSpaceDeltaMB: last.rssMB - last.newSpaceMB - (first.rssMB - first.newSpaceMB),
    // From 1,000 runs on: growth that keeps going with the number of runs (a leak) vs a plateau.
    rssDeltaFrom1000MB: last.rssMB - points[1].rssMB,
  };
}

export function memoryCase(total, batch) {
  const raw = child("raw", total, batch);
  const steplog = child("steplog", total, batch);
  return { total, batch, raw, steplog };
}
