import { jsonlStore } from "../../src/jsonl.js";
import { memoryStore } from "../../src/store/memory.js";
import { sqliteStore } from "../../src/store/sqlite/store.js";
import type { Store } from "../../src/store/types.js";
import { PG_URL, pgStore } from "./pg.js";
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
