import { jsonlStore } from "../../src/entries/jsonl.js";
import { memoryStore } from "../../src/store/memory.js";
import { sqliteStore } from "../../src/store/sqlite/store.js";
import type { Store } from "../../src/store/types.js";
import { postgresStore } from "../../src/entries/postgres.js";
import { PG_URL, pgSchema, pgStore } from "./pg.js";
import { tmpDb } from "./tmp.js";

/** The stores every engine behaviour is checked on (Postgres has its own suites: it needs a server). */
export const STORES: Array<[name: string, make: () => Store]> = [
  ["memory", () => memoryStore()],
  ["sqlite", () => sqliteStore({ path: tmpDb() })],
  ["jsonl", () => jsonlStore({ path: tmpDb("steplog.jsonl") })],
];

/** STORES and, when STEPLOG_PG_URL is set, Postgres: for the suites that must pass on every store. */
export const EVERY_STORE: Array<[name: string, make: () => Store]> = PG_URL ? [...STORES, ["postgres", pgStore]] : STORES;
if (!PG_URL) console.warn("postgres skipped in the every-store suites: set STEPLOG_PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to include it");

/**
 * A maker of store objects that all read and write the same data: separate objects where the
 * store can share its data (a SQLite or JSONL file, a Postgres schema), else views of one memory
 * store (closing one does not close it under the others).
 */
export function sameDataStores(name: string, make: () => Store): () => Store {
  if (name === "sqlite") {
    const path = tmpDb();
    return () => sqliteStore({ path });
  }
  if (name === "jsonl") {
    const path = tmpDb("steplog.jsonl");
    return () => jsonlStore({ path });
  }
  if (name === "postgres") {
    const schema = pgSchema();
    return () => postgresStore({ connectionString: PG_URL!, schema });
  }
  const one = make();
  return () =>
    new Proxy(one, {
      get: (target, key) => {
        if (key === "close") return async () => {};
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
}

/**
 * Where a store lives, for a child process to open it: a SQLite file, and with STEPLOG_PG_URL
 * `pg:<schema>` (a fresh schema, dropped after the file). The fixtures that take such a spec
 * open `sqliteStore({ path })` or `postgresStore({ connectionString, schema })` from it.
 */
export const STORE_PLACES: Array<[name: string, place: () => string]> = [
  ["sqlite", () => tmpDb()],
  ...(PG_URL ? ([["postgres", () => `pg:${pgSchema()}`]] as Array<[string, () => string]>) : []),
];

/**
 * `inner` with some of its methods replaced; each replacement gets the original (bound to the
 * store) to call through to. The other members are the store's own, except that replacing
 * writeOutcome hides writeOutcomeLater (else a group-committed outcome would go around it).
 */
export function withOverrides<S extends object>(
  inner: S,
  overrides: { [K in keyof S]?: S[K] extends (...args: infer A) => infer R ? (original: (...args: A) => R, ...args: A) => R : never },
): S {
  return new Proxy(inner, {
    get(target, key) {
      if (key === "writeOutcomeLater" && "writeOutcome" in overrides) return undefined;
      const value = Reflect.get(target, key);
      const bound = typeof value === "function" ? value.bind(target) : value;
      const override = (overrides as Record<PropertyKey, ((original: unknown, ...args: unknown[]) => unknown) | undefined>)[key];
      return override ? (...args: unknown[]) => override(bound, ...args) : bound;
    },
  });
}
