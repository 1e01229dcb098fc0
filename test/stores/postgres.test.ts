// The Postgres store against a real server (STEPLOG_PG_URL): the conformance suite, and what only
// a network database does — connections that die mid-run, locked rows, concurrent first opens,
// secrets kept out of messages. Every store here gets its own fresh schema, dropped afterwards,
// so this file runs in parallel with the others.
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, isSteplogError, RunBusyError } from "../../src/entries/index.js";
import { postgresStore, type PostgresStore } from "../../src/entries/postgres.js";
import { attemptRow, describeStore, runRow } from "../../src/entries/testing.js";
import type { PgClient, PgPoolLike } from "../../src/store/postgres/connection.js";
import { SCHEMA_VERSION } from "../../src/store/postgres/schema.js";
import type { Lease, StoredRun } from "../../src/store/types.js";
import { currentOwner } from "../../src/ownership/owner.js";

const URL_ = process.env.STEPLOG_PG_URL;
if (!URL_) {
  console.warn("postgres store tests skipped: set STEPLOG_PG_URL (e.g. STEPLOG_PG_URL=postgres://postgres@127.0.0.1:5432/test) to run them");
}
const suite = URL_ ? describe : describe.skip;

const tag = `steplog_t${process.pid}_${crypto.randomBytes(3).toString("hex")}`;
const schemas: string[] = [];
function freshSchema(): string {
  const name = `${tag}_${schemas.length}`;
  schemas.push(name);
  return name;
}

let admin: pg.Pool;
if (URL_) {
  beforeAll(async () => {
    admin = new pg.Pool({ connectionString: URL_, max: 3 });
    admin.on("error", () => {});
    try {
      await admin.query("SELECT 1");
    } catch (error) {
      // Set means "test Postgres": an unreachable server is a failure, never a skip.
      throw new Error(`STEPLOG_PG_URL is set but the server cannot be reached: ${(error as Error).message}`);
    }
  });
  afterAll(async () => {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });
}

const store = (schema: string, extra: Parameters<typeof postgresStore>[0] = {}) => postgresStore({ connectionString: URL_!, schema, ...extra });

if (URL_) {
  describeStore(
    "postgres",
    {
      create: () => store(freshSchema()),
      reopen: (closed) => store((closed as PostgresStore).schema),
      another: (live) => store((live as PostgresStore).schema),
      corrupt: async (closed) => {
        const schema = (closed as PostgresStore).schema;
        await admin.query(`DROP TABLE "${schema}".meta`);
        return store(schema);
      },
    },
    { describe, it },
  );
}

const NOW = Date.UTC(2030, 0, 1);

/**
 * A pool on the test server whose clients send each query through `query` (to cut a COMMIT's
 * reply, refuse a COMMIT, …). `end()` ends the real pool; the store never does.
 */
function interceptedPool(max: number, query: (client: pg.PoolClient, text: string, values?: unknown[], name?: string) => Promise<unknown>): PgPoolLike {
  const real = new pg.Pool({ connectionString: URL_!, max });
  real.on("error", () => {});
  return {
    options: real.options,
    end: () => real.end(),
    async connect() {
      const client = await real.connect();
      return {
        // A named statement goes through as its text and values (the interceptors read the text).
        query: ((arg: string | { name: string; text: string; values: unknown[] }, values?: unknown[]) =>
          typeof arg === "string" ? query(client, arg, values) : query(client, arg.text, arg.values, arg.name)) as PgClient["query"],
        release: (destroy) => client.release(destroy),
      } satisfies PgClient;
    },
  };
}

/** A run of a workflow that waits for the event "verdict", parked, in `schema`. */
async function parkedRun(schema: string) {
  const review = defineWorkflow({ name: "review", run: async (ctx) => ctx.waitForEvent("verdict") });
  const setup = createEngine({ store: store(schema), workflows: [review] });
  expect(await setup.start(review, undefined, { id: "parked" })).toMatchObject({ status: "waiting" });
  await setup.close();
  return review;
}

suite("postgres store", () => {
  it("tables in their own schema, queryable with psql; location names host, port, database and schema, never a password", async () => {
    const schema = freshSchema();
    const hello = defineWorkflow({
      name: "hello",
      async run(ctx) {
        const a = await ctx.step("a", async () => ({ greeting: "hello" }));
        return ctx.step("b", async () => `${a.greeting} world`);
      },
    });
    const engine = createEngine({ store: store(schema), workflows: [hello] });
    expect(engine.store.location).toMatch(new RegExp(`^postgres store \\(schema ${schema}\\) at [^:@]+:\\d+/\\w+$`));
    expect((await engine.start(hello, undefined, { id: "212" })).status).toBe("completed");
    await engine.close();
    const q = (sql: string) => admin.query(sql).then((r) => r.rows);
    expect(await q(`select id, workflow, status, attempts from "${schema}".runs`)).toEqual([
      { id: "212", workflow: "hello", status: "completed", attempts: 1 },
    ]);
    expect(await q(`select key, status, idempotency_key, value, written_epoch from "${schema}".steps where run_id = '212' order by seq`)).toEqual([
      { key: "a", status: "succeeded", idempotency_key: "212:a", value: '{"greeting":"hello"}', written_epoch: "1" },
      { key: "b", status: "succeeded", idempotency_key: "212:b", value: '"hello world"', written_epoch: "1" },
    ]);
    expect(await q(`select value from "${schema}".meta where key = 'schema_version'`)).toEqual([{ value: String(SCHEMA_VERSION) }]);
  });

  it("run ids with quotes and backslashes are written, locked and read back as they are (the lease lock quotes them itself)", async () => {
    const schema = freshSchema();
    const two = defineWorkflow({
      name: "two",
      async run(ctx) {
        const a = await ctx.step("a", async () => 1);
        return a + (await ctx.step("b", async () => 2));
      },
    });
    const engine = createEngine({ store: store(schema), workflows: [two] });
    const ids = [`\\'; DROP TABLE runs; --`, "back\\slash \\n", "it's", "E'x'"];
    for (const id of ids) expect(await engine.start(two, undefined, { id })).toMatchObject({ status: "completed", value: 3 });
    const listed = (await engine.list()).map((r) => r.id).sort();
    expect(listed).toEqual([...ids].sort());
    for (const id of ids) expect((await engine.get(id)).steps.map((s) => s.key)).toEqual(["a", "b"]);
    await engine.close();
  });

  it("a connection killed (pg_terminate_backend) between a step's intent and its outcome is survived: the run completes, no step runs twice", async () => {
    const schema = freshSchema();
    const app = `${schema}_app`;
    let killed = 0;
    const terminate = async () => {
      const { rows } = await admin.query("SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1", [app]);
      killed += rows.filter((r) => r.ok).length;
    };
    const calls: Record<string, number> = {};
    const count = (key: string) => (calls[key] = (calls[key] ?? 0) + 1);
    const flow = defineWorkflow({
      name: "killed",
      async run(ctx) {
        const out: number[] = [];
        for (let i = 1; i <= 4; i++) {
          out.push(
            await ctx.step(`s${i}`, { effect: i === 3 ? "irreversible" : "idempotent" }, async () => {
              count(`s${i}`);
              // The intent of this step is durable; its outcome not yet. Kill every connection the store has.
              if (i % 2 === 0 || i === 3) await terminate();
              return i * 10;
            }),
          );
        }
        return out;
      },
    });
    const engine = createEngine({ store: store(schema, { applicationName: app, poolSize: 4 }), workflows: [flow] });
    const result = await engine.start(flow, undefined, { id: "k" });
    expect(result).toMatchObject({ status: "completed", value: [10, 20, 30, 40], attempt: 1 });
    expect(calls).toEqual({ s1: 1, s2: 1, s3: 1, s4: 1 });
    expect(killed).toBeGreaterThan(0);
    const view = await engine.get("k");
    expect(view.steps.map((s) => [s.key, s.status])).toEqual([
      ["s1", "succeeded"],
      ["s2", "succeeded"],
      ["s3", "succeeded"],
      ["s4", "succeeded"],
    ]);
    await engine.close();
  });

  it("a COMMIT whose reply is lost is retried on a new connection and recognised as done: no step lost or repeated, no extra attempt", async () => {
    const schema = freshSchema();
    let dropped = 0;
    let toggle = false;
    // Every other COMMIT is carried out by the server, then its connection is cut before the reply is
    // read: a COMMIT of its own, the end of a transaction sent in one round trip, or a named
    // statement run alone (its own transaction: its reply is its COMMIT's).
    const flaky = interceptedPool(4, async (client, text, values, name) => {
      const result = await client.query(text, values);
      if ((text === "COMMIT" || text.endsWith("; COMMIT") || name !== undefined) && (toggle = !toggle)) {
        dropped++;
        throw new Error("Connection terminated unexpectedly");
      }
      return result;
    });
    const calls: string[] = [];
    let failOnce = true;
    const flow = defineWorkflow({
      name: "lost-replies",
      async run(ctx) {
        const a = await ctx.step("a", async () => (calls.push("a"), 1));
        const b = await ctx.step("b", { effect: "irreversible" }, async () => (calls.push("b"), 2));
        const c = await ctx.step("c", async () => {
          calls.push("c");
          if (failOnce) {
            failOnce = false;
            throw new Error("c fails the first time");
          }
          return 3;
        });
        return a + b + c;
      },
    });
    const engine = createEngine({ store: postgresStore({ pool: flaky, schema }), workflows: [flow] });
    expect((await engine.start(flow, undefined, { id: "r" })).status).toBe("failed");
    const again = await engine.continue("r");
    expect(again).toMatchObject({ status: "completed", value: 6, attempt: 2 });
    expect(calls).toEqual(["a", "b", "c", "c"]);
    const stored = (await engine.store.loadRun("r"))!;
    expect(stored.attempts.map((a) => [a.number, a.ending])).toEqual([
      [1, "failed"],
      [2, "completed"],
    ]);
    expect(stored.steps.map((s) => [s.seq, s.key, s.status, s.attempt])).toEqual([
      [1, "a", "succeeded", 1],
      [2, "b", "succeeded", 1],
      [3, "c", "failed", 1],
      [4, "c", "succeeded", 2],
    ]);
    expect(stored.lease).toMatchObject({ epoch: 2, attempt: null });
    expect(dropped).toBeGreaterThan(5);
    await engine.close();
    await flaky.end();
  });

  it("a command whose COMMIT reply is lost is not run again: STORE_WRITE_FAILED saying it may have been recorded (it was), and to look with engine.get", async () => {
    const schema = freshSchema();
    const review = await parkedRun(schema);
    // The server commits; the reply never arrives.
    const lossy = interceptedPool(2, async (client, text, values) => {
      const result = await client.query(text, values);
      if (text === "COMMIT") throw new Error("Connection terminated unexpectedly");
      return result;
    });
    const engine = createEngine({ store: postgresStore({ pool: lossy, schema }), workflows: [review] });
    const error = await engine.send("parked", "verdict", "yes").catch((e: unknown) => e);
    expect(isSteplogError(error, "STORE_WRITE_FAILED"), String(error)).toBe(true);
    expect((error as Error).message).toContain('of run "parked"');
    expect((error as Error).message).toContain('may have been recorded all the same: look with engine.get("parked")');
    const reader = store(schema);
    const stored = (await reader.loadRun("parked"))!;
    expect(stored.events.map((e) => [e.name, e.payload])).toEqual([["verdict", '"yes"']]);
    await reader.close();
    await engine.close();
    await lossy.end();
  });

  it("a command whose COMMIT the server refuses: STORE_WRITE_FAILED saying nothing was changed (nothing was)", async () => {
    const schema = freshSchema();
    const review = await parkedRun(schema);
    // The server answers COMMIT with an error (as a deferred constraint would): rolled back.
    const refusing = interceptedPool(2, async (client, text, values) => {
      if (text !== "COMMIT") return client.query(text, values);
      await client.query("ROLLBACK");
      throw Object.assign(new Error("the server refused the commit"), { code: "23514" });
    });
    const engine = createEngine({ store: postgresStore({ pool: refusing, schema }), workflows: [review] });
    const error = await engine.send("parked", "verdict", "yes").catch((e: unknown) => e);
    expect(isSteplogError(error, "STORE_WRITE_FAILED"), String(error)).toBe(true);
    expect((error as Error).message).toContain("Nothing was changed");
    const reader = store(schema);
    expect((await reader.loadRun("parked"))!.events).toEqual([]);
    await reader.close();
    await engine.close();
    await refusing.end();
  });

  it("times with fractional milliseconds are stored whole (wake times rounded up): sleeps, wait timeouts and deadlines work", async () => {
    const schema = freshSchema();
    const flow = defineWorkflow({
      name: "fractions",
      async run(ctx) {
        await ctx.step("a", { timeoutMs: 100.25 }, async () => 1);
        await ctx.sleep("nap", 250.7);
        return ctx.waitForEvent("go", { timeoutMs: 100.25 }).catch(() => "timed out");
      },
    });
    const engine = createEngine({ store: store(schema), workflows: [flow], leaseMs: 1000.5 });
    const started = Date.now();
    expect(await engine.start(flow, undefined, { id: "f", timeoutMs: 5000.5 })).toMatchObject({ status: "waiting", waitingFor: { kind: "sleep" } });
    const parked = (await engine.store.loadRun("f"))!;
    expect(Number.isInteger(parked.run.wakeAt)).toBe(true);
    expect(parked.run.wakeAt! - started).toBeGreaterThanOrEqual(251);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await engine.continue("f", { timeoutMs: 5000.5 })).toMatchObject({ status: "waiting", waitingFor: { kind: "event" } });
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(await engine.continue("f")).toMatchObject({ status: "completed", value: "timed out" });
    await engine.close();
  });

  it("a statement the server refuses as wrong (a steplog bug): not a store failure, the SQL state named, the attempt not counted", async () => {
    const schema = freshSchema();
    let refuse = true;
    const refusing = interceptedPool(2, async (client, text, values) => {
      if (refuse && text.includes("INSERT INTO") && text.includes(".steps")) {
        throw Object.assign(new Error('value "9999999999999" is out of range for type integer'), { code: "22003" });
      }
      return client.query(text, values);
    });
    const flow = defineWorkflow({ name: "refused", maxAttempts: 1, run: (ctx) => ctx.step("a", async () => "done") });
    const engine = createEngine({ store: postgresStore({ pool: refusing, schema }), workflows: [flow] });
    const first = await engine.start(flow, undefined, { id: "r" });
    expect(first).toMatchObject({ status: "failed", runStatus: "failed", error: { name: "StoreRefusedError", fields: { sqlState: "22003" } } });
    expect(first.error!.code).toBeUndefined();
    expect(first.error!.message).toMatch(/SQL state 22003.*This is a bug in steplog/);
    refuse = false;
    // With maxAttempts 1 a counted attempt would have dead-lettered the run.
    expect(await engine.continue("r")).toMatchObject({ status: "completed", value: "done" });
    await engine.close();
    await refusing.end();
  });

  it("a full disk on the server: STORE_WRITE_FAILED saying to free space on the database server, no file advice", async () => {
    const schema = freshSchema();
    let full = false;
    const filling = interceptedPool(2, async (client, text, values) => {
      if (full && text.includes(".steps")) throw Object.assign(new Error("could not extend file: No space left on device"), { code: "53100" });
      return client.query(text, values);
    });
    const flow = defineWorkflow({
      name: "disk",
      async run(ctx) {
        full = true;
        return ctx.step("a", async () => "done");
      },
    });
    const engine = createEngine({ store: postgresStore({ pool: filling, schema }), workflows: [flow] });
    const result = await engine.start(flow, undefined, { id: "d" });
    expect(result).toMatchObject({ status: "failed", error: { code: "STORE_WRITE_FAILED" } });
    expect(result.error!.message).toMatch(/free space on the database server/i);
    expect(result.error!.message).not.toMatch(/the file|its folder/);
    full = false;
    await engine.close();
    await filling.end();
  });

  it("a new run whose COMMIT reply is lost past retryForMs: STORE_WRITE_FAILED saying it may have been recorded (it was), not to continue", async () => {
    const schema = freshSchema();
    await store(schema)
      .migrate()
      .then(() => undefined);
    // The new run's transaction (sent in one round trip) or its COMMIT: carried out, reply lost.
    const lossy = interceptedPool(2, async (client, text, values) => {
      const result = await client.query(text, values);
      if (text === "COMMIT" || (text.endsWith("; COMMIT") && text.includes(".runs (id,")))
        throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
      return result;
    });
    const echo = defineWorkflow({ name: "echo", run: async (_ctx, text: string) => text });
    const engine = createEngine({ store: postgresStore({ pool: lossy, schema, retryForMs: 0 }), workflows: [echo] });
    const error = await engine.start(echo, "hi", { id: "lost-reply" }).catch((e: unknown) => e);
    expect(isSteplogError(error, "STORE_WRITE_FAILED"), String(error)).toBe(true);
    expect((error as Error).message).toContain('the new run of run "lost-reply"');
    expect((error as Error).message).toContain("may have been recorded all the same");
    const reader = store(schema);
    expect((await reader.loadRun("lost-reply"))?.run.id).toBe("lost-reply");
    await reader.close();
    await engine.close();
    await lossy.end();
  });

  it("runs started together whose COMMIT reply is lost, the server then gone past retryForMs: each says it may have been recorded (each was)", async () => {
    const schema = freshSchema();
    await store(schema)
      .migrate()
      .then(() => undefined);
    let down = false;
    const lossy = interceptedPool(4, async (client, text, values) => {
      if (down) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      const result = await client.query(text, values);
      if (text.endsWith("; COMMIT") && text.split(".runs (id,").length > 2) {
        down = true;
        throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
      }
      return result;
    });
    const echo = defineWorkflow({ name: "echo", run: async (_ctx, text: string) => text });
    const engine = createEngine({ store: postgresStore({ pool: lossy, schema, retryForMs: 0 }), workflows: [echo] });
    const ids = ["x", "y", "z"];
    const errors = await Promise.all(ids.map((id) => engine.start(echo, "hi", { id }).catch((e: unknown) => e)));
    expect(down).toBe(true);
    for (const [i, error] of errors.entries()) {
      expect(isSteplogError(error, "STORE_WRITE_FAILED"), String(error)).toBe(true);
      expect((error as Error).message).toContain(`the new run of run "${ids[i]}"`);
      expect((error as Error).message).toContain("may have been recorded all the same");
    }
    const reader = store(schema);
    for (const id of ids) expect((await reader.loadRun(id))?.run.id).toBe(id);
    await reader.close();
    await engine.close();
    await lossy.end();
  });

  it("a claim never reports an existing run as missing: a locked run with a live holder is busy at once; a locked free run is waited for, then taken", async () => {
    const schema = freshSchema();
    const s = store(schema);
    const first = await s.createRun(runRow("held"), attemptRow("held", 1), { expiresAt: NOW + 60_000, now: NOW });
    expect("exists" in first).toBe(false);
    await s.createRun(runRow("free"), attemptRow("free", 1), { expiresAt: NOW + 60_000, now: NOW });
    await s.endAttempt({ runId: "free", epoch: 1 }, { attempt: 1, ending: "failed", endedAt: NOW, error: null, run: { status: "failed" } });
    const takeIfFree = (runId: string) => (current: StoredRun) =>
      current.lease?.attempt != null
        ? { kind: "refuse" as const, error: new RunBusyError(runId, { attempt: current.lease.attempt, host: "h", pid: 1, expiresAt: current.lease.expiresAt }) }
        : {
            kind: "take" as const,
            attempt: attemptRow(runId, current.run.attempts + 1),
            run: { attempts: current.run.attempts + 1 },
            expiresAt: NOW + 60_000,
            now: NOW,
          };

    const locker = await admin.connect();
    try {
      await locker.query("BEGIN");
      await locker.query(`SELECT 1 FROM "${schema}".leases WHERE run_id IN ('held', 'free') FOR UPDATE`);
      const started = Date.now();
      await expect(s.claimRun("held", takeIfFree("held"))).rejects.toSatisfy((e) => isSteplogError(e, "RUN_BUSY"));
      expect(Date.now() - started).toBeLessThan(1000);
      expect(await s.claimRun("nope", takeIfFree("nope"))).toEqual({ kind: "missing" });
      let settled = false;
      const waiting = s.claimRun("free", takeIfFree("free")).finally(() => (settled = true));
      await new Promise((r) => setTimeout(r, 300));
      expect(settled).toBe(false);
      await locker.query("COMMIT");
      expect(await waiting).toMatchObject({ kind: "taken", lease: { runId: "free", epoch: 2, attempt: 2 } });
    } finally {
      await locker.query("ROLLBACK").catch(() => {});
      locker.release();
      await s.close();
    }
  });

  it("two attempts of one run writing the same seq in one batch: the live one's write applies, the superseded one's is refused", async () => {
    const s = store(freshSchema());
    await s.createRun(runRow("r"), attemptRow("r", 1), { expiresAt: NOW + 60_000, now: NOW });
    await s.updateRun("r", () => ({ fenceOut: { now: NOW }, result: true }));
    const claimed = await s.claimRun("r", () => ({ kind: "take", attempt: attemptRow("r", 2), run: { attempts: 2 }, expiresAt: NOW + 60_000, now: NOW }));
    if (claimed.kind !== "taken") throw new Error(`expected the claim to take the run, got ${claimed.kind}`);
    const live = claimed.lease;
    const stale = { runId: "r", epoch: 1 };
    const step = (attempt: number) => ({ ...stepRowFor("r"), attempt, key: `by-${attempt}`, idempotencyKey: `r:by-${attempt}` });
    // Issued in one turn: one batch holding both intents for seq 1.
    const results = await Promise.allSettled([s.writeIntent(stale, step(1)), s.writeIntent(live, step(2))]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled"]);
    expect(isSteplogError((results[0] as PromiseRejectedResult).reason, "LEASE_LOST")).toBe(true);
    expect((await s.loadRun("r"))!.steps.map((t) => [t.seq, t.attempt, t.key])).toEqual([[1, 2, "by-2"]]);
    await s.close();
    // A write after close is a rejected promise (STORE_CLOSED), never a throw at the call.
    const late = s.writeIntent(live, { ...step(2), seq: 2, key: "late" });
    await expect(late).rejects.toMatchObject({ code: "STORE_CLOSED" });
    await expect(
      s.writeOutcome(live, { seq: 1, status: "succeeded", value: "1", error: null, endedAt: NOW, calls: 1, resolution: null, usage: null }),
    ).rejects.toMatchObject({
      code: "STORE_CLOSED",
    });
  });

  it("a group commit refuses a stale write alone: the other writes of the batch commit", async () => {
    const s = store(freshSchema());
    const a = (await s.createRun(runRow("a"), attemptRow("a", 1), { expiresAt: NOW + 60_000, now: NOW })) as { epoch: number; runId: string };
    const b = (await s.createRun(runRow("b"), attemptRow("b", 1), { expiresAt: NOW + 60_000, now: NOW })) as { epoch: number; runId: string };
    await s.updateRun("b", () => ({ fenceOut: { now: NOW }, result: true }));
    const step = (runId: string) => ({ ...stepRowFor(runId), runId });
    // Issued in one turn of the event loop: one transaction.
    const results = await Promise.allSettled([s.writeIntent(a, step("a")), s.writeIntent(b, step("b")), s.renewLease(a, NOW + 90_000, NOW + 1)]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(isSteplogError((results[1] as PromiseRejectedResult).reason, "LEASE_LOST")).toBe(true);
    expect((await s.loadRun("a"))!.steps).toHaveLength(1);
    expect((await s.loadRun("a"))!.lease!.expiresAt).toBe(NOW + 90_000);
    expect((await s.loadRun("b"))!.steps).toHaveLength(0);
    await s.close();
  });

  it("a named batch of intents and outcomes refuses a stale write alone (its answer names who applied only then): the others commit", async () => {
    const answers: Array<[string, number]> = [];
    const recording = interceptedPool(2, async (client, text, values, name) => {
      const result = await client.query(text, values);
      if (name !== undefined) answers.push([name.replace(/_[0-9a-f]+$/, ""), result.rows.length]);
      return result;
    });
    const s = postgresStore({ pool: recording, schema: freshSchema() });
    const [a, b, c] = [await leaseOf(s, "a"), await leaseOf(s, "b"), await leaseOf(s, "c")];
    await Promise.all([s.writeIntent(a, stepAt("a", 1)), s.writeIntent(b, stepAt("b", 1)), s.writeIntent(c, stepAt("c", 1))]);
    await s.updateRun("b", () => ({ fenceOut: { now: NOW }, result: true }));
    // One turn of the event loop: three outcomes and three intents, one of each run's stale.
    const results = await Promise.allSettled([
      s.writeOutcome(a, succeededAt(1)),
      s.writeOutcome(b, succeededAt(1)),
      s.writeOutcome(c, succeededAt(1)),
      s.writeIntent(a, stepAt("a", 2)),
      s.writeIntent(b, stepAt("b", 2)),
      s.writeIntent(c, stepAt("c", 2)),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled", "rejected", "fulfilled"]);
    for (const i of [1, 4]) expect(isSteplogError((results[i] as PromiseRejectedResult).reason, "LEASE_LOST")).toBe(true);
    for (const runId of ["a", "c"]) {
      expect((await s.loadRun(runId))!.steps.map((t) => [t.seq, t.status, t.value])).toEqual([
        [1, "succeeded", `"v1"`],
        [2, "intended", null],
      ]);
    }
    expect((await s.loadRun("b"))!.steps.map((t) => [t.seq, t.status])).toEqual([[1, "intended"]]);
    // Both batches went as the named JSON statement: every write applied, the answer is its counts
    // alone; two stale, the answer also names the four applied and the three leases.
    expect(answers).toEqual([
      ["steplog_batch", 1],
      ["steplog_batch", 1 + 4 + 3],
    ]);
    await s.close();
    await recording.end();
  });

  it("a run's start, each sequential step and the attempt's ending are one round trip each; values with quotes, backslashes, E'…', $$ and non-ASCII text are stored exactly", async () => {
    const schema = freshSchema();
    await store(schema)
      .migrate()
      .then(() => undefined);
    let queries = 0;
    const endings: string[] = [];
    const rollbacks: string[] = [];
    const counting = interceptedPool(2, async (client, text, values) => {
      queries++;
      if (text.includes("SET attempt = NULL")) endings.push(text);
      // A one-round-trip transaction the server refused is rolled back and sent the usual way.
      if (text === "ROLLBACK") rollbacks.push(text);
      return client.query(text, values);
    });
    const tricky = ["it's", "back\\slash \\' quote", "E'x'); DROP TABLE runs; --", "$$ $tag$ \n\r\t", "héllo ✓ 🐢 \u2028", "'".repeat(50)];
    const flow = defineWorkflow({
      name: "trips",
      async run(ctx, n: number) {
        const seen: unknown[] = [];
        for (let i = 0; i < n; i++) seen.push(await ctx.step(`s'${i % 3}\\`, async () => ({ text: tricky[i % tricky.length], i })));
        return seen.length;
      },
    });
    const engine = createEngine({ store: postgresStore({ pool: counting, schema }), workflows: [flow] });
    const roundTrips = async (n: number) => {
      const before = queries;
      expect(await engine.start(flow, n)).toMatchObject({ status: "completed", value: n });
      return queries - before;
    };
    await roundTrips(2); // the first run also asks which database this is
    // The start, the step's intent, its outcome, the ending.
    expect(await roundTrips(1)).toBe(4);
    const short = await roundTrips(2);
    const long = await roundTrips(22);
    expect(long - short).toBe(20);
    expect(rollbacks).toEqual([]);
    expect(endings).toHaveLength(4);
    for (const text of endings) expect(text).toMatch(/^BEGIN; .*; COMMIT$/s);
    const runs = await engine.list({ workflow: "trips" });
    const stored = (await engine.store.loadRun(runs[0]!.id))!;
    expect(stored.steps).toHaveLength(22);
    stored.steps.forEach((step, i) => {
      expect(step.status).toBe("succeeded");
      expect(JSON.parse(step.value!)).toEqual({ text: tricky[i % tricky.length], i });
      expect(step.idempotencyKey).toBe(`${stored.run.id}:${step.key}`);
    });
    expect(stored.steps[4]!.key).toBe("s'1\\#2");
    await engine.close();
    await counting.end();
  });

  it("a batch whose one-round-trip transaction fails on the server goes again a statement at a time, and commits", async () => {
    const schema = freshSchema();
    let failed = 0;
    // The first one-round-trip transaction fails part-way on the server (after BEGIN and the lease lock).
    const failing = interceptedPool(2, async (client, text, values) => {
      if (failed === 0 && text.endsWith("; COMMIT") && text.includes("INSERT INTO")) {
        failed++;
        return client.query(text.replace(/; COMMIT$/, "; SELECT 1 / 0; COMMIT"), values);
      }
      return client.query(text, values);
    });
    const calls: string[] = [];
    const flow = defineWorkflow({
      name: "fallback",
      async run(ctx) {
        await ctx.step("a", async () => calls.push("a"));
        await ctx.step("b", async () => calls.push("b"));
        return "done";
      },
    });
    const engine = createEngine({ store: postgresStore({ pool: failing, schema }), workflows: [flow] });
    expect(await engine.start(flow, undefined, { id: "r" })).toMatchObject({ status: "completed", value: "done" });
    expect(failed).toBe(1);
    expect(calls).toEqual(["a", "b"]);
    expect((await engine.store.loadRun("r"))!.steps.map((s) => [s.key, s.status])).toEqual([
      ["a", "succeeded"],
      ["b", "succeeded"],
    ]);
    await engine.close();
    await failing.end();
  });

  it("a step's intent and the previous outcome go as one named statement, run alone (no BEGIN, no COMMIT): one query a step", async () => {
    const schema = freshSchema();
    const sent: Array<{ text: string; name?: string }> = [];
    const counting = interceptedPool(2, async (client, text, values, name) => {
      sent.push({ text, name });
      return client.query(text, values);
    });
    const flow = defineWorkflow({
      name: "prepared",
      async run(ctx) {
        let total = 0;
        for (let i = 0; i < 10; i++) total += await ctx.step("s", async () => i);
        return total;
      },
    });
    const engine = createEngine({ store: postgresStore({ pool: counting, schema }), workflows: [flow] });
    await engine.start(flow, undefined, { id: "warm" });
    sent.length = 0;
    expect(await engine.start(flow, undefined, { id: "r" })).toMatchObject({ status: "completed", value: 45 });
    const named = sent.filter((q) => q.name !== undefined);
    // The 10 intents, each but the first with the outcome before it, then the last outcome (the
    // ending waits for it): one named statement each, the nine in the middle one statement.
    expect(named.length).toBe(11);
    const names = named.map((q) => q.name!.replace(/_[0-9a-f]+$/, ""));
    expect(names).toEqual(["steplog_intent", ...Array(9).fill("steplog_step"), "steplog_outcome"]);
    expect(new Set(named.slice(1, 10).map((q) => q.name)).size).toBe(1);
    expect(named.every((q) => q.text.includes("FOR UPDATE"))).toBe(true);
    expect(named.every((q) => !/\bBEGIN\b|\bCOMMIT\b/.test(q.text))).toBe(true);
    expect((await engine.store.loadRun("r"))!.steps.map((s) => [s.key, s.status, s.value])).toEqual(
      Array.from({ length: 10 }, (_, i) => [i === 0 ? "s" : `s#${i + 1}`, "succeeded", String(i)]),
    );
    await engine.close();
    await counting.end();
  });

  it("a sequential step's statement applies its outcome and next intent together or neither: a stale lease, a closed intent or a taken seq go the usual way", async () => {
    const names: string[] = [];
    const recording = interceptedPool(2, async (client, text, values, name) => {
      if (name !== undefined) names.push(name.replace(/_[0-9a-f]+$/, ""));
      return client.query(text, values);
    });
    const s = postgresStore({ pool: recording, schema: freshSchema() });
    const rows = async (runId: string) => (await s.loadRun(runId))!.steps.map((t) => [t.seq, t.key, t.status, t.value]);
    // Each pair below is issued in one turn of the event loop: one batch, the step's statement.
    const both = (fence: { epoch: number; runId: string }, seq: number, outcome = succeededAt(seq - 1)) =>
      Promise.allSettled([s.writeOutcome(fence, outcome), s.writeIntent(fence, stepAt(fence.runId, seq))]);

    // Applied: both rows written by one statement.
    const a = await leaseOf(s, "a");
    await s.writeIntent(a, stepAt("a", 1));
    names.length = 0;
    expect((await both(a, 2)).map((r) => r.status)).toEqual(["fulfilled", "fulfilled"]);
    expect(names).toEqual(["steplog_step"]);
    expect(await rows("a")).toEqual([
      [1, "k1", "succeeded", `"v1"`],
      [2, "k2", "intended", null],
    ]);

    // The lease taken away: neither applies, both are told LEASE_LOST, and nothing changed.
    const b = await leaseOf(s, "b");
    await s.writeIntent(b, stepAt("b", 1));
    await s.updateRun("b", () => ({ fenceOut: { now: NOW }, result: true }));
    const stale = await both(b, 2);
    expect(stale.map((r) => isSteplogError((r as PromiseRejectedResult).reason, "LEASE_LOST"))).toEqual([true, true]);
    expect(await rows("b")).toEqual([[1, "k1", "intended", null]]);

    // The outcome finds its intent closed already: it fails alone; the intent is written (the usual way, after the statement changed nothing).
    names.length = 0;
    const closed = await both(a, 3, succeededAt(1, `"other"`));
    expect(closed.map((r) => r.status)).toEqual(["rejected", "fulfilled"]);
    expect(String((closed[0] as PromiseRejectedResult).reason)).toContain("has no open intent");
    expect(names[0]).toBe("steplog_step");
    expect(await rows("a")).toEqual([
      [1, "k1", "succeeded", `"v1"`],
      [2, "k2", "intended", null],
      [3, "k3", "intended", null],
    ]);

    // The next seq is taken by another intent: the statement fails whole; the usual way writes the outcome and refuses the intent alone.
    const c = await leaseOf(s, "c");
    await s.writeIntent(c, stepAt("c", 1));
    await s.writeIntent(c, { ...stepAt("c", 2), key: "taken", idempotencyKey: "c:taken" });
    const taken = await both(c, 2);
    expect(taken.map((r) => r.status)).toEqual(["fulfilled", "rejected"]);
    expect(String((taken[1] as PromiseRejectedResult).reason)).toContain("was written already by another intent");
    expect(await rows("c")).toEqual([
      [1, "k1", "succeeded", `"v1"`],
      [2, "taken", "intended", null],
    ]);
    await s.close();
    await recording.end();
  });

  it("batches that follow one another share one checked-out connection, given back to the pool once none follows", async () => {
    const schema = freshSchema();
    const real = new pg.Pool({ connectionString: URL_!, max: 3 });
    real.on("error", () => {});
    let checkouts = 0;
    const counting: PgPoolLike = {
      options: real.options,
      end: () => real.end(),
      async connect() {
        checkouts++;
        return real.connect();
      },
    };
    const flow = defineWorkflow({
      name: "held",
      async run(ctx, n: number) {
        let total = 0;
        for (let i = 0; i < n; i++) total += await ctx.step("s", async () => i);
        // A step that waits on I/O: the writes' connection goes back while it waits.
        await ctx.step("slow", () => new Promise((resolve) => setTimeout(resolve, 50)));
        return total;
      },
    });
    const engine = createEngine({ store: postgresStore({ pool: counting, schema }), workflows: [flow] });
    await engine.start(flow, 1, { id: "warm" });
    const before = checkouts;
    expect(await engine.start(flow, 30, { id: "r" })).toMatchObject({ status: "completed", value: 435 });
    // Without it: 31 intents and 31 outcomes in 32 batches, a checkout each, plus the start, claim and ending.
    expect(checkouts - before).toBeLessThan(12);
    // None kept: one turn of the event loop after the last write, every connection the pool made is idle again.
    await new Promise((resolve) => setImmediate(resolve));
    expect(real.totalCount).toBeGreaterThan(0);
    expect(real.idleCount).toBe(real.totalCount);
    expect((await engine.store.loadRun("r"))!.steps.map((s) => s.status)).toEqual(Array(31).fill("succeeded"));
    await engine.close();
    await real.end();
  });

  it("with a pool of one, a read waits for a turn of the writes, not for them to stop: the write queue gives its connection back to a waiting caller", async () => {
    const schema = freshSchema();
    const flow = defineWorkflow({
      name: "busy",
      async run(ctx, n: number) {
        for (let i = 0; i < n; i++) await ctx.step("s", async () => i);
        return n;
      },
    });
    const engine = createEngine({ store: store(schema, { poolSize: 1 }), workflows: [flow] });
    await engine.start(flow, 1, { id: "first" });
    let finished = 0;
    const runs = Array.from({ length: 4 }, (_, i) => engine.start(flow, 300, { id: `busy-${i}` }).then(() => finished++));
    // Once every run is writing steps, one batch after another on the pool's only connection.
    while ((await admin.query(`SELECT count(*)::int AS n FROM "${schema}".steps WHERE run_id LIKE 'busy-%'`)).rows[0].n < 40) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const read = await engine.get("first");
    expect(read.status).toBe("completed");
    expect(finished).toBe(0);
    await Promise.all(runs);
    await engine.close();
  });

  it("runs started together are created in one transaction; a taken id among them (or one id started twice) is that run, and only one attempt runs it", async () => {
    const schema = freshSchema();
    const transactions: string[] = [];
    const counting = interceptedPool(4, async (client, text, values) => {
      if (text.includes(".runs (id,") && text.endsWith("; COMMIT")) transactions.push(text);
      return client.query(text, values);
    });
    const calls: string[] = [];
    const flow = defineWorkflow({
      name: "together",
      run: (ctx, n: number) => ctx.step("s", async () => (calls.push(ctx.runId), n)),
    });
    const engine = createEngine({ store: postgresStore({ pool: counting, schema }), workflows: [flow] });
    expect(await engine.start(flow, 0, { id: "old" })).toMatchObject({ status: "completed", value: 0 });
    transactions.length = 0;
    calls.length = 0;
    const ids = ["old", "a", "b", "b", "c'q", "d"];
    const args: Record<string, number> = { old: 0, a: 1, b: 2, "c'q": 3, d: 4 };
    const results = await Promise.all(ids.map((id) => engine.start(flow, args[id]!, { id, ifExists: "attach" })));
    // One transaction held the first start of each id (the old one's id was found taken; it is
    // then read the usual way); the second start of b waited for the first, and found its run.
    const sizes = transactions.map((text) => text.split(".runs (id,").length - 1);
    expect(sizes.filter((n) => n > 1)).toEqual([5]);
    expect(results.map((r) => r.status)).toEqual(["completed", "completed", "completed", "completed", "completed", "completed"]);
    expect(results.map((r) => r.value)).toEqual([0, 1, 2, 2, 3, 4]);
    expect(calls.sort()).toEqual(["a", "b", "c'q", "d"]);
    for (const id of ["a", "b", "c'q", "d"]) expect((await engine.store.loadRun(id))!.attempts).toHaveLength(1);
    await engine.close();
    await counting.end();
  });

  it("runs started together whose transaction loses its COMMIT reply, or is refused by the server: each run is created once, as its own start (an id started twice too)", async () => {
    for (const fault of ["reply lost", "refused"] as const) {
      const schema = freshSchema();
      let struck = 0;
      const faulty = interceptedPool(4, async (client, text, values) => {
        if (text.includes(".runs (id,") && text.endsWith("; COMMIT") && struck++ === 0) {
          if (fault === "refused") return client.query(`SELECT 1 / 0`);
          await client.query(text, values);
          throw new Error("Connection terminated unexpectedly");
        }
        return client.query(text, values);
      });
      const calls: string[] = [];
      const flow = defineWorkflow({ name: "together", run: (ctx) => ctx.step("s", async () => (calls.push(ctx.runId), ctx.runId)) });
      const engine = createEngine({ store: postgresStore({ pool: faulty, schema }), workflows: [flow] });
      const ids = ["a", "b", "c"];
      // b is started twice: whatever happens to the batch, one attempt runs it and the other start finds it.
      const results = await Promise.all([...ids, "b"].map((id) => engine.start(flow, undefined, { id, ifExists: "attach" })));
      expect(struck, fault).toBeGreaterThanOrEqual(1);
      expect(
        results.map((r) => [r.status, r.value]),
        fault,
      ).toEqual([...ids, "b"].map((id) => ["completed", id]));
      expect(calls.sort(), fault).toEqual(ids);
      for (const id of ids) {
        const stored = (await engine.store.loadRun(id))!;
        expect(
          stored.attempts.map((a) => [a.number, a.ending]),
          fault,
        ).toEqual([[1, "completed"]]);
      }
      await engine.close();
      await faulty.end();
    }
  });

  it("runs at once share a named batch statement (rows as JSON): odd run ids, keys and values come back exactly as written", async () => {
    const schema = freshSchema();
    const names = new Set<string>();
    const counting = interceptedPool(2, async (client, text, values, name) => {
      if (name !== undefined) names.add(name);
      return client.query(text, values);
    });
    const odd = `q'uote "dq" back\\slash \\u0000-not-a-nul é 𝄞 \u2028 {"a":[1]}`;
    const flow = defineWorkflow({
      name: "together",
      async run(ctx, n: number) {
        const out: string[] = [];
        for (let i = 0; i < 4; i++) out.push(await ctx.step("s'\\é", async () => `${odd}:${n}:${i}`));
        return out;
      },
    });
    const engine = createEngine({ store: postgresStore({ pool: counting, schema }), workflows: [flow] });
    const ids = Array.from({ length: 6 }, (_, n) => `${odd} run ${n}`);
    const results = await Promise.all(ids.map((id, n) => engine.start(flow, n, { id })));
    for (const [n, result] of results.entries()) {
      expect(result).toMatchObject({ status: "completed", value: Array.from({ length: 4 }, (_, i) => `${odd}:${n}:${i}`) });
      const stored = (await engine.store.loadRun(ids[n]!))!;
      expect(stored.steps.map((s) => [s.runId, s.status, s.value])).toEqual(
        Array.from({ length: 4 }, (_, i) => [ids[n], "succeeded", JSON.stringify(`${odd}:${n}:${i}`)]),
      );
      expect(stored.steps.map((s) => s.idempotencyKey)).toEqual(Array.from({ length: 4 }, (_, i) => `${ids[n]}:s'\\é${i === 0 ? "" : `#${i + 1}`}`));
    }
    // Both shapes were used: the many-run batch and the one-run step.
    expect([...names].some((name) => name.startsWith("steplog_batch_"))).toBe(true);
    await engine.close();
    await counting.end();
  });

  it("a named batch the server refuses goes again a statement at a time, and commits: nothing lost or written twice", async () => {
    const schema = freshSchema();
    let refused = 0;
    const refusing = interceptedPool(2, async (client, text, values, name) => {
      // The server refuses the third named batch (as it would a failed statement: nothing of it is recorded).
      if (name !== undefined && ++refused === 3) return client.query(`SELECT 1 / 0`);
      return client.query(text, values);
    });
    const calls: string[] = [];
    const flow = defineWorkflow({
      name: "refused",
      async run(ctx) {
        for (const key of ["a", "b", "c", "d"]) await ctx.step(key, async () => calls.push(key));
        return "done";
      },
    });
    const engine = createEngine({ store: postgresStore({ pool: refusing, schema }), workflows: [flow] });
    expect(await engine.start(flow, undefined, { id: "r" })).toMatchObject({ status: "completed", value: "done" });
    expect(refused).toBeGreaterThanOrEqual(3);
    expect(calls).toEqual(["a", "b", "c", "d"]);
    expect((await engine.store.loadRun("r"))!.steps.map((s) => [s.seq, s.key, s.status])).toEqual([
      [1, "a", "succeeded"],
      [2, "b", "succeeded"],
      [3, "c", "succeeded"],
      [4, "d", "succeeded"],
    ]);
    await engine.close();
    await refusing.end();
  });

  it("a connection that dies as the pool hands it out (before the store's code runs) does not crash the process, on a pool the store was given too", async () => {
    const schema = freshSchema();
    const given = new pg.Pool({ connectionString: URL_!, max: 2 });
    given.on("error", () => {});
    let emitted = 0;
    // The server's "terminating connection" arriving in the same read as "ready for query": pg
    // emits 'error' after pg-pool dropped its idle listener and before the caller resumes.
    given.on("acquire", (client) => {
      if (emitted++ < 3)
        process.nextTick(() => client.emit("error", Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" })));
    });
    const flow = defineWorkflow({ name: "survives", run: (ctx) => ctx.step("a", async () => "ok") });
    const engine = createEngine({ store: postgresStore({ pool: given, schema }), workflows: [flow] });
    expect(await engine.start(flow, undefined, { id: "r" })).toMatchObject({ status: "completed", value: "ok" });
    expect(emitted).toBeGreaterThanOrEqual(3);
    await engine.close();
    await given.end();
  });

  it("with backslash_quote off, run ids, step names and values holding quotes are written", async () => {
    const schema = freshSchema();
    const strict = new pg.Pool({ connectionString: URL_!, max: 2, options: "-c backslash_quote=off" });
    strict.on("error", () => {});
    expect((await strict.query("SHOW backslash_quote")).rows[0]).toEqual({ backslash_quote: "off" });
    const flow = defineWorkflow({
      name: "quotes",
      async run(ctx) {
        const a = await ctx.step("o'brien", async () => "it's \\ fine");
        return ctx.step("b", async () => `${a} '' again`);
      },
    });
    const engine = createEngine({ store: postgresStore({ pool: strict, schema }), workflows: [flow] });
    const runs = await Promise.all(["order-o'brien", "innocent"].map((id) => engine.start(flow, undefined, { id })));
    expect(runs.map((r) => [r.id, r.status, r.value])).toEqual([
      ["order-o'brien", "completed", "it's \\ fine '' again"],
      ["innocent", "completed", "it's \\ fine '' again"],
    ]);
    const stored = (await engine.store.loadRun("order-o'brien"))!;
    expect(stored.steps.map((t) => [t.key, t.idempotencyKey, t.status])).toEqual([
      ["o'brien", "order-o'brien:o'brien", "succeeded"],
      ["b", "order-o'brien:b", "succeeded"],
    ]);
    await engine.close();
    await strict.end();
  });

  it("a claim whose connection dies after it decided is decided again without counting its own first try as a holder", async () => {
    const schema = freshSchema();
    const setup = store(schema);
    // Left by an attempt of this very process that no longer runs (its ending was never recorded).
    const now = Date.now();
    await setup.createRun(
      runRow("r", { workflow: "flow", version: null, args: '{"$type":"undefined"}' }),
      attemptRow("r", 1, { ...currentOwner(), startedAt: now }),
      {
        expiresAt: now + 3_600_000,
        now,
      },
    );
    await setup.close();
    let cut = 0;
    // The claim's first try loses its connection after deciding, before COMMIT.
    const cutting = interceptedPool(2, async (client, text, values) => {
      if (cut === 0 && text.includes(".attempts (run_id, number,")) {
        cut++;
        throw Object.assign(new Error("Connection terminated unexpectedly"), { code: "ECONNRESET" });
      }
      return client.query(text, values);
    });
    const flow = defineWorkflow({ name: "flow", run: (ctx) => ctx.step("a", async () => "ok") });
    const engine = createEngine({ store: postgresStore({ pool: cutting, schema }), workflows: [flow] });
    expect(await engine.continue("r")).toMatchObject({ status: "completed", attempt: 2 });
    expect(cut).toBe(1);
    await engine.close();
    await cutting.end();
  });

  it("the server's idle-in-transaction limit follows the engine's lease (a third of it, under the 5 s default; the shortest of two engines'); a longer idleInTransactionTimeoutMs is refused by createEngine, naming both", async () => {
    const echo = defineWorkflow({ name: "echo", run: async (ctx, text: string) => ctx.step("say", async () => text) });
    /** The idle_in_transaction_session_timeout each transaction of a run set, with `leases` the engines made on one store. */
    const limitsWith = async (leases: Array<number | undefined>, options: Parameters<typeof postgresStore>[0] = {}) => {
      const limits = new Set<number>();
      const pool = interceptedPool(2, (client, text, values, name) => {
        const set = /idle_in_transaction_session_timeout = (\d+)/.exec(text);
        if (set) limits.add(Number(set[1]));
        return name ? client.query({ name, text, values: values ?? [] }) : client.query(text, values);
      });
      const shared = postgresStore({ pool, schema: freshSchema(), ...options });
      const engines = leases.map((leaseMs) => createEngine({ store: shared, workflows: [echo], ...(leaseMs === undefined ? {} : { leaseMs }) }));
      expect(await engines.at(-1)!.start(echo, "hi", { id: "r" })).toMatchObject({ status: "completed", value: "hi" });
      // A claim: a transaction of several statements (the start above may be one round trip).
      expect(await engines.at(-1)!.continue("r", { fromStep: "say" })).toMatchObject({ status: "completed", value: "hi" });
      for (const engine of engines) await engine.close();
      await pool.end();
      return [...limits];
    };
    expect(await limitsWith([undefined])).toEqual([5000]);
    expect(await limitsWith([3000])).toEqual([1000]);
    expect(await limitsWith([30_000, 600])).toEqual([200]);
    expect(await limitsWith([6000], { idleInTransactionTimeoutMs: 2000 })).toEqual([2000]);

    const refused = (() => {
      try {
        createEngine({ store: store(freshSchema(), { idleInTransactionTimeoutMs: 2000 }), workflows: [echo], leaseMs: 3000 });
      } catch (error) {
        return error;
      }
    })();
    expect(isSteplogError(refused, "INVALID_OPTION"), String(refused)).toBe(true);
    expect((refused as Error).message).toContain("idleInTransactionTimeoutMs 2000 is longer than a lease of 3000 ms (createEngine's leaseMs) allows");
    expect((refused as Error).message).toContain("Set idleInTransactionTimeoutMs to at most 1000 (a third of leaseMs), or leaseMs to at least 6000.");
  });

  it("a client-side query_timeout while a transaction waits for a lock is a lost connection, not a refusal: what the server then commits is recognised, never reported failed", async () => {
    const schema = freshSchema();
    const timing = new pg.Pool({ connectionString: URL_!, max: 2, query_timeout: 300 });
    timing.on("error", () => {});
    const locker = new pg.Client({ connectionString: URL_! });
    await locker.connect();
    const flow = defineWorkflow({
      name: "timed",
      async run(ctx) {
        await ctx.step("charge", { effect: "irreversible" }, async () => "charged");
        // Another transaction holds the run's lease row past the pool's query_timeout as the attempt ends.
        await locker.query(`BEGIN; SELECT 1 FROM "${schema}".leases WHERE run_id = 'r' FOR UPDATE`);
        setTimeout(() => void locker.query("COMMIT"), 800);
        return "ok";
      },
    });
    const engine = createEngine({ store: postgresStore({ pool: timing, schema }), workflows: [flow] });
    const result = await engine.start(flow, undefined, { id: "r" });
    const stored = (await engine.store.loadRun("r"))!;
    expect([result.status, result.runStatus]).toEqual([stored.run.status, stored.run.status]);
    expect(result).toMatchObject({ status: "completed", value: "ok" });
    expect(stored.attempts.map((a) => a.ending)).toEqual(["completed"]);
    await engine.close();
    await timing.end();
    await locker.end();
  });

  it("the steplog command reaches a store in a schema of its own with --schema (or STEPLOG_PG_SCHEMA)", async () => {
    const schema = freshSchema();
    const flow = defineWorkflow({ name: "cli-schema", run: (ctx) => ctx.step("a", async () => "ok") });
    const engine = createEngine({ store: store(schema), workflows: [flow] });
    await engine.start(flow, undefined, { id: "in-schema" });
    await engine.close();
    const bin = fileURLToPath(new URL("../../dist/cli.js", import.meta.url));
    const steplog = (args: string[], env: Record<string, string> = {}) =>
      spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", env: { ...process.env, NO_COLOR: "1", ...env } });
    const shown = steplog(["show", "in-schema", "--store", URL_!, "--schema", schema, "--json"]);
    expect(shown.status, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: "in-schema", status: "completed" });
    expect(steplog(["show", "in-schema", "--store", URL_!, "--json"], { STEPLOG_PG_SCHEMA: schema }).status).toBe(0);
    const elsewhere = steplog(["show", "in-schema", "--store", URL_!]);
    expect(elsewhere.stdout + elsewhere.stderr).toContain("RUN_NOT_FOUND");
    const misplaced = steplog(["runs", "--schema", schema]);
    expect(misplaced.status).toBe(2);
  });

  it("schema 8 drops the open-steps index no query reads (it kept every outcome from being a HOT update): fresh, and from schema 7", async () => {
    const schema = freshSchema();
    const indexes = async () =>
      (await admin.query(`select indexname from pg_indexes where schemaname = $1 and tablename = 'steps' order by indexname`, [schema])).rows.map(
        (r: { indexname: string }) => r.indexname,
      );
    const fresh = store(schema);
    await fresh.migrate();
    await fresh.close();
    expect(await indexes()).toEqual(["steps_pkey"]);
    // As schema 7 left it: the index, and version 7.
    await admin.query(`CREATE INDEX steps_open ON "${schema}".steps (status) WHERE status IN ('intended', 'escalated')`);
    // (and without the budget columns of schema 9)
    await admin.query(`ALTER TABLE "${schema}".runs DROP COLUMN cost_budget, DROP COLUMN spent_usd, DROP COLUMN spent_tokens`);
    // (and without the stream_records table of schema 10)
    await admin.query(`DROP TABLE "${schema}".stream_records`);
    await admin.query(`update "${schema}".meta set value = '7' where key = 'schema_version'`);
    const upgraded = store(schema);
    await upgraded.migrate();
    await upgraded.close();
    expect(await indexes()).toEqual(["steps_pkey"]);
    expect((await admin.query(`select value from "${schema}".meta`)).rows).toEqual([{ value: String(SCHEMA_VERSION) }]);
  });

  it("schema 10 adds stream_records (streams), upgrading a schema 9 in place: a run's stream is written and read there", async () => {
    const schema = freshSchema();
    const fresh = store(schema);
    await fresh.migrate();
    await fresh.close();
    // As schema 9 left it.
    await admin.query(`DROP TABLE "${schema}".stream_records`);
    await admin.query(`update "${schema}".meta set value = '9' where key = 'schema_version'`);
    const upgraded = store(schema);
    const lease = (await upgraded.createRun(runRow("x"), attemptRow("x", 1), { expiresAt: NOW + 30_000, now: NOW })) as Lease;
    const record = { runId: "x", stream: "out", seq: 0, kind: "chunk" as const, offset: 0, chunk: '"hi"', step: null, attempt: 1, at: NOW };
    await upgraded.appendStream!(lease, [record]);
    expect(await upgraded.readStream!("x", "out", -1, 10)).toEqual([record]);
    await upgraded.close();
    expect((await admin.query(`select value from "${schema}".meta`)).rows).toEqual([{ value: String(SCHEMA_VERSION) }]);
  });

  it("concurrent first opens on many connections migrate once; a newer schema is refused with STORE_TOO_NEW and left untouched", async () => {
    const schema = freshSchema();
    const stores = Array.from({ length: 6 }, () => store(schema, { poolSize: 2 }));
    await Promise.all(stores.map((s) => s.migrate()));
    await Promise.all(stores.map((s) => s.close()));
    expect((await admin.query(`select value from "${schema}".meta`)).rows).toEqual([{ value: String(SCHEMA_VERSION) }]);
    await admin.query(`update "${schema}".meta set value = '99' where key = 'schema_version'`);
    const newer = store(schema);
    await expect(newer.loadRun("x")).rejects.toSatisfy((e) => isSteplogError(e, "STORE_TOO_NEW"));
    await expect(newer.createRun(runRow("x"), attemptRow("x", 1), { expiresAt: NOW, now: NOW })).rejects.toSatisfy((e) => isSteplogError(e, "STORE_TOO_NEW"));
    await newer.close();
    expect((await admin.query(`select value from "${schema}".meta`)).rows).toEqual([{ value: "99" }]);
  });

  it("a due listing comes oldest wake time first; an attempt's reused steps are absent until its ending records them", async () => {
    const s = store(freshSchema());
    for (const [id, wakeAt] of [
      ["a", NOW + 30],
      ["b", NOW + 10],
      ["c", NOW + 20],
      ["d", NOW + 999],
    ] as const) {
      await s.createRun(runRow(id, { status: "waiting", wakeAt, createdAt: NOW + wakeAt }), attemptRow(id, 1), { expiresAt: NOW, now: NOW });
    }
    expect((await s.listRuns({ status: ["waiting"], dueBy: NOW + 100 })).map((l) => l.run.id)).toEqual(["b", "c", "a"]);
    expect((await s.listRuns({ status: ["waiting"], dueBy: NOW + 100, limit: 2 })).map((l) => l.run.id)).toEqual(["b", "c"]);
    expect("reused" in (await s.loadRun("a"))!.attempts[0]!).toBe(false);
    await s.endAttempt(
      { runId: "a", epoch: 1 },
      { attempt: 1, ending: "completed", endedAt: NOW, error: null, run: { status: "completed" }, reused: ["x", "y#2"] },
    );
    expect((await s.loadRun("a"))!.attempts[0]!.reused).toEqual(["x", "y#2"]);
    expect((await s.listRuns({ workflow: "conformance" })).find((l) => l.run.id === "a")!.lastAttempt!.reused).toEqual(["x", "y#2"]);
    await s.close();
  });

  it("reads on a schema that does not exist find nothing and create nothing", async () => {
    const schema = freshSchema();
    const s = store(schema);
    expect(await s.loadRun("x")).toBeUndefined();
    expect(await s.listRuns({})).toEqual([]);
    await s.close();
    expect((await admin.query("select 1 from pg_namespace where nspname = $1", [schema])).rows).toEqual([]);
  });

  it("a server that cannot be reached: STORE_UNREADABLE / STORE_WRITE_FAILED, and the password is in no message", async () => {
    const url = new URL(URL_!);
    url.password = "s3cret-Pa55";
    url.port = "1"; // nothing listens there
    const s = postgresStore({ connectionString: url.toString(), schema: "steplog", retryForMs: 200 });
    expect(s.location).toBe(`postgres store (schema steplog) at ${url.hostname}:1/${url.pathname.slice(1)}`);
    const read = await s.loadRun("x").catch((e) => e);
    expect(isSteplogError(read, "STORE_UNREADABLE")).toBe(true);
    expect(read.message).toMatch(/could not reach the server/);
    expect(read.message).toContain("Nothing was written. Check that the server is up");
    const write = await s.createRun(runRow("x"), attemptRow("x", 1), { expiresAt: NOW, now: NOW }).catch((e) => e);
    expect(isSteplogError(write, "STORE_WRITE_FAILED")).toBe(true);
    expect(write.message).toContain("Nothing was changed"); // no COMMIT was ever sent
    for (const error of [read, write]) {
      const everything = JSON.stringify({ message: error.message, cause: String(error.cause?.message), stack: error.stack });
      expect(everything).not.toContain("s3cret-Pa55");
    }
    await s.close();
  });

  it("connection settings that cannot work (no such database, no such host): a start says to check them, not to restore a backup", async () => {
    const noDb = new URL(URL_!);
    noDb.pathname = "/steplog_no_such_database";
    const noHost = new URL(URL_!);
    noHost.hostname = "steplog-no-such-host.invalid";
    const echo = defineWorkflow({ name: "echo", run: async (_ctx, text: string) => text });
    for (const url of [noDb, noHost]) {
      const engine = createEngine({ store: postgresStore({ connectionString: url.toString(), retryForMs: 200 }), workflows: [echo] });
      const error = await engine.start(echo, "hi").catch((e: unknown) => e);
      expect(isSteplogError(error, "STORE_UNREADABLE"), `${url.host}${url.pathname}: ${String(error)}`).toBe(true);
      expect((error as Error).message).toContain("Nothing was written. Check that the server is up and the connection settings are right");
      expect((error as Error).message).not.toContain("backup");
      await engine.close();
    }
  });

  it("without pg installed, the store says to install it (and steplog itself loads)", () => {
    const dist = fileURLToPath(new URL("../../dist/", import.meta.url));
    const hook = `export async function resolve(s, c, next) { if (s === "pg") { const e = new Error("Cannot find package 'pg'"); e.code = "ERR_MODULE_NOT_FOUND"; throw e; } return next(s, c); }`;
    const script = `
      import { register } from "node:module";
      register("data:text/javascript,${encodeURIComponent(hook)}");
      const { createEngine } = await import(${JSON.stringify(dist + "index.js")});
      const { postgresStore } = await import(${JSON.stringify(dist + "postgres.js")});
      const store = postgresStore({ connectionString: "postgres://u@127.0.0.1:1/db" });
      const engine = createEngine({ store });
      try { await engine.get("x"); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
    const out = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
    const report = JSON.parse(out.stdout.trim().split("\n").at(-1) ?? "{}");
    expect(report.code, out.stderr).toBe("STORE_DRIVER_FAILED");
    expect(report.message).toContain("npm install pg");
  });
});

/** A new run of this id in the store, and the lease its first attempt holds. */
async function leaseOf(s: ReturnType<typeof postgresStore>, runId: string) {
  return (await s.createRun(runRow(runId), attemptRow(runId, 1), { expiresAt: NOW + 60_000, now: NOW })) as { epoch: number; runId: string };
}

/** The intent of step `seq` of a run, keyed `k<seq>`. */
function stepAt(runId: string, seq: number) {
  return { ...stepRowFor(runId), runId, seq, key: `k${seq}`, idempotencyKey: `${runId}:k${seq}` };
}

/** Step `seq`'s outcome: succeeded with `value`. */
function succeededAt(seq: number, value = `"v${seq}"`) {
  return { seq, status: "succeeded" as const, value, error: null, endedAt: NOW + 1, calls: 1, resolution: null, usage: null };
}

function stepRowFor(runId: string) {
  return {
    runId,
    seq: 1,
    attempt: 1,
    key: "s",
    name: "s",
    status: "intended" as const,
    effect: "idempotent" as const,
    idempotencyKey: `${runId}:s`,
    value: null,
    error: null,
    version: null,
    intendedAt: NOW,
    endedAt: null,
    calls: 0,
    resolution: null,
    usage: null,
    position: 0,
  };
}
