// steplog stream on every store the command opens: a run's stream printed as text and as JSON
// lines from an offset, followed live (--follow) across a continue in another process until the
// stream is closed, a resume --after an item's seq that is told of a reset made meanwhile, and a
// missing run's exit code.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { PG_URL, pgSchema } from "../helpers/pg.js";
import { assertBuilt, cli, collect, spawnCli, TempDirs, waitForOutput, writeWorkflow } from "./helpers.js";

const dirs = new TempDirs();
beforeAll(assertBuilt);
afterEach(() => dirs.cleanup());

const BODY = `export default defineWorkflow({
  name: "chat",
  async run(ctx) {
    const answer = ctx.stream("answer");
    await ctx.step("turn", async () => {
      answer.write("Hel");
      answer.write("lo");
      answer.write({ done: true });
    });
    await ctx.waitForEvent("more");
    await ctx.step("again", async () => answer.write(" again"));
    answer.close();
    return "ok";
  },
});`;

type Place = () => string[];
const PLACES: Array<[string, Place]> = [
  ["sqlite", () => ["--db", "s.db"]],
  ["jsonl", () => ["--store", "jsonl:s.jsonl"]],
  ...(PG_URL ? ([["postgres", () => ["--store", PG_URL!, "--schema", pgSchema()]]] as Array<[string, Place]>) : []),
];

describe.each(PLACES)("steplog stream (%s)", (_name, place) => {
  it("prints the chunks (text as is, JSON lines with --json, from an offset), follows a continue in another process until the stream closes", async () => {
    const cwd = dirs.make();
    const store = place();
    const file = writeWorkflow(cwd, "chat.mjs", BODY);
    const start = await cli(["run", file, "--id", "c-1", ...store], { cwd });
    expect(start.output).toMatch(/waiting/);

    const text = await cli(["stream", "c-1", "answer", ...store], { cwd });
    expect(text.code, text.output).toBe(0);
    expect(text.stdout).toBe('Hello{"done":true}\n');

    const json = await cli(["stream", "c-1", "answer", "--from", "1", "--json", ...store], { cwd });
    expect(json.code, json.output).toBe(0);
    expect(
      json.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual([
      { type: "chunk", offset: 1, chunk: "lo", seq: 1 },
      { type: "chunk", offset: 2, chunk: { done: true }, seq: 2 },
    ]);

    const follower = spawnCli(["stream", "c-1", "answer", "--follow", "--json", ...store], { cwd });
    const followed = collect(follower, 60_000, "steplog stream --follow");
    await waitForOutput(follower, (out) => out.split("\n").filter(Boolean).length === 3);
    expect((await cli(["send", "c-1", "more", ...store], { cwd })).code).toBe(0);
    const continued = await cli(["run", file, "--continue", "--id", "c-1", ...store], { cwd });
    expect(continued.code, continued.output).toBe(0);
    const done = await followed;
    expect(done.code, done.output).toBe(0);
    expect(
      done.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual([
      { type: "chunk", offset: 0, chunk: "Hel", seq: 0 },
      { type: "chunk", offset: 1, chunk: "lo", seq: 1 },
      { type: "chunk", offset: 2, chunk: { done: true }, seq: 2 },
      { type: "chunk", offset: 3, chunk: " again", seq: 3 },
    ]);
  });

  it("--after SEQ resumes after that item: a reset made meanwhile is printed before the new chunks; after the close it ends at once; not with --from", async () => {
    const cwd = dirs.make();
    const store = place();
    const file = writeWorkflow(cwd, "chat.mjs", BODY);
    expect((await cli(["run", file, "--id", "c-2", ...store], { cwd })).output).toMatch(/waiting/);
    const lines = (out: string) =>
      out
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { seq: number });
    // A reader shown "Hel" (seq 0) goes away; the run is continued from "turn" meanwhile, and goes on waiting.
    const redone = await cli(["run", file, "--continue", "--id", "c-2", "--from-step", "turn", ...store], { cwd });
    expect(redone.output).toMatch(/waiting/);
    const resumed = await cli(["stream", "c-2", "answer", "--after", "0", "--json", ...store], { cwd });
    expect(resumed.code, resumed.output).toBe(0);
    // Seqs 1 and 2 were superseded by the reset before this reader got them: not printed.
    expect(lines(resumed.stdout)).toEqual([
      { type: "reset", offset: 0, seq: 3 },
      { type: "chunk", offset: 0, chunk: "Hel", seq: 4 },
      { type: "chunk", offset: 1, chunk: "lo", seq: 5 },
      { type: "chunk", offset: 2, chunk: { done: true }, seq: 6 },
    ]);
    expect((await cli(["send", "c-2", "more", ...store], { cwd })).code).toBe(0);
    expect((await cli(["run", file, "--continue", "--id", "c-2", ...store], { cwd })).code).toBe(0);
    // The close is seq 8: a resume after it (following) ends at once with nothing to print.
    const closed = await cli(["stream", "c-2", "answer", "--after", "8", "--follow", "--json", ...store], { cwd });
    expect(closed.code, closed.output).toBe(0);
    expect(closed.stdout).toBe("");
    const both = await cli(["stream", "c-2", "answer", "--after", "1", "--from", "0", ...store], { cwd });
    expect(both.code, both.output).toBe(2);
    expect(both.output).toMatch(/--from and --after were both given/);
  });

  it("a run that does not exist: exit 4, RUN_NOT_FOUND", async () => {
    const cwd = dirs.make();
    const store = place();
    writeWorkflow(cwd, "chat.mjs", BODY);
    await cli(["run", "chat.mjs", "--id", "c-1", ...store], { cwd });
    const missing = await cli(["stream", "nope", "answer", ...store], { cwd });
    expect(missing.code, missing.output).toBe(4);
    expect(missing.output).toMatch(/RUN_NOT_FOUND/);
  });
});
