/**
 * The Postgres schema, in its own Postgres schema (default "steplog"), as ordered migrations.
 * The same tables as SQLite: meta, runs, attempts, leases, steps, events. Times are bigint ms
 * (the engine passes them in). Ids and keys are COLLATE "C" so they sort bytewise, as in SQLite.
 *
 * Two columns on attempts and two on steps are an audit trail the engine never reads: which
 * lease epoch an attempt held and when (server clock) it took it, what lease it replaced, and
 * under which epoch (and when) a step row was last written. They let an operator — or a test —
 * check that no row was written under a superseded epoch.
 */

import { StoreTooNewError, StoreUnreadableError } from "../../base/errors.js";
import type { PgClient } from "./connection.js";

const MIGRATIONS: ReadonlyArray<(s: string) => string> = [
  // 1: everything (runs that wait included: the Postgres store started at SQLite's schema 2)
  (s) => `
  CREATE TABLE ${s}.meta (
    key   text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
  );

  CREATE TABLE ${s}.runs (
    id          text COLLATE "C" PRIMARY KEY,
    workflow    text NOT NULL,
    version     text,
    args        text NOT NULL,
    status      text NOT NULL,
    attempts    integer NOT NULL,
    budget_used integer NOT NULL,
    source      text,
    deadline    bigint,
    value       text,
    error       text,
    waiting_for text,
    wake_at     bigint,
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL
  );
  CREATE INDEX runs_by_status ON ${s}.runs (status, workflow);
  CREATE INDEX runs_by_created ON ${s}.runs (created_at DESC, id);
  -- engine.work() on every machine asks "what is due?": a small partial index answers it.
  CREATE INDEX runs_by_wake ON ${s}.runs (wake_at) WHERE wake_at IS NOT NULL;

  CREATE TABLE ${s}.attempts (
    run_id        text COLLATE "C" NOT NULL,
    number        integer NOT NULL,
    host          text NOT NULL,
    boot_id       text,
    pid           integer NOT NULL,
    process_start bigint,
    started_at    bigint NOT NULL,
    ended_at      bigint,
    ending        text,
    from_step     text,
    forced        boolean NOT NULL,
    error         text,
    epoch               bigint,
    claimed_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    replaced_expires_at bigint,
    PRIMARY KEY (run_id, number)
  );

  -- One row per run: its epoch, and the run's mutex (every transaction on a run locks it first).
  CREATE TABLE ${s}.leases (
    run_id       text COLLATE "C" PRIMARY KEY,
    epoch        bigint NOT NULL,
    attempt      integer,
    expires_at   bigint NOT NULL,
    heartbeat_at bigint NOT NULL
  );

  CREATE TABLE ${s}.steps (
    run_id          text COLLATE "C" NOT NULL,
    seq             integer NOT NULL,
    attempt         integer NOT NULL,
    key             text COLLATE "C" NOT NULL,
    name            text NOT NULL,
    status          text NOT NULL,
    effect          text NOT NULL,
    idempotency_key text NOT NULL,
    value           text,
    error           text,
    version         text,
    intended_at     bigint NOT NULL,
    ended_at        bigint,
    calls           integer NOT NULL,
    resolution      text,
    usage           text,
    written_epoch   bigint,
    written_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, seq)
  );
  CREATE INDEX steps_open ON ${s}.steps (status) WHERE status IN ('intended', 'escalated');

  CREATE TABLE ${s}.events (
    run_id      text COLLATE "C" NOT NULL,
    seq         integer NOT NULL,
    name        text NOT NULL,
    payload     text NOT NULL,
    sent_at     bigint NOT NULL,
    consumed_by text,
    PRIMARY KEY (run_id, seq)
  );
  `,
  // 2: which steps each attempt reused (for timelines); absent until its ending records it
  (s) => `ALTER TABLE ${s}.attempts ADD COLUMN reused jsonb;`,
  // 3: what a continue consented to for succeeded irreversible steps (redo / reuse), absent unless
  // given; where each step was entered in its attempt's call order; and when each lease row was
  // last written by the server's clock, which every claimer shares (set by a trigger, so every
  // statement that writes a lease sets it): a lease's age is judged by it, never by comparing
  // the holder's clock with the claimer's
  (s) => `
  ALTER TABLE ${s}.attempts ADD COLUMN consent jsonb;
  ALTER TABLE ${s}.steps ADD COLUMN position integer;
  ALTER TABLE ${s}.leases ADD COLUMN written_at timestamptz NOT NULL DEFAULT clock_timestamp();
  CREATE FUNCTION ${s}.lease_written() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    NEW.written_at := clock_timestamp();
    RETURN NEW;
  END $$;
  CREATE TRIGGER lease_written BEFORE INSERT OR UPDATE ON ${s}.leases FOR EACH ROW EXECUTE FUNCTION ${s}.lease_written();
  `,
  // 4: the key an event was sent with: a second send with it changes nothing
  (s) => `
  ALTER TABLE ${s}.events ADD COLUMN key text COLLATE "C";
  CREATE UNIQUE INDEX events_by_key ON ${s}.events (run_id, key) WHERE key IS NOT NULL;
  `,
  // 5: child runs: the run that started each one (engine.get lists a run's children by it)
  (s) => `
  ALTER TABLE ${s}.runs ADD COLUMN parent text COLLATE "C";
  CREATE INDEX runs_by_parent ON ${s}.runs (parent) WHERE parent IS NOT NULL;
  `,
  // 6: flow control: each run's concurrency key, rate key, priority and dedupe key; attempts by
  // start time (a rate limit counts the attempts started in its window)
  (s) => `
  ALTER TABLE ${s}.runs ADD COLUMN concurrency_key text COLLATE "C";
  ALTER TABLE ${s}.runs ADD COLUMN rate_key text COLLATE "C";
  ALTER TABLE ${s}.runs ADD COLUMN priority integer NOT NULL DEFAULT 0;
  ALTER TABLE ${s}.runs ADD COLUMN dedupe_key text COLLATE "C";
  CREATE INDEX runs_by_concurrency_key ON ${s}.runs (concurrency_key) WHERE concurrency_key IS NOT NULL;
  CREATE INDEX runs_by_rate_key ON ${s}.runs (rate_key) WHERE rate_key IS NOT NULL;
  CREATE INDEX runs_by_dedupe_key ON ${s}.runs (dedupe_key) WHERE dedupe_key IS NOT NULL;
  CREATE INDEX attempts_by_start ON ${s}.attempts (started_at);
  `,
  // 7: tracing: the W3C traceparent of the span a run's attempts hang from (its first traced
  // attempt's), so a continue in another process joins the same trace
  (s) => `ALTER TABLE ${s}.runs ADD COLUMN trace_context text;`,
  // 8: the index of open steps goes: no query reads it (steps are read by run), and with the
  // status indexed, a step's outcome (which changes its status) could never be a HOT update: it
  // wrote a new primary-key entry as well as the row
  (s) => `DROP INDEX IF EXISTS ${s}.steps_open;`,
  // 9: budgets: a run's spending budget (JSON) and what it has spent, added with each outcome
  (s) => `
  ALTER TABLE ${s}.runs ADD COLUMN cost_budget text;
  ALTER TABLE ${s}.runs ADD COLUMN spent_usd float8 NOT NULL DEFAULT 0;
  ALTER TABLE ${s}.runs ADD COLUMN spent_tokens float8 NOT NULL DEFAULT 0;
  `,
  // 10: streams (ctx.stream): each stream's records in order (src/store/rows.ts, StreamRecord)
  (s) => `
  CREATE TABLE ${s}.stream_records (
    run_id       text COLLATE "C" NOT NULL,
    stream       text COLLATE "C" NOT NULL,
    seq          integer NOT NULL,
    kind         text NOT NULL,
    chunk_offset integer NOT NULL,
    chunk        text,
    step         text,
    attempt      integer NOT NULL,
    at           bigint NOT NULL,
    PRIMARY KEY (run_id, stream, seq)
  );`,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/** A schema name as a quoted identifier; only plain names, so nothing needs escaping. */
export function quoteSchema(schema: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) throw new RangeError(schema);
  return `"${schema}"`;
}

export interface SchemaState {
  /** Tables in the schema (none when it does not exist). */
  tables: string[];
  /** meta's schema_version; 0 without a meta table. */
  version: number;
}

/** What the schema holds now; a schema that is not steplog's is refused, never touched. */
export async function probeSchema(client: PgClient, schema: string, location: string): Promise<SchemaState> {
  const { rows } = await client.query("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = $1 ORDER BY tablename", [schema]);
  const tables = rows.map((r: { tablename: string }) => r.tablename);
  if (tables.length === 0) return { tables, version: 0 };
  if (!tables.includes("meta")) {
    throw new StoreUnreadableError(location, `schema ${schema} holds tables ${tables.slice(0, 5).join(", ")} but no steplog meta table`);
  }
  const meta = await client.query(`SELECT value FROM ${quoteSchema(schema)}.meta WHERE key = 'schema_version'`);
  const text = (meta.rows[0] as { value?: string } | undefined)?.value;
  const version = Number(text);
  if (text === undefined || !Number.isInteger(version) || version < 1) {
    throw new StoreUnreadableError(location, `schema ${schema} has a meta table without a valid schema_version (${JSON.stringify(text ?? null)})`);
  }
  if (version > SCHEMA_VERSION) throw new StoreTooNewError(location, version, SCHEMA_VERSION);
  return { tables, version };
}

/**
 * Create or upgrade the schema. The caller has begun a transaction; a transaction-level
 * advisory lock (per schema name) makes concurrent first opens on many machines wait for one
 * another, and the version is read again under it, so each migration runs exactly once.
 */
export async function migrate(client: PgClient, schema: string, location: string): Promise<void> {
  await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`steplog:migrate:${schema}`]);
  const s = quoteSchema(schema);
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
  const { version } = await probeSchema(client, schema, location);
  for (let v = version; v < SCHEMA_VERSION; v++) await client.query(MIGRATIONS[v]!(s));
  if (version < SCHEMA_VERSION) {
    await client.query(`INSERT INTO ${s}.meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [
      String(SCHEMA_VERSION),
    ]);
  }
}
