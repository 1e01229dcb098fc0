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
    // Four seconds hold at least three tick boundaries, so two ticks come due even when a loaded machine is slow to start polling.
    const run = () => spawnNode("examples/schedules/every-second.mjs", [db], { cwd: repoRoot, env: { RUN_FOR_MS: "4000" } }).done;
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

describe("examples/flow/per-user.mjs", () => {
  it("one attempt per user at a time, the urgent run first among those waiting, a webhook twice is one run", async () => {
    const db = tmpDb();
    const out = await spawnNode("examples/flow/per-user.mjs", [db], { cwd: repoRoot }).done;
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout.trim().split("\n");
    const started = lines.find((l) => l.startsWith("started: "))!;
    // One of ana's three ran at once, the other two waited for their turn; bo's ran beside it.
    const anaStatuses = [...started.matchAll(/(ana-\S+) (\w+)/g)].map((m) => m[2]);
    expect(anaStatuses.sort()).toEqual(["completed", "waiting", "waiting"]);
    expect(started).toContain("bo-1 completed");
    expect(started).toMatch(/cy-hook completed, cy-hook completed$/);
    const ana = lines.filter((l) => /^(start|end) +ana/.test(l)).map((l) => l.replace(/ +/g, " "));
    // Never two of ana's at once: each start follows the previous end.
    expect(ana.map((l) => l.split(" ")[0])).toEqual(["start", "end", "start", "end", "start", "end"]);
    for (let i = 0; i < ana.length; i += 2) expect(ana[i + 1]).toBe(ana[i]!.replace("start", "end"));
    // Among those that waited, the urgent one went first.
    const waited = ana.filter((l, i) => i >= 2 && l.startsWith("start")).map((l) => l.split(" ")[1]);
    if (waited.includes("ana-urgent")) expect(waited[0]).toBe("ana-urgent");
    expect(lines.filter((l) => l.startsWith("start cy"))).toHaveLength(1);
    expect(lines.at(-1)).toBe("all done");
  });
});
