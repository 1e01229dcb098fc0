import { jsonlStore } from "../../src/jsonl.js";
import { memoryStore } from "../../src/store/memory.js";
import { sqliteStore } from "../../src/store/sqlite/store.js";
import type { Store } from "../../src/store/types.js";
import { tmpDb } from "./tmp.js";

/** The stores every engine behaviour is checked on (Postgres has its own suites: it needs a server). */
export const STORES: Array<[name: string, make: () => Store]> = [
  ["memory", () => memoryStore()],
  ["sqlite", () => sqliteStore({ path: tmpDb() })],
  ["jsonl", () => jsonlStore({ path: tmpDb("steplog.jsonl") })],
];
