// steplog prune on every store the command opens (SQLite, JSONL, Postgres with STEPLOG_PG_URL):
// a dry run that counts and deletes nothing, then the prune, by status and workflow; a cut-off
// no run is past; and each refusal with its exit code.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { PG_URL, pgSchema } from "../helpers/pg.js";
import { assertBuilt, cli, TempDirs, writeWorkflow } from "./helpers.js";

const dirs = new TempDirs();
beforeAll(assertBuilt);
afterEach(() => dirs.cleanup());

const BODY = `export default defineWorkflow({
  name: "job",
  async run(ctx, args) {
    const a = await ctx.step("one", async () => args.n + 1);
    await ctx.step("two", async () => { if (args.fail) throw new Error("no"); return a; });
    return a;
  },
});`;

type Place = (cwd: string) => string[];
const PLACES: Array<[string, Place]> = [
  ["sqlite", () => ["--db", "s.db"]],
  ["jsonl", () => ["--store", "jsonl:s.jsonl"]],
  ...(PG_URL ? ([["postgres", () => ["--store", PG_URL!, "--schema", pgSchema()]]] as Array<[string, Place]>) : []),
];
if (!PG_URL) console.warn("steplog prune: postgres skipped: set STEPLOG_PG_URL to include it");

describe.each(PLACES)("steplog prune (%s)", (_name, place) => {
  it("--dry-run counts and deletes nothing; then the runs that ended before the cut-off go, by status", async () => {
    const cwd = dirs.make();
    const at = place(cwd);
    const file = writeWorkflow(cwd, "job.mjs", BODY);
    for (const [id, args, code] of [
      ["a", '{"n":1}', 0],
      ["b", '{"n":2}', 0],
      ["c", '{"n":3,"fail":true}', 1],
    ] as const) {
      const run = await cli(["run", file, "--id", id, ...at, "--", args], { cwd });
      expect(run.code, run.output).toBe(code);
    }
    const ids = async () => ((await cli(["runs", "--json", ...at], { cwd })).json() as Array<{ id: string }>).map((r) => r.id).sort();
    await new Promise((r) => setTimeout(r, 20));

    const none = await cli(["prune", "--older-than", "30d", ...at], { cwd });
    expect(none.code, none.output).toBe(0);
    expect(none.stdout).toContain("deleted 0 runs");

    const dry = await cli(["prune", "--older-than", "5ms", "--status", "completed", "--dry-run", ...at], { cwd });
    expect(dry.code, dry.output).toBe(0);
    expect(dry.stdout).toContain("Would delete 2 runs (2 attempts, 4 steps, 0 events)");
    expect(dry.stdout).toContain("nothing was deleted");
    expect(dry.stdout).toMatch(/to delete them: steplog prune --older-than 5ms --status completed --/);
    expect(await ids()).toEqual(["a", "b", "c"]);

    const done = await cli(["prune", "--older-than", "5ms", "--status", "completed", "--json", ...at], { cwd });
    expect(done.code, done.output).toBe(0);
    expect(done.json()).toMatchObject({ dryRun: false, runs: 2, attempts: 2, steps: 4, events: 0 });
    expect(await ids()).toEqual(["c"]);
    const shown = await cli(["show", "a", ...at], { cwd });
    expect(shown.code).toBe(4);

    // Without --status: every ended status but dead-lettered; --workflow another: nothing.
    expect((await cli(["prune", "--older-than", "5ms", "--workflow", "other", "--json", ...at], { cwd })).json()).toMatchObject({ runs: 0 });
    expect((await cli(["prune", "--older-than", "5ms", "--json", ...at], { cwd })).json()).toMatchObject({ runs: 1, steps: 2 });
    expect(await ids()).toEqual([]);
  });
});

describe("steplog prune refusals", () => {
  it("no --older-than, a bad duration or a status that never ends: exit 2; a store file that is not there: exit 5; nothing created", async () => {
    const cwd = dirs.make();
    const missing = await cli(["prune", "--db", "s.db"], { cwd });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--older-than is required");
    expect((await cli(["prune", "--older-than", "soon", "--db", "s.db"], { cwd })).code).toBe(2);
    const running = await cli(["prune", "--older-than", "1d", "--status", "running", "--db", "s.db"], { cwd });
    expect(running.code).toBe(2);
    expect(running.stderr).toContain("never pruned");
    const gone = await cli(["prune", "--older-than", "1d", "--db", "nope.db"], { cwd });
    expect(gone.code, gone.output).toBe(5);
    const dry = await cli(["prune", "--older-than", "1d", "--dry-run", "--db", "nope.db"], { cwd });
    expect(dry.code, dry.output).toBe(5);
    expect(fs.existsSync(path.join(cwd, "nope.db"))).toBe(false);
    expect(fs.existsSync(path.join(cwd, "s.db"))).toBe(false);
  });
});
