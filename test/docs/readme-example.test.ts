// The README's first example, as a reader pastes it: its first ```ts block, its types stripped
// (as tsx or Node's own type stripping would) and run with node, against the built package (dist/,
// built by `pretest`); test/docs/ts-blocks.test.ts type-checks it. Its CommonJS snippet (the
// first ```js block) runs as main.cjs. The file sits in a folder under the repo's .steplog/ (ignored by git), so
// `import "steplog"` resolves to this package by its own name and "zod" to its dev dependency;
// each run's cwd is that folder, so the default store is its own .steplog/steplog.db.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { spawnNode } from "../helpers/child.js";
import { needRuntime, skipWithout } from "../helpers/runtimes.js";
import { distBuilt } from "../helpers/worker.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
const firstExample = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
const commonJsSnippet = /```js\n([\s\S]*?)```/.exec(readme)?.[1];

/** The example as JavaScript: its types removed, nothing else changed. */
function stripTypes(code: string): string {
  return ts.transpileModule(code, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
}

const dirs: string[] = [];
let madeFolder: string | undefined;
afterAll(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  if (madeFolder && fs.readdirSync(madeFolder).length === 0) fs.rmdirSync(madeFolder);
});

/** The repo's .steplog/, made (readable by you alone, as steplog makes it) if missing, and then removed again after the test. */
function steplogFolder(): string {
  const folder = path.join(ROOT, ".steplog");
  if (!fs.existsSync(folder)) {
    fs.mkdirSync(folder, { mode: 0o700 });
    madeFolder = folder;
  }
  return folder;
}

describe.runIf(distBuilt())("README's first example", () => {
  // Also under Bun and Deno, on their built-in SQLite drivers.
  for (const runtime of [undefined, "bun", "deno"] as const) {
    const under = () => (runtime ? { runtime: needRuntime(runtime) } : {});
    it.skipIf(runtime !== undefined && skipWithout(runtime))(
      `runs as pasted, and a second run attaches to run 212 instead of refusing it (RUN_EXISTS), and says it attached${runtime ? ` (on ${runtime})` : ""}`,
      async () => {
        expect(firstExample).toContain(`ifExists: "attach"`);
        const dir = fs.mkdtempSync(path.join(steplogFolder(), "readme-example-"));
        dirs.push(dir);
        const file = path.join(dir, "example.mjs");
        fs.writeFileSync(file, stripTypes(firstExample!));

        const first = await spawnNode(file, [], { cwd: dir, env: { NO_COLOR: "1" }, ...under() }).done;
        expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: "" });
        expect(first.stdout).toBe("ran: completed https://github.com/acme/app/pull/fix-212\n");

        const second = await spawnNode(file, [], { cwd: dir, env: { NO_COLOR: "1" }, ...under() }).done;
        expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 0, stderr: "" });
        // The same result, and the sign that this start found the run rather than ran it.
        expect(second.stdout).toBe("attached: completed https://github.com/acme/app/pull/fix-212\n");
        expect(fs.existsSync(path.join(dir, ".steplog", "steplog.db"))).toBe(true);

        // As the README says: the log is .steplog/ under the working directory, and with that folder
        // gone, the same start finds no run 212 and starts it over.
        fs.rmSync(path.join(dir, ".steplog"), { recursive: true });
        const third = await spawnNode(file, [], { cwd: dir, env: { NO_COLOR: "1" }, ...under() }).done;
        expect({ code: third.code, stderr: third.stderr }).toEqual({ code: 0, stderr: "" });
        expect(third.stdout).toBe("ran: completed https://github.com/acme/app/pull/fix-212\n");
      },
    );
  }

  it('runs from CommonJS as main.cjs, require("steplog") and all, twice on one log', async () => {
    expect(commonJsSnippet).toMatch(/^\/\/ main\.cjs\n/);
    expect(commonJsSnippet).toContain(`require("steplog")`);
    const dir = fs.mkdtempSync(path.join(steplogFolder(), "readme-cjs-"));
    dirs.push(dir);
    const file = path.join(dir, "main.cjs");
    fs.writeFileSync(file, commonJsSnippet!);
    for (let i = 0; i < 2; i++) {
      const out = await spawnNode(file, [], { cwd: dir, env: { NO_COLOR: "1" } }).done;
      expect({ code: out.code, stderr: out.stderr, stdout: out.stdout }).toEqual({ code: 0, stderr: "", stdout: "completed hello ada\n" });
    }
    expect(fs.existsSync(path.join(dir, ".steplog", "steplog.db"))).toBe(true);
  });
});
