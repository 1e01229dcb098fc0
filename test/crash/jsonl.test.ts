// The JSONL store with real processes and real SIGKILLs (the fixture imports dist/: run
// `npm run build` first when calling vitest directly).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { tmpDir } from "../helpers/tmp.js";
import { spawnNode, type ChildOutcome } from "../helpers/child.js";

const WORKER = fileURLToPath(new URL("./fixtures/jsonl-worker.mjs", import.meta.url));
const STALE_MS = 2000;
/** The reader's own lockStaleMs: a read that waited for the dead holder's lock to go stale would take about a minute. */
const READER_STALE_MS = 60_000;

type Mode = "start" | "continue" | "get" | "many" | "kill-under-lock" | "kill-mid-append";

interface Outcome extends ChildOutcome {
  report: { result?: Record<string, any>; refused?: { code: string; message: string }; view?: { status: string; steps: string[][]; ms: number } } | undefined;
}

function spawnWorker(file: string, runId: string, mode: Mode, env: Record<string, string> = {}): { ready: Promise<void>; done: Promise<Outcome> } {
  return spawnNode(WORKER, [file, runId, mode], { env: { LOCK_STALE_MS: String(STALE_MS), ...env } });
}

const run = (file: string, runId: string, mode: Mode, env?: Record<string, string>) => spawnWorker(file, runId, mode, env).done;

const effects = (file: string) =>
  fs
    .readFileSync(`${file}.ledger`, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { step: string; attempt: number; pid: number });

/** Every line of the journal parses: nothing torn or glued was left behind. */
function journalLines(file: string): Array<Record<string, any>> {
  const text = fs.readFileSync(file, "utf8");
  expect(text.endsWith("\n")).toBe(true);
  return text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

async function crashedInTwo(): Promise<string> {
  const file = path.join(tmpDir(), "steplog.jsonl");
  const crashed = await run(file, "r", "start", { CRASH_IN_EFFECT: "two" });
  expect(crashed.signal).toBe("SIGKILL");
  return file;
}

describe("jsonl store across processes", () => {
  it("a process SIGKILLed mid-run leaves the file readable, and another process continues the run", async () => {
    const file = await crashedInTwo();
    const lines = journalLines(file);
    expect(lines.filter((l) => l.run === "r").map((l) => [l.op, l.step ?? null])).toEqual([
      ["create", null],
      ["intent", "one"],
      ["outcome", "one"],
      ["intent", "two"],
    ]);
    const seen = await run(file, "r", "get");
    expect(seen.report?.view).toMatchObject({
      status: "interrupted",
      steps: [
        ["one", "succeeded"],
        ["two", "intended"],
      ],
    });

    const second = await run(file, "r", "continue");
    expect(second.report?.result).toMatchObject({ status: "completed", attempt: 2 });
    // one kept; two re-driven (its outcome was never recorded); three once.
    expect(effects(file).map((e) => [e.step, e.attempt])).toEqual([
      ["one", 1],
      ["two", 1],
      ["two", 2],
      ["three", 2],
    ]);
    expect(journalLines(file).at(-1)).toMatchObject({ op: "end", run: "r", ending: "completed" });
    expect(second.stderr).toBe("");
  });

  it("a process SIGKILLed while holding the lock: reads go on, and the next writer takes the stale lock over after lockStaleMs", async () => {
    const file = await crashedInTwo();
    const killed = await run(file, "r", "kill-under-lock");
    expect(killed.signal).toBe("SIGKILL");
    expect(fs.existsSync(`${file}.lock`)).toBe(true);
    const lockedAt = fs.statSync(`${file}.lock`).mtimeMs;

    // A read takes no lock, so it does not wait for the dead holder's. The reader counts a lock stale
    // only after READER_STALE_MS, so the lock is live to it throughout, and a read that waited would
    // take about that long: well past STALE_MS, the bound here.
    const seen = await run(file, "r", "get", { LOCK_STALE_MS: String(READER_STALE_MS) });
    expect(seen.report?.view?.status).toBe("interrupted");
    expect(seen.report!.view!.ms).toBeLessThan(STALE_MS);

    const second = await run(file, "r", "continue");
    expect(second.report?.result).toMatchObject({ status: "completed", attempt: 2 });
    expect(fs.existsSync(`${file}.lock`)).toBe(false);
    // It could write only once the lock was stale: its claim, and the step it then redid, come after lockStaleMs.
    const lines = journalLines(file);
    expect(lines.filter((l) => l.op === "claim")).toHaveLength(1);
    const redo = lines.find((l) => l.op === "intent" && l.step === "two" && l.row.attempt === 2)!;
    expect(redo.row.intendedAt).toBeGreaterThanOrEqual(Math.floor(lockedAt) + STALE_MS);
  });

  it("a torn line left by a kill mid-append is ignored (with a warning), cut off by the next writer, and the run continues", async () => {
    const file = await crashedInTwo();
    const intact = fs.readFileSync(file);
    const killed = await run(file, "r", "kill-mid-append");
    expect(killed.signal).toBe("SIGKILL");
    const torn = fs.readFileSync(file).subarray(intact.length).toString();
    expect(torn.startsWith('{"op":"update","run":"r"')).toBe(true);
    expect(torn.includes("\n")).toBe(false);

    const seen = await run(file, "r", "get");
    expect(seen.report?.view).toMatchObject({
      status: "interrupted",
      steps: [
        ["one", "succeeded"],
        ["two", "intended"],
      ],
    });

    const second = await run(file, "r", "continue");
    expect(second.report?.result).toMatchObject({ status: "completed", attempt: 2 });
    expect(second.stderr).toMatch(/steplog: jsonl store at .*: ignoring a torn last line 6 \(\d+ bytes; it has no newline\)/);
    expect(second.stderr.match(/torn last line/g)).toHaveLength(1);
    // Cut off, not glued to: the file goes on from the last complete line.
    const after = fs.readFileSync(file);
    expect(after.subarray(0, intact.length).equals(intact)).toBe(true);
    expect(after.toString().includes("never committed")).toBe(false);
    expect(journalLines(file).at(-1)).toMatchObject({ op: "end", ending: "completed" });
  });

  it("two processes continuing one run at once: one runs it, the other gets RUN_BUSY", async () => {
    for (let round = 0; round < 3; round++) {
      const file = await crashedInTwo();
      const barrier = path.join(path.dirname(file), "go");
      const env = { BARRIER_FILE: barrier, STEP_DELAY_MS: "100" };
      const a = spawnWorker(file, "r", "continue", env);
      const b = spawnWorker(file, "r", "continue", env);
      await Promise.all([a.ready, b.ready]);
      fs.writeFileSync(barrier, "");
      const outcomes = await Promise.all([a.done, b.done]);
      const reports = JSON.stringify(outcomes.map((o) => o.report));
      expect(
        outcomes.filter((o) => o.report?.result?.status === "completed"),
        reports,
      ).toHaveLength(1);
      const busy = outcomes.filter((o) => o.report?.refused?.code === "RUN_BUSY");
      expect(busy, reports).toHaveLength(1);
      expect(busy[0]!.report!.refused!.message).toMatch(/held by attempt 2 \(host .+, pid \d+\)/);
      // The loser ran nothing; the journal holds one claim.
      expect(
        new Set(
          effects(file)
            .filter((e) => e.attempt !== 1)
            .map((e) => e.pid),
        ).size,
      ).toBe(1);
      const lines = journalLines(file);
      expect(lines.filter((l) => l.op === "claim").map((l) => l.epoch)).toEqual([2]);
      expect(lines.filter((l) => l.op === "end").map((l) => l.ending)).toEqual(["completed"]);
    }
  });

  it("four processes writing to one journal at once: every commit lands whole, none lost, none glued", async () => {
    const file = path.join(tmpDir(), "steplog.jsonl");
    const barrier = path.join(path.dirname(file), "go");
    const workers = ["a", "b", "c", "d"].map((name) => spawnWorker(file, name, "many", { BARRIER_FILE: barrier, RUNS: "25" }));
    await Promise.all(workers.map((w) => w.ready));
    fs.writeFileSync(barrier, "");
    const outcomes = await Promise.all(workers.map((w) => w.done));
    expect(outcomes.map((o) => o.report?.result?.completed)).toEqual([25, 25, 25, 25]);
    const lines = journalLines(file);
    expect(lines[0]).toEqual({ steplog: "jsonl", version: 1 });
    const ends = lines.filter((l) => l.op === "end");
    expect(ends).toHaveLength(100);
    expect(new Set(ends.map((l) => l.run)).size).toBe(100);
    // Each run's history is whole and in order: create, then intent/outcome per step, then its end.
    for (const id of ["a-0", "b-24", "d-13"]) {
      expect(lines.filter((l) => l.run === id).map((l) => [l.op, l.step ?? null])).toEqual([
        ["create", null],
        ["intent", "one"],
        ["outcome", "one"],
        ["intent", "two"],
        ["outcome", "two"],
        ["intent", "three"],
        ["outcome", "three"],
        ["end", null],
      ]);
    }
    expect(effects(file)).toHaveLength(300);
  });
});
