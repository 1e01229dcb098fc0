// The README's first example, as a reader pastes it: its first ```ts block, written verbatim to a
// file and run with node twice (it is plain JavaScript too), against the built package (dist/,
// built by `pretest`). The file sits in a folder under the repo's .steplog/ (ignored by git), so
// `import "steplog"` resolves to this package by its own name and "zod" to its dev dependency;
// each run's cwd is that folder, so the default store is its own .steplog/steplog.db.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { spawnNode } from "../helpers/child.js";
import { distBuilt } from "../helpers/worker.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
const firstExample = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];

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
  it("runs as pasted, and a second run attaches to run 212 instead of refusing it (RUN_EXISTS), and says it attached", async () => {
    expect(firstExample).toContain(`ifExists: "attach"`);
    const dir = fs.mkdtempSync(path.join(steplogFolder(), "readme-example-"));
    dirs.push(dir);
    const file = path.join(dir, "example.mjs");
    fs.writeFileSync(file, firstExample!);

    const first = await spawnNode(file, [], { cwd: dir, env: { NO_COLOR: "1" } }).done;
    expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: "" });
    expect(first.stdout).toBe("ran: completed https://github.com/acme/app/pull/fix-212\n");

    const second = await spawnNode(file, [], { cwd: dir, env: { NO_COLOR: "1" } }).done;
    expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 0, stderr: "" });
    // The same result, and the sign that this start found the run rather than ran it.
    expect(second.stdout).toBe("attached: completed https://github.com/acme/app/pull/fix-212\n");
    expect(fs.existsSync(path.join(dir, ".steplog", "steplog.db"))).toBe(true);
  });
});
