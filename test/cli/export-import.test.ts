// steplog export and steplog import on every store the command opens (SQLite, JSONL, Postgres
// with STEPLOG_PG_URL): a failed run taken to another store and continued there, reusing what
// succeeded, its stream with it; the same document back out; --children; --redact; each refusal
// and its exit code.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { PG_URL, pgSchema } from "../helpers/pg.js";
import { assertBuilt, cli, TempDirs, writeWorkflow } from "./helpers.js";

const dirs = new TempDirs();
beforeAll(assertBuilt);
afterEach(() => dirs.cleanup());

// Each call of a step appends its key to ran.log; "ship" writes to the stream "progress" and fails while FAIL is set.
const BODY = `import fs from "node:fs";
const log = (key) => fs.appendFileSync("ran.log", key + "\\n");
export default defineWorkflow({
  name: "order",
  async run(ctx, args) {
    const progress = ctx.stream("progress");
    const a = await ctx.step("reserve", async () => { log("reserve"); return { reserved: args.order, token: "s3cret" }; });
    const b = await ctx.step("charge", async () => { log("charge"); return { charged: 42 }; });
    const c = await ctx.step("ship", async () => { log("ship"); progress.write("shipping " + args.order); if (process.env.FAIL) throw new Error("carrier down"); return { shipped: true }; });
    return { a, b, c };
  },
});`;

/** A store the command opens, as its arguments: a fresh one each call. */
type Place = (cwd: string, name: string) => string[];
const PLACES: Array<[string, Place]> = [
  ["sqlite", (_cwd, name) => ["--db", `${name}.db`]],
  ["jsonl", (_cwd, name) => ["--store", `jsonl:${name}.jsonl`]],
  ...(PG_URL ? ([["postgres", () => ["--store", PG_URL!, "--schema", pgSchema()]]] as Array<[string, Place]>) : []),
];
if (!PG_URL) console.warn("steplog export/import: postgres skipped: set STEPLOG_PG_URL to include it");

const ran = (cwd: string) => fs.readFileSync(path.join(cwd, "ran.log"), "utf8").trim().split("\n");

/** A failed run "o-1" in `from`: reserve and charge succeeded, ship failed. */
async function failedRun(cwd: string, from: string[]) {
  const file = writeWorkflow(cwd, "order.mjs", BODY);
  const start = await cli(["run", file, "--id", "o-1", ...from, "--", '{"order":"o-7"}'], { cwd, env: { FAIL: "1" } });
  expect(start.code, start.output).toBe(1);
  expect(ran(cwd)).toEqual(["reserve", "charge", "ship"]);
  fs.rmSync(path.join(cwd, "ran.log"));
  return file;
}

describe.each(PLACES)("steplog export and import (%s)", (_name, place) => {
  it("export --out, import into another store, continue there: only the failed step runs; export there gives the same document", async () => {
    const cwd = dirs.make();
    const [from, to] = [place(cwd, "from"), place(cwd, "to")];
    const file = await failedRun(cwd, from);
    const out = await cli(["export", "o-1", "--out", "o-1.json", ...from], { cwd });
    expect(out.code, out.output).toBe(0);
    expect(out.stdout).toContain("exported to");
    expect(fs.statSync(path.join(cwd, "o-1.json")).mode & 0o777).toBe(0o600);
    const doc = JSON.parse(fs.readFileSync(path.join(cwd, "o-1.json"), "utf8"));
    expect(doc).toMatchObject({ format: "steplog-run", version: 1, run: { id: "o-1", status: "failed" } });
    // Printed to stdout without --out: the same document.
    expect(JSON.parse((await cli(["export", "o-1", ...from], { cwd })).stdout)).toEqual(doc);

    const imported = await cli(["import", "o-1.json", "--json", ...to], { cwd });
    expect(imported.code, imported.output).toBe(0);
    expect(imported.json()).toMatchObject({ id: "o-1", runs: ["o-1"], next: expect.stringMatching(/^steplog show o-1 --/) });
    expect(JSON.parse((await cli(["export", "o-1", ...to], { cwd })).stdout)).toEqual(doc);
    const shownFrom = (await cli(["show", "o-1", "--json", ...from], { cwd })).json();
    const shownTo = (await cli(["show", "o-1", "--json", ...to], { cwd })).json();
    expect(shownTo).toEqual(shownFrom);
    // The stream came with it.
    expect(doc.streams).toEqual([expect.objectContaining({ runId: "o-1", stream: "progress", seq: 0, kind: "chunk", chunk: '"shipping o-7"', step: "ship" })]);
    const streamed = async (store: string[], ...args: string[]) => {
      const shown = await cli(["stream", "o-1", "progress", "--json", ...args, ...store], { cwd });
      expect(shown.code, shown.output).toBe(0);
      return shown.stdout;
    };
    expect(await streamed(to)).toBe(await streamed(from));

    const go = await cli(["run", file, "--continue", "--id", "o-1", "--json", ...to], { cwd });
    expect(go.code, go.output).toBe(0);
    expect(go.json()).toMatchObject({ status: "completed", value: { c: { shipped: true } } });
    expect(ran(cwd)).toEqual(["ship"]);
    // The redone ship's chunk was superseded there: a reader that had it resumes to a reset, then the new one.
    expect(
      (await streamed(to, "--after", "0"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual([
      { type: "reset", offset: 0, seq: 1 },
      { type: "chunk", offset: 0, chunk: "shipping o-7", seq: 2 },
    ]);
    // The store it came from is untouched.
    expect((await cli(["runs", "--json", ...from], { cwd })).json()[0]).toMatchObject({ id: "o-1", status: "failed" });
  });

  it("refusals: an id the store holds, a redacted document, not JSON, not a run export (exit 3); no file (2); no run (4)", async () => {
    const cwd = dirs.make();
    const [from, to] = [place(cwd, "from"), place(cwd, "to")];
    await failedRun(cwd, from);
    expect((await cli(["export", "o-1", "--out", "o-1.json", ...from], { cwd })).code).toBe(0);
    expect((await cli(["import", "o-1.json", ...to], { cwd })).code).toBe(0);

    const again = await cli(["import", "o-1.json", "--json", ...to], { cwd });
    expect(again.code, again.output).toBe(3);
    expect(again.json().error).toMatchObject({ code: "IMPORT_RUN_EXISTS", next: expect.stringContaining("steplog show o-1") });
    expect(again.json().error.message).toContain('Run "o-1" already exists');

    const redacted = await cli(["export", "o-1", "--redact", "token", "--out", "red.json", ...from], { cwd });
    expect(redacted.code, redacted.output).toBe(0);
    expect(redacted.stdout).toContain("redacted");
    const red = JSON.parse(fs.readFileSync(path.join(cwd, "red.json"), "utf8"));
    expect(red.redacted).toBe(true);
    expect(JSON.parse(red.steps[0].value)).toEqual({ reserved: "o-7", token: "[redacted]" });
    const fresh = place(cwd, "fresh");
    const refusedRedacted = await cli(["import", "red.json", "--json", ...fresh], { cwd });
    expect(refusedRedacted.code, refusedRedacted.output).toBe(3);
    expect(refusedRedacted.json().error.code).toBe("IMPORT_INVALID");
    expect(refusedRedacted.json().error.message).toContain("exported redacted");

    fs.writeFileSync(path.join(cwd, "broken.json"), '{"format": "steplog-run", ');
    const notJson = await cli(["import", "broken.json", ...fresh], { cwd });
    expect(notJson.code, notJson.output).toBe(3);
    expect(notJson.stderr).toMatch(/IMPORT_INVALID: .*broken\.json is not JSON/);
    fs.writeFileSync(path.join(cwd, "other.json"), JSON.stringify({ ...JSON.parse(fs.readFileSync(path.join(cwd, "o-1.json"), "utf8")), version: 9 }));
    const version = await cli(["import", "other.json", ...fresh], { cwd });
    expect(version.code, version.output).toBe(3);
    expect(version.stderr).toContain("version 9 of the run export format");
    // Nothing was written by any refusal.
    expect((await cli(["runs", "--json", ...fresh, "--create"], { cwd })).json()).toEqual([]);

    const noFile = await cli(["import", "missing.json", ...fresh], { cwd });
    expect(noFile.code, noFile.output).toBe(2);
    const noRun = await cli(["export", "nope", ...from], { cwd });
    expect(noRun.code, noRun.output).toBe(4);
    expect(noRun.stderr).toContain("RUN_NOT_FOUND");
  });
});

describe("steplog export --children, and between kinds of store", () => {
  const CHILDREN = `export const leaf = defineWorkflow({ name: "leaf", run: async (ctx, n) => ctx.step("double", async () => n * 2) });
export default defineWorkflow({
  name: "parent",
  async run(ctx) {
    return (await ctx.child("one", leaf, 1, { id: "p-1" })) + (await ctx.child("two", leaf, 2, { id: "p-2" }));
  },
});`;

  it("--children carries the child runs; import writes them all (jsonl → sqlite)", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(cwd, "parent.mjs", CHILDREN);
    expect((await cli(["run", file, "--id", "p", "--store", "jsonl:from.jsonl"], { cwd })).code).toBe(0);
    const out = await cli(["export", "p", "--children", "--out", "p.json", "--store", "jsonl:from.jsonl"], { cwd });
    expect(out.stdout).toContain("Run p and 2 child runs exported");
    const imported = await cli(["import", "p.json", "--db", "to.db", "--json"], { cwd });
    expect(imported.json()).toMatchObject({ id: "p", runs: ["p", "p-1", "p-2"] });
    const shown = (await cli(["show", "p", "--json", "--db", "to.db"], { cwd })).json();
    expect(shown.children.map((c: { id: string }) => c.id)).toEqual(["p-1", "p-2"]);
  });

  it.skipIf(!PG_URL)("sqlite → postgres: continue completes the run, reusing the succeeded steps", async () => {
    const cwd = dirs.make();
    const to = ["--store", PG_URL!, "--schema", pgSchema()];
    const file = await failedRun(cwd, ["--db", "from.db"]);
    expect((await cli(["export", "o-1", "--out", "o-1.json", "--db", "from.db"], { cwd })).code).toBe(0);
    expect((await cli(["import", "o-1.json", ...to], { cwd })).code).toBe(0);
    const go = await cli(["run", file, "--continue", "--id", "o-1", "--json", ...to], { cwd });
    expect(go.code, go.output).toBe(0);
    expect(ran(cwd)).toEqual(["ship"]);
  });
});
