// The runnable examples that docs/ points to, run as a user would (against dist/, built by
// `pretest`), each checked for what it says it shows.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { spawnNode } from "../helpers/child.js";
import { tmpDb } from "../helpers/tmp.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

describe("examples/schedules/every-second.mjs", () => {
  it("two copies on one store start each tick once between them", async () => {
    const db = tmpDb();
    const run = () => spawnNode("examples/schedules/every-second.mjs", [db], { cwd: repoRoot, env: { RUN_FOR_MS: "2500" } }).done;
    const [a, b] = await Promise.all([run(), run()]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const lines = [...a.stdout.split("\n"), ...b.stdout.split("\n")].filter((l) => l.startsWith("every-second@"));
    const ids = lines.map((l) => l.split(" ")[0]);
    expect(ids.length).toBeGreaterThanOrEqual(2);
    expect(new Set(ids).size).toBe(ids.length);
    for (const line of lines) expect(line).toMatch(/^every-second@(\S+)Z completed "ran for \1\.000Z"$/);
    expect(a.stdout).toMatch(/next tick: every-second@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/);
  });
});
