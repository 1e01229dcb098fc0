// Streams under SIGKILL (the fixture imports dist/: build first when calling vitest directly):
// the chunks committed before the kill are read back, none written after the last commit
// appears, a chunk is durable no later than the step that wrote it, and a reader following the
// run across the continue is told to drop the redone step's chunks (a reset) before its new ones,
// on the store it crashed on or on another one it was exported to and imported into.
// A burst of chunks written in one turn is gathered into one append: killed before it is handed
// to the store, none of it is durable; once the step's outcome or the next intent is, all of it is.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createEngine, type StreamItem } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { jsonlStore } from "../../src/entries/jsonl.js";
import { postgresStore } from "../../src/entries/postgres.js";
import type { Store } from "../../src/store/types.js";
import { spawnNode } from "../helpers/child.js";
import { PG_URL, pgSchema } from "../helpers/pg.js";
import { tmpDb, tmpDir } from "../helpers/tmp.js";

const WORKER = fileURLToPath(new URL("./fixtures/stream-worker.mjs", import.meta.url));

/** Where each durable store lives, as the worker takes it, and the same store opened here. */
const PLACES: Array<[name: string, place: () => string]> = [
  ["sqlite", () => `sqlite:${tmpDb()}`],
  ["jsonl", () => `jsonl:${path.join(tmpDir(), "steplog.jsonl")}`],
  ...(PG_URL ? ([["postgres", () => `pg:${pgSchema()}`]] as Array<[string, () => string]>) : []),
];

function open(place: string): Store {
  const where = place.slice(place.indexOf(":") + 1);
  if (place.startsWith("sqlite:")) return sqliteStore({ path: where });
  if (place.startsWith("jsonl:")) return jsonlStore({ path: where });
  return postgresStore({ connectionString: PG_URL!, schema: where });
}

const worker = (place: string, mode: "start" | "continue", env: Record<string, string> = {}) =>
  spawnNode(WORKER, [place, "r", mode], { env: { STEPLOG_FAULT: "", BURST: "", KILL_IN_BURST: "", ...env } }).done;

/** The chunks step "burst" writes in one turn on attempt `attempt`, from offset `from`. */
const BURST = 300;
const burst = (from: number, attempt: number) => Array.from({ length: BURST }, (_, i) => chunk(from + i, `b${i}@${attempt}`));

/** A chunk item; its seq is its offset unless a reset came before it. */
const chunk = (offset: number, value: unknown, seq = offset): StreamItem => ({ type: "chunk", offset, chunk: value, seq });

async function readAll(items: AsyncIterable<StreamItem>): Promise<StreamItem[]> {
  const got: StreamItem[] = [];
  for await (const item of items) got.push(item);
  return got;
}

describe.each(PLACES)("streams under SIGKILL (%s)", (_name, makePlace) => {
  it("killed between two chunks of a step: the committed chunks are read back, not the last; a reader following the continue gets a reset, then the redone step's chunks", async () => {
    const place = makePlace();
    const crashed = await worker(place, "start", { KILL_MID_TWO: "1" });
    expect(crashed.signal).toBe("SIGKILL");

    const engine = createEngine({ store: open(place) });
    try {
      const before = await readAll(engine.readStream("r", "out", { follow: false }));
      expect(before).toEqual([chunk(0, "intro", 0), chunk(1, "one-a", 1), chunk(2, "one-b", 2), chunk(3, "two-a@1", 3)]);

      // A reader that follows the run (interrupted: it has not ended) across the continue in another process.
      const following = readAll(engine.readStream("r", "out", { pollMs: 20 }));
      const continued = await worker(place, "continue");
      expect(continued.code).toBe(0);
      expect(continued.report?.result).toMatchObject({ status: "completed", attempt: 2 });
      expect(await following).toEqual([...before, { type: "reset", offset: 3, seq: 4 }, chunk(3, "two-a@2", 5), chunk(4, "two-b@2", 6), chunk(5, "outro", 7)]);
      // The replay wrote "intro" (outside a step) once; step one was reused and wrote nothing.
      expect(await readAll(engine.readStream("r", "out", { from: 0 }))).toEqual([
        chunk(0, "intro", 0),
        chunk(1, "one-a", 1),
        chunk(2, "one-b", 2),
        chunk(3, "two-a@2", 5),
        chunk(4, "two-b@2", 6),
        chunk(5, "outro", 7),
      ]);
    } finally {
      await engine.close();
    }
  });

  it("killed mid-stream, exported from the dead store and imported into another, continued there: a reader there gets the reset, then the retry's chunks", async () => {
    const dead = makePlace();
    expect((await worker(dead, "start", { KILL_MID_TWO: "1" })).signal).toBe("SIGKILL");
    const from = createEngine({ store: open(dead) });
    const doc = await from.export("r");
    const before = await readAll(from.readStream("r", "out", { follow: false }));
    await from.close();
    expect(doc.run.status).toBe("running");
    expect(doc.streams!.map((r) => [r.seq, r.kind, r.offset])).toEqual([
      [0, "chunk", 0],
      [1, "chunk", 1],
      [2, "chunk", 2],
      [3, "chunk", 3],
    ]);

    const place = makePlace();
    const engine = createEngine({ store: open(place) });
    try {
      await engine.import(JSON.parse(JSON.stringify(doc)));
      expect((await engine.get("r")).status).toBe("interrupted");
      expect(await readAll(engine.readStream("r", "out", { follow: false }))).toEqual(before);
      const following = readAll(engine.readStream("r", "out", { pollMs: 20 }));
      const continued = await worker(place, "continue");
      expect(continued.code).toBe(0);
      expect(continued.report?.result).toMatchObject({ status: "completed", attempt: 2 });
      expect(await following).toEqual([...before, { type: "reset", offset: 3, seq: 4 }, chunk(3, "two-a@2", 5), chunk(4, "two-b@2", 6), chunk(5, "outro", 7)]);
      // A reader that had shown the cut-off chunk (seq 3) before the move resumes on the new store.
      expect(await readAll(engine.readStream("r", "out", { after: 3 }))).toEqual([
        { type: "reset", offset: 3, seq: 4 },
        chunk(3, "two-a@2", 5),
        chunk(4, "two-b@2", 6),
        chunk(5, "outro", 7),
      ]);
    } finally {
      await engine.close();
    }
  });

  it("killed in the turn a burst of chunks was written: none of the burst is durable, the chunks before it are; the continue writes the burst once", async () => {
    const place = makePlace();
    const crashed = await worker(place, "start", { BURST: String(BURST), KILL_IN_BURST: "1" });
    expect(crashed.signal).toBe("SIGKILL");
    const engine = createEngine({ store: open(place) });
    try {
      expect(await readAll(engine.readStream("r", "out", { follow: false }))).toEqual([chunk(0, "one")]);
      const continued = await worker(place, "continue", { BURST: String(BURST) });
      expect(continued.report?.result).toMatchObject({ status: "completed", attempt: 2 });
      expect(await readAll(engine.readStream("r", "out"))).toEqual([chunk(0, "one"), ...burst(1, 2), chunk(BURST + 1, "after")]);
    } finally {
      await engine.close();
    }
  });

  it.each(["after-outcome@burst", "after-intent@after"])("killed at %s: every chunk of the burst written in one turn before it is durable", async (fault) => {
    const place = makePlace();
    const crashed = await worker(place, "start", { BURST: String(BURST), STEPLOG_FAULT: fault });
    expect(crashed.signal).toBe("SIGKILL");
    const engine = createEngine({ store: open(place) });
    try {
      expect(await readAll(engine.readStream("r", "out", { follow: false }))).toEqual([chunk(0, "one"), ...burst(1, 1)]);
    } finally {
      await engine.close();
    }
  });

  it("killed just after a step's intent: every chunk written before it is durable", async () => {
    const place = makePlace();
    const crashed = await worker(place, "start", { STEPLOG_FAULT: "after-intent@two" });
    expect(crashed.signal).toBe("SIGKILL");
    const engine = createEngine({ store: open(place) });
    try {
      expect(await readAll(engine.readStream("r", "out", { follow: false }))).toEqual([chunk(0, "intro", 0), chunk(1, "one-a", 1), chunk(2, "one-b", 2)]);
    } finally {
      await engine.close();
    }
  });
});
