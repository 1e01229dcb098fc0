/**
 * The SQLite schema, as ordered migrations. Tables are plain enough to query with the
 * sqlite3 shell: `select key, status from steps where run_id = '212' order by seq`.
 *
 * Steps are appended in write order (a rowid table). A run's steps are found through chunks:
 * each run writes its steps into a chunk numbered one above the highest chunk in the table,
 * and takes a new one every CHUNK_STEPS steps (and with each attempt); `step_chunks` lists each
 * run's chunks by the run's number in `runs`, and an index on (chunk, seq) finds the rows. So
 * a transaction carrying one step of each of 100 concurrent runs writes a few pages at the
 * table's end and a few at the index's end: the chunks being written sit together there. An
 * index on (run_num, seq) put each run's new entry beside its earlier ones, which is one index
 * page per run in flight (25 of the 29 pages such a commit wrote); a table clustered on the
 * text run id wrote three times as much again.
 *
 * A chunk number is never reused while any row or listing holds it: it is taken as max + 1
 * inside the write transaction that inserts its first row, and a store drops what it knows of
 * its runs (their chunks among it) when a transaction fails (see writes.ts). Reads also check
 * each row's run number, so a chunk could never hand one run another run's step. The unique
 * index holds within a chunk; an attempt's first intent is checked to come after every seq the
 * run holds, so no seq is written twice across chunks either.
 *
 * A row without a chunk (written by an older version of steplog still running against an
 * upgraded file, or by hand) is read by its run id, through `steps_unchunked` (schema 11).
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
  // 4: runs get numbers; steps become an append-ordered table indexed on (run_num, seq). The
  // index on open steps' status goes: no query used it, and every intent and outcome paid for it.
  // Two triggers number what a process still running version 3 inserts (it knows no numbers),
  // so a store can be upgraded while such a process runs. A step row whose run row is gone (by
  // hand) is kept, unnumbered. legacy_alter_table: the rename must not re-check views a user
  // made on `steps`, which point nowhere for the moment between the drop and the rename.
  `
  ALTER TABLE runs ADD COLUMN num INTEGER;
  UPDATE runs SET num = numbered.n
    FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM runs) AS numbered
    WHERE numbered.id = runs.id;
  CREATE UNIQUE INDEX runs_by_num ON runs (num);
  CREATE TRIGGER runs_numbered AFTER INSERT ON runs WHEN NEW.num IS NULL
  BEGIN
    UPDATE runs SET num = (SELECT coalesce(max(num), 0) + 1 FROM runs) WHERE id = NEW.id;
  END;

  CREATE TABLE steps_by_write (
    run_num         INTEGER,
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
    usage           TEXT
  );
  INSERT INTO steps_by_write
    SELECT runs.num, steps.run_id, steps.seq, steps.attempt, steps.key, steps.name, steps.status, steps.effect,
           steps.idempotency_key, steps.value, steps.error, steps.version, steps.intended_at, steps.ended_at,
           steps.calls, steps.resolution, steps.usage
    FROM steps LEFT JOIN runs ON runs.id = steps.run_id
    ORDER BY runs.num, steps.run_id, steps.seq;
  DROP TABLE steps;
  PRAGMA legacy_alter_table = ON;
  ALTER TABLE steps_by_write RENAME TO steps;
  PRAGMA legacy_alter_table = OFF;
  CREATE UNIQUE INDEX steps_by_run ON steps (run_num, seq);
  CREATE TRIGGER steps_numbered AFTER INSERT ON steps WHEN NEW.run_num IS NULL
  BEGIN
    UPDATE steps SET run_num = (SELECT num FROM runs WHERE id = NEW.run_id) WHERE rowid = NEW.rowid;
  END;
  `,
  // 5: what a continue consented to for succeeded irreversible steps (redo / reuse), as JSON;
  // where each step was entered in its attempt's call order (a continue checks the order it hands records back in)
  `
  ALTER TABLE attempts ADD COLUMN consent TEXT;
  ALTER TABLE steps ADD COLUMN position INTEGER;
  `,
  // 6: the key an event was sent with: a second send with it changes nothing
  `
  ALTER TABLE events ADD COLUMN key TEXT;
  CREATE UNIQUE INDEX events_by_key ON events (run_id, key) WHERE key IS NOT NULL;
  `,
  // 7: child runs: the run that started each one (engine.get lists a run's children by it)
  `
  ALTER TABLE runs ADD COLUMN parent TEXT;
  CREATE INDEX runs_by_parent ON runs (parent) WHERE parent IS NOT NULL;
  `,
  // 8: flow control: each run's concurrency key, rate key, priority and dedupe key; attempts by
  // start time (a rate limit counts the attempts started in its window)
  `
  ALTER TABLE runs ADD COLUMN concurrency_key TEXT;
  ALTER TABLE runs ADD COLUMN rate_key TEXT;
  ALTER TABLE runs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE runs ADD COLUMN dedupe_key TEXT;
  CREATE INDEX runs_by_concurrency_key ON runs (concurrency_key) WHERE concurrency_key IS NOT NULL;
  CREATE INDEX runs_by_rate_key ON runs (rate_key) WHERE rate_key IS NOT NULL;
  CREATE INDEX runs_by_dedupe_key ON runs (dedupe_key) WHERE dedupe_key IS NOT NULL;
  CREATE INDEX attempts_by_start ON attempts (started_at);
  `,
  // 9: tracing: the W3C traceparent of the span a run's attempts hang from (its first traced
  // attempt's), so a continue in another process joins the same trace
  `
  ALTER TABLE runs ADD COLUMN trace_context TEXT;
  `,
  // 10: steps are found through chunks (see the top of this file). The steps written before keep
  // one chunk per run, numbered minus the run's number, and so does a step whose row comes
  // without a chunk: one inserted by a process still running version 9 (the trigger gives it
  // its run's chunk, so a continue finds it), or by a rare write outside the step path.
  `
  ALTER TABLE steps ADD COLUMN chunk INTEGER;
  UPDATE steps SET chunk = -run_num WHERE run_num IS NOT NULL;
  CREATE TABLE step_chunks (
    run_num INTEGER NOT NULL,
    chunk   INTEGER NOT NULL,
    PRIMARY KEY (run_num, chunk)
  ) WITHOUT ROWID;
  INSERT INTO step_chunks (run_num, chunk) SELECT DISTINCT run_num, -run_num FROM steps WHERE run_num IS NOT NULL;
  DROP INDEX steps_by_run;
  CREATE UNIQUE INDEX steps_by_chunk ON steps (chunk, seq);
  CREATE TRIGGER steps_chunked AFTER INSERT ON steps WHEN NEW.chunk IS NULL
  BEGIN
    INSERT OR IGNORE INTO step_chunks (run_num, chunk) SELECT num, -num FROM runs WHERE id = NEW.run_id AND num IS NOT NULL;
    UPDATE steps SET chunk = -(SELECT num FROM runs WHERE id = NEW.run_id) WHERE rowid = NEW.rowid;
  END;
  `,
  // 11: no triggers on steps. Each made every step's INSERT dearer (about a tenth of SQLite's
  // work a step with 100 runs in flight) to serve rows that steplog's own writes never leave
  // incomplete: every row it inserts carries its run number and chunk. A row inserted without a
  // chunk (by a process still running version 10 or older, or by hand) is found by its run id,
  // through an index that holds only such rows and so costs a chunked insert nothing. The rows
  // without a chunk before this are orphans (their run row was gone when they were written or
  // upgraded): each gets a chunk of its own that no run lists, below every side chunk, so no
  // read of a later run with the same id takes them for its own (they stay in the table).
  `
  DROP TRIGGER steps_numbered;
  DROP TRIGGER steps_chunked;
  UPDATE steps SET chunk = -1099511627776 - rowid WHERE chunk IS NULL;
  CREATE INDEX steps_unchunked ON steps (run_id, seq) WHERE chunk IS NULL;
  `,
  // 12: budgets: a run's spending budget (JSON) and what it has spent, added with each outcome
  `
  ALTER TABLE runs ADD COLUMN cost_budget TEXT;
  ALTER TABLE runs ADD COLUMN spent_usd REAL NOT NULL DEFAULT 0;
  ALTER TABLE runs ADD COLUMN spent_tokens REAL NOT NULL DEFAULT 0;
  `,
  // 13: streams (ctx.stream): each stream's records in order (see src/store/rows.ts, StreamRecord)
  `
  CREATE TABLE stream_records (
    run_id       TEXT NOT NULL,
    stream       TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    kind         TEXT NOT NULL,
    chunk_offset INTEGER NOT NULL,
    chunk        TEXT,
    step         TEXT,
    attempt      INTEGER NOT NULL,
    at           INTEGER NOT NULL,
    PRIMARY KEY (run_id, stream, seq)
  ) WITHOUT ROWID;
  `,
];

/**
 * Steps a run writes into one chunk before it takes a new one. Fewer make more `step_chunks`
 * rows to write and read; more spread the chunks being written over more index pages (16 wrote
 * fastest in bench/layout.mjs).
 */
export const CHUNK_STEPS = 16;

export const SCHEMA_VERSION = MIGRATIONS.length;
