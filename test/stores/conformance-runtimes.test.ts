// The SQLite store's conformance suite on Bun and Deno: `steplog/testing` and `steplog/sqlite`
// from the built package (dist/), on each runtime's built-in SQLite driver, under each runtime's
// own test runner (fixtures/conformance-suite.mjs: bun:test on Bun, node:test under `deno test`).
// Every case of the suite must have passed there: the cases a runtime reports passed are compared,
// by name, with the cases the suite defines here on Node.js (a runner that ran none, or skipped
// some, fails). The runtimes come from the runtimes cache (helpers/runtimes.ts): without one,
// its test is skipped, naming it, except in CI, where it fails.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { memoryStore } from "../../src/entries/memory.js";
import { describeStore, type TestFunctions } from "../../src/entries/testing.js";
import { spawnNode } from "../helpers/child.js";
import { needRuntime, RUNTIMES_CACHE, runtimeCommand, skipWithout, type RuntimeName } from "../helpers/runtimes.js";
import { tmpDir } from "../helpers/tmp.js";
import { distBuilt } from "../helpers/worker.js";

const SUITE = fileURLToPath(new URL("./fixtures/conformance-suite.mjs", import.meta.url));
const PASSED = /^conformance case passed: (".*")$/gm;

/** The names of the cases the suite defines when a store gives every hook (reopen, another, corrupt), as the fixture's does. */
function casesOnNode(): string[] {
  const names: string[] = [];
  const collect: TestFunctions = {
    describe: (_name, body) => body(),
    it: Object.assign((name: string) => void names.push(name), { skip: (name: string) => void names.push(`skipped: ${name}`) }),
  };
  const store = () => memoryStore();
  describeStore("cases", { create: store, reopen: store, another: store, corrupt: store }, collect);
  return names.sort();
}

/** How each runtime runs a test file with its own runner. */
function testCommand(runtime: "bun" | "deno"): string[] {
  const [bin] = needRuntime(runtime);
  // Deno's type check is left out: reached by the package's own name rather than from node_modules,
  // dist/'s .d.ts files' imports of each other (`./types-….js`) do not resolve for it. From an
  // installed package they do (tried by hand: the suite type-checks under `deno test`, given
  // @types/node for node:test's types); TypeScript 5 and 7 check the .d.ts in test/docs.
  return runtime === "bun" ? [bin!, "test"] : [bin!, "test", "--allow-all", "--no-check"];
}

const skipNote = (name: RuntimeName) => (runtimeCommand(name) ? "" : ` (${name} is not in ${RUNTIMES_CACHE}; .ci/runtimes.sh fetch fetches it)`);

describe.runIf(distBuilt())("the store conformance suite on other runtimes", () => {
  const expected = casesOnNode();

  it("defines its cases, each once, none skipped (what each runtime must report passed)", () => {
    expect(expected.length).toBeGreaterThan(20);
    expect(new Set(expected).size).toBe(expected.length);
    expect(expected.filter((name) => name.startsWith("skipped: "))).toEqual([]);
  });

  for (const [runtime, runner, driver] of [
    ["bun", "bun:test", "bun:sqlite"],
    ["deno", "node:test under deno test", "node:sqlite"],
  ] as const) {
    it.skipIf(skipWithout(runtime))(
      `${runtime}: every case passes on ${driver}, under ${runner}${skipNote(runtime)}`,
      async () => {
        const done = await spawnNode(SUITE, [], {
          runtime: testCommand(runtime),
          env: { STEPLOG_CONFORMANCE_DIR: tmpDir(), NO_COLOR: "1" },
        }).done;
        const output = done.stdout + done.stderr;
        expect({ code: done.code, signal: done.signal }, output).toEqual({ code: 0, signal: null });
        const passed = [...done.stdout.matchAll(PASSED)].map((m) => JSON.parse(m[1]!) as string).sort();
        expect(passed, output).toEqual(expected);
        expect(output).toContain(`sqlite (${driver})`);
      },
      120_000,
    );
  }
});
