// engine.prune deletes each batch of runs in one transaction: a process SIGKILLed inside a batch
// (a run's rows partly deleted) or between two batches leaves every run whole or gone, a child
// run never without its parent, on SQLite, JSONL and (with STEPLOG_PG_URL) Postgres; a second
// prune then deletes the rest. The fixture imports dist/: run `npm run build` first when calling
// vitest directly.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { jsonlStore } from "../../src/entries/jsonl.js";
import { postgresStore } from "../../src/entries/postgres.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { createEngine, defineWorkflow, type Engine, type RunExport } from "../../src/entries/index.js";
import { PRUNE_BATCH_RUNS } from "../../src/engine/prune.js";
import type { Store } from "../../src/store/types.js";
import { spawnNode } from "../helpers/child.js";
import { PG_URL, pgSchema } from "../helpers/pg.js";
import { tmpDir } from "../helpers/tmp.js";

const PRUNER = fileURLToPath(new URL("./fixtures/pruner.mjs", import.meta.url));
const T0 = Date.UTC(2026, 0, 1);

const leaf = defineWorkflow({
  name: "leaf",
  async run(ctx, args: { n: number }) {
    const a = await ctx.step("a", async () => args.n);
    return ctx.step("b", async () => a * 2);
  },
});
const tree = defineWorkflow({
  name: "tree",
  async run(ctx, args: { n: number }) {
    const a = await ctx.step("a", async () => args.n);
    return ctx.child("kid", leaf, { n: a });
  },
});

const KINDS: Array<[kind: string, place: () => string, open: (place: string) => Store]> = [
  ["sqlite", () => path.join(tmpDir(), "steplog.db"), (p) => sqliteStore({ path: p })],
  ["jsonl", () => path.join(tmpDir(), "steplog.jsonl"), (p) => jsonlStore({ path: p })],
  ...(PG_URL
    ? ([["postgres", () => pgSchema(), (schema: string) => postgresStore({ connectionString: PG_URL!, schema })]] as Array<
        [string, () => string, (place: string) => Store]
      >)
    : []),
];
if (!PG_URL) console.warn("prune crash test: postgres skipped: set STEPLOG_PG_URL to include it");

const TREES = 40;
const LEAVES = 40;

/** 40 parents with a child each and 40 lone runs, all ended; every run's export, by id. */
async function seed(store: Store): Promise<Map<string, RunExport>> {
  const clock = { at: T0, now: () => clock.at++ };
  const engine = createEngine({ store, clock, workflows: [tree, leaf] });
  for (let i = 0; i < TREES; i++) expect((await engine.start(tree, { n: i }, { id: `t-${i}` })).status).toBe("completed");
  for (let i = 0; i < LEAVES; i++) expect((await engine.start(leaf, { n: i }, { id: `l-${i}` })).status).toBe("completed");
  const before = new Map<string, RunExport>();
  for (const { id } of await engine.list()) before.set(id, await engine.export(id));
  expect(before.size).toBe(2 * TREES + LEAVES);
  await engine.close();
  return before;
}

/** Each run whole (its export as before) or gone; a child gone with its parent. The ids gone. */
async function wholeOrGone(engine: Engine, before: Map<string, RunExport>): Promise<Set<string>> {
  const gone = new Set<string>();
  for (const [id, doc] of before) {
    const now = await engine.export(id).catch((e: { code?: string }) => (e.code === "RUN_NOT_FOUND" ? undefined : Promise.reject(e)));
    if (now === undefined) gone.add(id);
    else expect(now, `run ${id} after the crash`).toEqual(doc);
  }
  for (let i = 0; i < TREES; i++) expect(gone.has(`t-${i}/kid`), `t-${i} and its child`).toBe(gone.has(`t-${i}`));
  return gone;
}

describe.each(KINDS)("a prune SIGKILLed (%s)", (kind, makePlace, open) => {
  for (const [fault, expectGone] of [
    ["during-prune@t-20", (gone: Set<string>) => expect(gone.has("t-20"), "the run being deleted is whole").toBe(false)],
    ["after-prune-batch@1", (gone: Set<string>) => expect(gone.size, "the first batch is gone, the rest whole").toBeGreaterThanOrEqual(PRUNE_BATCH_RUNS)],
  ] as const) {
    it(`at ${fault}: every run whole or gone, a child with its parent; a second prune deletes the rest`, async () => {
      const place = makePlace();
      const before = await seed(open(place));
      const endedBefore = T0 + 10_000;
      const child = spawnNode(PRUNER, [kind, place, String(endedBefore)], { env: { STEPLOG_FAULT: fault } });
      const ended = await child.done;
      expect(ended.stdout, ended.stderr).toContain("pruning\n");
      expect(ended.stdout).not.toContain("done");
      expect(ended.signal, ended.stderr).toBe("SIGKILL");
      const engine = createEngine({ store: open(place) });
      try {
        const gone = await wholeOrGone(engine, before);
        expectGone(gone);
        expect(gone.size, "not every run went").toBeLessThan(before.size);
        const rest = await engine.prune({ endedBefore });
        expect(rest.runs).toBe(before.size - gone.size);
        expect(await engine.list()).toEqual([]);
      } finally {
        await engine.close();
      }
    }, 120_000);
  }
});
