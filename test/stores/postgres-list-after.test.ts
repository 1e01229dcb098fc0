// The Postgres store's listing after a cursor (engine.list pages, engine.prune) on 20,000 runs,
// three created in each millisecond: the pages together are every run once, in order, ties across
// a page's end included; and a page deep in the table reads about a page of runs from
// runs_by_created (a range from the cursor down), not every newer run again.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { postgresStore } from "../../src/entries/postgres.js";
import type { PgClient, PgPoolLike } from "../../src/store/postgres/connection.js";
import type { RunCursor, Store } from "../../src/store/types.js";
import { PG_URL, pgSchema } from "../helpers/pg.js";

const RUNS = 20_000;
const PAGE = 500; // not a multiple of 3: most pages end inside a millisecond's three runs
const T0 = Date.UTC(2020, 0, 1); // before the run that makes the schema: it lists first
const noop = defineWorkflow({ name: "noop", async run() {} });

/** Every listing statement the store sent, with its values. */
const listings: Array<{ text: string; values: unknown[] }> = [];

/** A pg pool whose connections note the store's listing statements as they pass. */
function notingPool(pool: pg.Pool): PgPoolLike {
  return {
    connect: async () => {
      const client = (await pool.connect()) as unknown as PgClient & { noted?: boolean };
      if (!client.noted) {
        const query = client.query.bind(client) as (text: unknown, values?: unknown[]) => Promise<unknown>;
        (client as { query: unknown }).query = (text: unknown, values?: unknown[]) => {
          if (typeof text === "string" && text.includes("AS run,")) listings.push({ text, values: values ?? [] });
          return query(text, values);
        };
        client.noted = true;
      }
      return client;
    },
    end: () => pool.end(),
    on: ((event: "error", listener: (error: Error) => void) => pool.on(event, listener)) as PgPoolLike["on"],
  };
}

interface PlanNode {
  "Relation Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  Plans?: PlanNode[];
}

/** Rows the plan's scans of `runs` read (returned or dropped by a filter). */
function runsRowsRead(node: PlanNode): number {
  const own = node["Relation Name"] === "runs" ? (node["Actual Rows"] + (node["Rows Removed by Filter"] ?? 0)) * node["Actual Loops"] : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + runsRowsRead(child), 0);
}

(PG_URL ? describe : describe.skip)("Postgres: listing after a cursor on 20,000 runs", () => {
  const schema = pgSchema();
  let pool: pg.Pool; // this file's own queries
  let storePool: pg.Pool; // the store's connections (it keeps some checked out)
  let store: Store;

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    pool.on("error", () => {});
    // The schema, made by a store's first write.
    const maker = postgresStore({ connectionString: PG_URL!, schema });
    const engine = createEngine({ store: maker, workflows: [noop] });
    await engine.start(noop, undefined, { id: "first" });
    await engine.close();
    storePool = new pg.Pool({ connectionString: PG_URL, max: 4 });
    storePool.on("error", () => {});
    store = postgresStore({ pool: notingPool(storePool), schema });
    await pool.query(
      `INSERT INTO "${schema}".runs (id, workflow, args, status, attempts, budget_used, created_at, updated_at)
       SELECT 'run-' || lpad(i::text, 5, '0'), 'w', '{}', 'completed', 1, 1, ${T0} + i / 3, ${T0} + i / 3 + 5 FROM generate_series(0, ${RUNS - 1}) i`,
    );
    await pool.query(`ANALYZE "${schema}".runs`);
  }, 60_000);

  afterAll(async () => {
    await store?.close();
    await storePool?.end();
    await pool?.end();
  });

  it("pages through every run once, newest first with ties by id, across pages that end inside a millisecond", async () => {
    const { rows } = await pool.query(`SELECT id FROM "${schema}".runs ORDER BY created_at DESC, id`);
    const expected = rows.map((r: { id: string }) => r.id);
    const seen: string[] = [];
    let after: RunCursor | undefined;
    for (let pages = 0; pages <= RUNS / PAGE + 1; pages++) {
      const page = await store.listRuns({ limit: PAGE, ...(after ? { after } : {}) });
      seen.push(...page.map((l) => l.run.id));
      if (page.length < PAGE) break;
      const last = page.at(-1)!.run;
      after = { createdAt: last.createdAt, id: last.id };
    }
    expect(seen).toHaveLength(RUNS + 1); // and the run that made the schema
    expect(seen).toEqual(expected);
    // A cursor inside a millisecond: the rest of its runs (larger ids) first, then older ones.
    const inside = await store.listRuns({ after: { createdAt: T0 + 100, id: "run-00301" }, limit: 3 });
    expect(inside.map((l) => l.run.id)).toEqual(["run-00302", "run-00297", "run-00298"]);
    // prune's first cursor (an empty id): the cut-off's own millisecond included.
    const fromCut = await store.listRuns({ after: { createdAt: T0 + 100, id: "" }, limit: 4 });
    expect(fromCut.map((l) => l.run.id)).toEqual(["run-00300", "run-00301", "run-00302", "run-00297"]);
  }, 60_000);

  it("reads about a page of runs for a page deep in the table, not every newer run again", async () => {
    listings.length = 0;
    const deep = await store.listRuns({ after: { createdAt: T0 + 1000, id: "run-03001" }, limit: PAGE });
    expect(deep[0]!.run.id).toBe("run-03002");
    expect(listings).toHaveLength(1);
    const { text, values } = listings[0]!;
    const { rows } = await pool.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values);
    const plan = (rows[0] as { "QUERY PLAN": Array<{ Plan: PlanNode }> })["QUERY PLAN"][0]!.Plan;
    // The page's 500 runs and the cursor's own millisecond; the older shape read the 17,000 newer runs too.
    expect(runsRowsRead(plan)).toBeLessThanOrEqual(PAGE + 3);
  }, 60_000);
});
