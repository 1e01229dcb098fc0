// Postgres stores for suites that run on every store: one fresh schema per store, dropped after
// the file. STEPLOG_PG_URL unset: none (the suites say once that Postgres was skipped); set and
// unreachable: the first store's use fails loudly.
import crypto from "node:crypto";
import pg from "pg";
import { afterAll } from "vitest";
import { postgresStore } from "../../src/entries/postgres.js";
import type { Store } from "../../src/store/types.js";

export const PG_URL = process.env.STEPLOG_PG_URL || undefined;

const tag = `steplog_h${process.pid}_${crypto.randomBytes(3).toString("hex")}`;
const made: string[] = [];

export function pgStore(): Store {
  return postgresStore({ connectionString: PG_URL!, schema: pgSchema() });
}

/** A fresh schema name on the test server, dropped after the file: for stores a child process opens, or several store objects share. */
export function pgSchema(): string {
  const schema = `${tag}_${made.length}`;
  made.push(schema);
  return schema;
}

afterAll(async () => {
  if (!PG_URL || made.length === 0) return;
  const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
  try {
    for (const schema of made.splice(0)) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await admin.end();
  }
});
