/**
 * The SQLite schema, as ordered migrations. Tables are plain enough to query with the
 * sqlite3 shell: `select key, status from steps where run_id = '212' order by seq`.
 * Steps are clustered on (run_id, seq) (WITHOUT ROWID), so one run's log is one range read.
 */

export const MIGRATIONS: readonly string[] = [
  // 1: runs, attempts, leases, the step log
  `
  CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    workflow    TEXT NOT NULL,
    version     TEXT,
    args        TEXT NOT NULL,
    status      TEXT NOT NULL,
    attempts    INTEGER NOT NULL,
    budget_used INTEGER NOT NULL,
    source      TEXT,
    deadline    INTEGER,
    value       TEXT,
    error       TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX runs_by_status ON runs (status, workflow);
  CREATE INDEX runs_by_created ON runs (created_at);

  CREATE TABLE attempts (
    run_id        TEXT NOT NULL,
    number        INTEGER NOT NULL,
    host          TEXT NOT NULL,
    boot_id       TEXT,
    pid           INTEGER NOT NULL,
    process_start INTEGER,
    started_at    INTEGER NOT NULL,
    ended_at      INTEGER,
    ending        TEXT,
    from_step     TEXT,
    forced        INTEGER NOT NULL,
    error         TEXT,
    PRIMARY KEY (run_id, number)
  ) WITHOUT ROWID;

  CREATE TABLE leases (
    run_id       TEXT PRIMARY KEY,
    epoch        INTEGER NOT NULL,
    attempt      INTEGER,
    expires_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE steps (
    run_id          TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    attempt         INTEGER NOT NULL,
    key             TEXT NOT NULL,
    name            TEXT NOT NULL,
    status          TEXT NOT NULL,
    effect          TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    value           TEXT,
    error           TEXT,
    version         TEXT,
    intended_at     INTEGER NOT NULL,
    ended_at        INTEGER,
    calls           INTEGER NOT NULL,
    resolution      TEXT,
    usage           TEXT,
    PRIMARY KEY (run_id, seq)
  ) WITHOUT ROWID;
  CREATE INDEX steps_by_status ON steps (status) WHERE status IN ('intended', 'escalated');
  `,
  // 2: runs that wait (events, timers, approvals)
  `
  ALTER TABLE runs ADD COLUMN waiting_for TEXT;
  ALTER TABLE runs ADD COLUMN wake_at INTEGER;
  CREATE INDEX runs_by_wake ON runs (wake_at) WHERE wake_at IS NOT NULL;

  CREATE TABLE events (
    run_id      TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    name        TEXT NOT NULL,
    payload     TEXT NOT NULL,
    sent_at     INTEGER NOT NULL,
    consumed_by TEXT,
    PRIMARY KEY (run_id, seq)
  ) WITHOUT ROWID;
  `,
  // 3: which steps each attempt reused, for timelines
  `
  ALTER TABLE attempts ADD COLUMN reused TEXT;
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;
