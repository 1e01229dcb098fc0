/**
 * The store conformance suite: every guarantee the engine relies on from a Store, as tests any
 * adapter can run. Memory, SQLite, JSONL and Postgres all run it; so can yours:
 *
 *   import { describe, it } from "vitest";            // or node:test, jest, mocha
 *   import { describeStore } from "steplog/testing";
 *   describeStore("my store", { create: () => myStore(freshDb()), reopen: (s) => myStore(s.location) }, { describe, it });
 *
 * Assertions use node:assert, so the suite needs only `describe` and `it` from your runner.
 */

import assert from "node:assert/strict";
import { isSteplogError, RunBusyError } from "../base/errors.js";
import type { AttemptRow, EventRow, Lease, RunRow, StepRow, Store, StoredRun } from "../store/types.js";

export interface StoreConformanceOptions {
  /** A fresh, empty store. */
  create: () => Store | Promise<Store>;
  /** Another instance on the same data, after `closed` was closed: for the durability tests. */
  reopen?: (closed: Store) => Store | Promise<Store>;
  /** A second handle on the same live data (another connection or process-like handle). Default: the same instance. */
  another?: (store: Store) => Store | Promise<Store>;
  /** Damage the store's data so it cannot be read; returns a new instance on it. */
  corrupt?: (closed: Store) => Store | Promise<Store>;
  /**
   * Tests of this suite your store cannot pass yet, by their exact name, each with the reason:
   * they are reported as skipped (with the reason), never as passed. A name that matches no test
   * is an error, so a renamed test cannot quietly stop being skipped. Needs `it.skip`.
   */
  skip?: Record<string, string>;
  /** Tests of your store's own, run inside the suite's describe block (see AdditionalTests). */
  additionalTests?: (tests: AdditionalTests) => void;
}

/** What `additionalTests` is given: the runner's `it`, a fresh store per test, and the suite's row builders. */
export interface AdditionalTests {
  it: TestFunctions["it"];
  /** Wraps a test body: it gets a fresh store from `create`, closed afterwards. */
  withStore: (body: (store: Store) => Promise<void>) => () => Promise<void>;
  runRow: typeof runRow;
  attemptRow: typeof attemptRow;
  stepRow: typeof stepRow;
  /** The time every row of the suite is written at. */
  now: number;
}

type TestBody = () => Promise<void> | void;

export interface TestFunctions {
  describe: (name: string, body: () => void) => unknown;
  it: ((name: string, body: TestBody, timeout?: number) => unknown) & { skip?: (name: string, body: TestBody) => unknown };
}

const NOW = Date.UTC(2030, 0, 1);

export function runRow(id: string, patch: Partial<RunRow> = {}): RunRow {
  return {
    id,
    workflow: "conformance",
    version: "1.0.0",
    args: '{"n":1}',
    status: "running",
    attempts: 1,
    budgetUsed: 1,
    source: null,
    deadline: null,
    value: null,
    error: null,
    waitingFor: null,
    wakeAt: null,
    createdAt: NOW,
    updatedAt: NOW,
    ...patch,
  };
}

export function attemptRow(runId: string, number: number, patch: Partial<AttemptRow> = {}): AttemptRow {
  return {
    runId,
    number,
    host: "conformance-host",
    bootId: "boot",
    pid: 4242,
    processStart: 7,
    startedAt: NOW,
    endedAt: null,
    ending: null,
    fromStep: null,
    forced: false,
    error: null,
    ...patch,
  };
}

export function stepRow(runId: string, seq: number, key: string, patch: Partial<StepRow> = {}): StepRow {
  return {
    runId,
    seq,
    attempt: 1,
    key,
    name: key.replace(/#\d+$/, ""),
    status: "intended",
    effect: "idempotent",
    idempotencyKey: `${runId}:${key}`,
    value: null,
    error: null,
    version: "1.0.0",
    intendedAt: NOW + seq,
    endedAt: null,
    calls: 0,
    resolution: null,
    usage: null,
    position: seq - 1,
    ...patch,
  };
}

async function created(store: Store, id: string, patch: Partial<RunRow> = {}): Promise<Lease> {
  const lease = await store.createRun(runRow(id, patch), attemptRow(id, 1), { expiresAt: NOW + 30_000, now: NOW });
  assert.ok(!("exists" in lease), `createRun(${id}) found an existing run`);
  return lease as Lease;
}

/** A claim that takes the lease only when nobody holds it (as the engine's RUN_BUSY rule would). */
/**
 * A stored run as compared in these tests: a lease's `ageMs` (how long ago it was written, by a
 * clock a store's claimers share) changes from one read to the next; it is checked to be a
 * non-negative number where a store gives it, then left out.
 */
function comparable<T extends StoredRun | undefined>(state: T): T {
  if (!state?.lease || !("ageMs" in state.lease)) return state;
  const { ageMs, ...lease } = state.lease;
  assert.ok(typeof ageMs === "number" && ageMs >= 0, `lease.ageMs must be a number of ms ≥ 0, got ${String(ageMs)}`);
  return { ...state, lease };
}

function takeIfFree(runId: string) {
  return (current: StoredRun) => {
    if (current.lease && current.lease.attempt !== null) {
      return { kind: "refuse" as const, error: new RunBusyError(runId, { attempt: current.lease.attempt, host: "h", pid: 1, expiresAt: current.lease.expiresAt }) };
    }
    const number = current.run.attempts + 1;
    return { kind: "take" as const, attempt: attemptRow(runId, number), run: { attempts: number, status: "running" as const }, expiresAt: NOW + 60_000, now: NOW };
  };
}

async function refusedWithLeaseLost(write: Promise<unknown>, what: string): Promise<void> {
  await assert.rejects(write, (error: unknown) => isSteplogError(error, "LEASE_LOST"), `${what} with a stale fence must be refused with LEASE_LOST`);
}

function resolveTestFunctions(given?: TestFunctions): TestFunctions {
  if (given) return given;
  const g = globalThis as unknown as Partial<TestFunctions>;
  if (typeof g.describe === "function" && typeof g.it === "function") return { describe: g.describe, it: g.it };
  throw new Error("describeStore: pass { describe, it } from your test runner (for example `import { describe, it } from \"vitest\"`).");
}

export function describeStore(name: string, options: StoreConformanceOptions, testFunctions?: TestFunctions): void {
  const runner = resolveTestFunctions(testFunctions);
  const { describe } = runner;
  const skips = new Map(Object.entries(options.skip ?? {}));
  const skipped = (title: string, why: string) => {
    if (!runner.it.skip) throw new Error(`describeStore(${JSON.stringify(name)}): skipping ${JSON.stringify(title)} needs it.skip from your test runner.`);
    runner.it.skip(`${title} (skipped: ${why})`, () => {});
  };
  /** `it`, except a test named in `skip` is reported skipped. */
  const it = (title: string, body: TestBody, timeout?: number) => {
    const why = skips.get(title);
    if (why === undefined) return runner.it(title, body, timeout);
    skips.delete(title);
    return skipped(title, why);
  };
  const withStore = (body: (store: Store) => Promise<void>) => async () => {
    const store = await options.create();
    try {
      await body(store);
    } finally {
      await store.close();
    }
  };

  describe(`store conformance: ${name}`, () => {
    it("a missing run is reported as missing, and nothing is created", withStore(async (store) => {
      assert.equal(await store.loadRun("nope"), undefined);
      assert.deepEqual(await store.claimRun("nope", takeIfFree("nope")), { kind: "missing" });
      assert.equal(await store.updateRun("nope", () => ({ result: 1 })), undefined);
      assert.deepEqual(await store.listRuns({}), []);
    }));

    it("createRun writes the run, its first attempt and a lease at epoch 1; a taken id writes nothing", withStore(async (store) => {
      const lease = await created(store, "r1");
      assert.deepEqual(lease, { runId: "r1", epoch: 1, attempt: 1, expiresAt: NOW + 30_000 });
      const again = await store.createRun(runRow("r1", { args: '"other"' }), attemptRow("r1", 1), { expiresAt: 0, now: NOW });
      assert.ok("exists" in again && again.exists.args === '{"n":1}');
      const stored = (await store.loadRun("r1"))!;
      assert.deepEqual(stored.run, runRow("r1"));
      assert.deepEqual(stored.attempts, [attemptRow("r1", 1)]);
      assert.deepEqual(comparable(stored).lease, { runId: "r1", epoch: 1, attempt: 1, expiresAt: NOW + 30_000, heartbeatAt: NOW });
      assert.deepEqual(stored.steps, []);
      assert.deepEqual(stored.events, []);
    }));

    it("steps come back in order and values round-trip exactly", withStore(async (store) => {
      const lease = await created(store, "r");
      const values = ['"plain"', JSON.stringify("quotes \" ' ; DROP TABLE steps; -- \n\t\u0000 \u202e 🙂"), JSON.stringify("x".repeat(200_000)), '{"$type":"BigInt","value":"12"}'];
      for (let i = 0; i < values.length; i++) await store.writeIntent(lease, stepRow("r", i + 1, i === 0 ? "a" : `a#${i + 1}`));
      for (let i = values.length - 1; i >= 0; i--) {
        await store.writeOutcome(lease, { seq: i + 1, status: "succeeded", value: values[i]!, error: null, endedAt: NOW + 100 + i, calls: 1, resolution: '{"policy":"redrive"}', usage: null });
      }
      const steps = (await store.loadRun("r"))!.steps;
      assert.deepEqual(steps.map((s) => s.seq), [1, 2, 3, 4]);
      assert.deepEqual(steps.map((s) => s.value), values);
      assert.deepEqual(steps[0], stepRow("r", 1, "a", { status: "succeeded", value: values[0]!, endedAt: NOW + 100, calls: 1, resolution: '{"policy":"redrive"}' }));
    }));

    it("an outcome needs an open intent", withStore(async (store) => {
      const lease = await created(store, "r");
      await store.writeIntent(lease, stepRow("r", 1, "a"));
      const outcome = { seq: 1, status: "succeeded" as const, value: "1", error: null, endedAt: NOW, calls: 1, resolution: null, usage: null };
      await store.writeOutcome(lease, outcome);
      await assert.rejects(store.writeOutcome(lease, outcome));
      await assert.rejects(store.writeOutcome(lease, { ...outcome, seq: 9 }));
    }));

    it("claimRun applies decide's verdict in one step: take (new attempt, epoch + 1) or refuse (patch kept, error thrown)", withStore(async (store) => {
      const first = await created(store, "r");
      await store.endAttempt(first, { attempt: 1, ending: "failed", endedAt: NOW + 1, error: '{"name":"Error","message":"x"}', run: { status: "failed" } });
      const taken = await store.claimRun("r", takeIfFree("r"));
      assert.equal(taken.kind, "taken");
      if (taken.kind !== "taken") return;
      assert.deepEqual(taken.lease, { runId: "r", epoch: 2, attempt: 2, expiresAt: NOW + 60_000 });
      assert.equal(taken.state.run.attempts, 2);
      assert.deepEqual(taken.state.attempts.map((a) => [a.number, a.ending]), [[1, "failed"], [2, null]]);
      await assert.rejects(
        store.claimRun("r", () => ({ kind: "refuse", error: new Error("no"), run: { status: "dead-lettered" } })),
        /no/,
      );
      assert.equal((await store.loadRun("r"))!.run.status, "dead-lettered");
      assert.equal((await store.loadRun("r"))!.lease!.epoch, 2);
    }));

    it("an attempt's consent (redo / reuse) is kept as given, and absent where none was given", withStore(async (store) => {
      const first = await created(store, "r");
      await store.endAttempt(first, { attempt: 1, ending: "stopped", endedAt: NOW + 1, error: null, run: { status: "stopped" } });
      const consent = { redo: ["charge", "mail#2"], reuse: ["ship"] };
      const taken = await store.claimRun("r", (current) => {
        const decision = takeIfFree("r")(current);
        return decision.kind === "take" ? { ...decision, attempt: { ...decision.attempt, consent } } : decision;
      });
      assert.equal(taken.kind, "taken");
      const attempts = (await store.loadRun("r"))!.attempts;
      assert.deepEqual(attempts[1]!.consent, consent);
      assert.equal("consent" in attempts[0]!, false, "an attempt with no consent has no consent field");
    }));

    it("fencing: every attempt write with a superseded epoch is refused (LEASE_LOST) and writes nothing", withStore(async (store) => {
      const stale = await created(store, "r");
      await store.writeIntent(stale, stepRow("r", 1, "a"));
      await store.updateRun("r", () => ({ fenceOut: { now: NOW }, result: true }));
      const before = comparable(await store.loadRun("r"));
      await refusedWithLeaseLost(store.writeIntent(stale, stepRow("r", 2, "b")), "writeIntent");
      await refusedWithLeaseLost(store.writeOutcome(stale, { seq: 1, status: "succeeded", value: "1", error: null, endedAt: NOW, calls: 1, resolution: null, usage: null }), "writeOutcome");
      await refusedWithLeaseLost(store.renewLease(stale, NOW + 99_999, NOW), "renewLease");
      await refusedWithLeaseLost(store.endAttempt(stale, { attempt: 1, ending: "completed", endedAt: NOW, error: null, run: { status: "completed" } }), "endAttempt");
      assert.deepEqual(comparable(await store.loadRun("r")), before);
      assert.equal(before!.lease!.epoch, 2);
    }));

    it("writes issued together: a stale fence and a write after its own attempt's ending are refused alone; the rest commit", withStore(async (store) => {
      const live = await created(store, "live");
      const stale = await created(store, "stale");
      await store.updateRun("stale", () => ({ fenceOut: { now: NOW }, result: true }));
      const ending = await created(store, "ending");
      // Issued in one go, so a store that commits writes in groups holds them in one transaction.
      const results = await Promise.allSettled([
        store.writeIntent(live, stepRow("live", 1, "a")),
        store.writeIntent(stale, stepRow("stale", 1, "a")),
        store.writeIntent(ending, stepRow("ending", 1, "a")),
        store.endAttempt(ending, { attempt: 1, ending: "completed", endedAt: NOW, error: null, run: { status: "completed" } }),
        store.writeIntent(ending, stepRow("ending", 2, "b")),
        store.writeIntent(live, stepRow("live", 2, "b")),
      ]);
      assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled", "fulfilled", "rejected", "fulfilled"]);
      for (const i of [1, 4]) assert.ok(isSteplogError((results[i] as PromiseRejectedResult).reason, "LEASE_LOST"), `write ${i} must be refused with LEASE_LOST`);
      assert.deepEqual((await store.loadRun("live"))!.steps.map((s) => s.key), ["a", "b"]);
      assert.deepEqual((await store.loadRun("stale"))!.steps, []);
      assert.deepEqual((await store.loadRun("ending"))!.steps.map((s) => s.key), ["a"]);
      assert.equal((await store.loadRun("ending"))!.run.status, "completed");
    }));

    it("writes issued together by two attempts of one run: the superseded one's are refused, before or after the live one's", withStore(async (store) => {
      const old = await created(store, "r");
      await store.updateRun("r", () => ({ fenceOut: { now: NOW }, result: true }));
      const claim = await store.claimRun("r", takeIfFree("r"));
      assert.equal(claim.kind, "taken");
      const live = (claim as { lease: Lease }).lease;
      const results = await Promise.allSettled([
        store.writeIntent(old, stepRow("r", 1, "stale-first")),
        store.writeIntent(live, stepRow("r", 1, "a")),
        store.writeIntent(old, stepRow("r", 2, "stale-after")),
        store.renewLease(old, NOW + 99_999, NOW),
        store.writeOutcome(old, { seq: 1, status: "failed", value: null, error: '"stale"', endedAt: NOW, calls: 1, resolution: null, usage: null }),
        store.writeOutcome(live, { seq: 1, status: "succeeded", value: "1", error: null, endedAt: NOW, calls: 1, resolution: null, usage: null }),
        store.endAttempt(live, { attempt: live.attempt, ending: "completed", endedAt: NOW, error: null, run: { status: "completed" } }),
        store.renewLease(live, NOW + 99_999, NOW),
        store.writeIntent(live, stepRow("r", 2, "after-the-end")),
      ]);
      assert.deepEqual(results.map((r) => r.status), ["rejected", "fulfilled", "rejected", "rejected", "rejected", "fulfilled", "fulfilled", "rejected", "rejected"]);
      for (const [i, r] of results.entries()) {
        if (r.status === "rejected") assert.ok(isSteplogError(r.reason, "LEASE_LOST"), `write ${i} must be refused with LEASE_LOST, got ${String(r.reason)}`);
      }
      const stored = (await store.loadRun("r"))!;
      assert.deepEqual(stored.steps.map((s) => [s.key, s.status]), [["a", "succeeded"]]);
      assert.equal(stored.run.status, "completed");
      assert.equal(stored.lease!.attempt, null);
    }));

    it("endAttempt records the ending, patches the run and releases the lease (its epoch kept); later writes on it are refused", withStore(async (store) => {
      const lease = await created(store, "r");
      await store.renewLease(lease, NOW + 90_000, NOW + 5);
      assert.equal((await store.loadRun("r"))!.lease!.expiresAt, NOW + 90_000);
      await store.endAttempt(lease, { attempt: 1, ending: "completed", endedAt: NOW + 9, error: null, run: { status: "completed", value: '"done"', updatedAt: NOW + 9 }, reused: ["a", "b#2"] });
      const stored = (await store.loadRun("r"))!;
      assert.deepEqual(stored.attempts[0]!.reused, ["a", "b#2"]);
      assert.equal(stored.run.status, "completed");
      assert.equal(stored.run.value, '"done"');
      assert.deepEqual([stored.attempts[0]!.ending, stored.attempts[0]!.endedAt], ["completed", NOW + 9]);
      assert.deepEqual([stored.lease!.epoch, stored.lease!.attempt], [1, null]);
      await refusedWithLeaseLost(store.writeIntent(lease, stepRow("r", 1, "late")), "a write after the ending");
    }));

    it("exactly one of many concurrent lease takers wins", withStore(async (store) => {
      const first = await created(store, "r");
      await store.endAttempt(first, { attempt: 1, ending: "failed", endedAt: NOW, error: null, run: { status: "failed" } });
      const handles = await Promise.all(Array.from({ length: 8 }, () => (options.another ? options.another(store) : store)));
      const results = await Promise.allSettled(handles.map((handle) => handle.claimRun("r", takeIfFree("r"))));
      const winners = results.filter((r) => r.status === "fulfilled" && r.value.kind === "taken");
      const busy = results.filter((r) => r.status === "rejected" && isSteplogError(r.reason, "RUN_BUSY"));
      assert.equal(winners.length, 1, `exactly one claim must win, got ${winners.length}`);
      assert.equal(busy.length, 7);
      const stored = (await store.loadRun("r"))!;
      assert.deepEqual([stored.run.attempts, stored.attempts.length, stored.lease!.epoch], [2, 2, 2]);
      for (const handle of handles) if (handle !== store) await handle.close();
    }));

    it("storageId, if the store has one: the same for a second handle on the same data, another for other data", withStore(async (store) => {
      // Made first: a `create` that empties shared storage then has nothing of this test's to wipe.
      const elsewhere = await options.create();
      const elsewhereId = await elsewhere.storageId?.();
      await elsewhere.close();
      await created(store, "r");
      if (!store.storageId) {
        // Optional: this process's live attempts are then keyed by location, which must name the data.
        assert.ok(typeof store.location === "string" && store.location.length > 0, "a store without storageId needs a location");
        return;
      }
      const other = options.another ? await options.another(store) : store;
      try {
        const id = await store.storageId();
        assert.equal(typeof id, "string");
        assert.equal(await other.storageId!(), id, "two handles on the same data must give the same storageId");
        assert.notEqual(elsewhereId, id, "a store on other data must give another storageId");
      } finally {
        if (other !== store) await other.close();
      }
    }));

    it("updateRun reads and writes one run atomically; an error writes nothing", withStore(async (store) => {
      await created(store, "r");
      const lease = (await store.loadRun("r"))!.lease!;
      await store.writeIntent(lease, stepRow("r", 1, "a"));
      const result = await store.updateRun("r", (current) => ({
        run: { status: "escalated", updatedAt: NOW + 1 },
        updateSteps: [{ seq: 1, patch: { status: "escalated", endedAt: NOW + 1 } }],
        appendSteps: [stepRow("r", 2, "b", { status: "succeeded", value: "2" })],
        appendEvents: [{ runId: "r", seq: 1, name: "go", payload: '"now"', sentAt: NOW, consumedBy: null }],
        result: current.steps.length,
      }));
      assert.equal(result, 1);
      const stored = (await store.loadRun("r"))!;
      assert.equal(stored.run.status, "escalated");
      assert.deepEqual(stored.steps.map((s) => [s.seq, s.status]), [[1, "escalated"], [2, "succeeded"]]);
      assert.deepEqual(stored.events.map((e) => e.name), ["go"]);
      await assert.rejects(store.updateRun("r", () => ({ run: { status: "failed" }, error: new Error("refused"), result: 0 })), /refused/);
      assert.equal((await store.loadRun("r"))!.run.status, "escalated");
    }));

    it("events: in order of arrival, each consumed at most once; an ending can wake the run on an unconsumed event", withStore(async (store) => {
      const lease = await created(store, "r");
      const event = (seq: number, name: string): EventRow => ({ runId: "r", seq, name, payload: JSON.stringify(`${name}-${seq}`), sentAt: NOW + seq, consumedBy: null });
      await store.updateRun("r", () => ({ appendEvents: [event(1, "item"), event(2, "item"), event(3, "other")], result: true }));
      await store.writeIntent(lease, stepRow("r", 1, "item"));
      const outcome = { seq: 1, status: "succeeded" as const, value: '"item-1"', error: null, endedAt: NOW, calls: 1, resolution: null, usage: null };
      await store.writeOutcome(lease, { ...outcome, consumes: { eventSeq: 1, by: "item" } });
      await store.writeIntent(lease, stepRow("r", 2, "item#2"));
      await assert.rejects(store.writeOutcome(lease, { ...outcome, seq: 2, consumes: { eventSeq: 1, by: "item#2" } }));
      assert.equal((await store.loadRun("r"))!.steps[1]!.status, "intended");
      const events = (await store.loadRun("r"))!.events;
      assert.deepEqual(events.map((e) => [e.seq, e.name, e.consumedBy]), [[1, "item", "item"], [2, "item", null], [3, "other", null]]);
      await store.endAttempt(lease, { attempt: 1, ending: "waiting", endedAt: NOW + 50, error: null, run: { status: "waiting", wakeAt: null, waitingFor: '{"kind":"event"}' }, wakeOnEvent: "item" });
      assert.equal((await store.loadRun("r"))!.run.wakeAt, NOW + 50);
    }));

    it("listRuns filters by status, workflow and due time, newest first, with the last attempt and the lease", withStore(async (store) => {
      await created(store, "old", { createdAt: NOW - 10, workflow: "a" });
      await created(store, "new", { createdAt: NOW, workflow: "b", status: "waiting", wakeAt: NOW + 5 });
      await created(store, "later", { createdAt: NOW - 5, workflow: "b", status: "waiting", wakeAt: NOW + 500 });
      assert.deepEqual((await store.listRuns({})).map((l) => l.run.id), ["new", "later", "old"]);
      assert.deepEqual((await store.listRuns({ status: ["running"] })).map((l) => l.run.id), ["old"]);
      assert.deepEqual((await store.listRuns({ workflow: "b" })).map((l) => l.run.id), ["new", "later"]);
      assert.deepEqual((await store.listRuns({ status: ["waiting"], dueBy: NOW + 10 })).map((l) => l.run.id), ["new"]);
      // A due listing goes oldest due first, whatever the creation order.
      assert.deepEqual((await store.listRuns({ status: ["waiting"], dueBy: NOW + 1000 })).map((l) => l.run.id), ["new", "later"]);
      assert.deepEqual((await store.listRuns({ limit: 1 })).map((l) => l.run.id), ["new"]);
      const [listing] = await store.listRuns({ workflow: "a" });
      assert.deepEqual([listing!.lastAttempt!.number, listing!.lease!.epoch], [1, 1]);
      await created(store, "earliest", { createdAt: NOW + 50, workflow: "b", status: "waiting", wakeAt: NOW + 1 });
      await created(store, "made-first", { createdAt: NOW - 100, workflow: "b", status: "waiting", wakeAt: NOW + 2 });
      assert.deepEqual((await store.listRuns({ status: ["waiting"], dueBy: NOW + 1000 })).map((l) => l.run.id), ["earliest", "made-first", "new", "later"]);
      assert.deepEqual((await store.listRuns({ status: ["waiting"], dueBy: NOW + 1000, limit: 2 })).map((l) => l.run.id), ["earliest", "made-first"]);
    }));

    it("listRuns' limit at its edges: 0 and below list nothing, a fraction is rounded down, a huge or infinite one lists everything", withStore(async (store) => {
      for (const [id, at] of [["a", NOW - 2], ["b", NOW - 1], ["c", NOW]] as const) await created(store, id, { createdAt: at });
      const ids = async (limit: number) => (await store.listRuns({ limit })).map((l) => l.run.id);
      assert.deepEqual(await ids(0), []);
      assert.deepEqual(await ids(-1), []);
      assert.deepEqual(await ids(-0.5), []);
      assert.deepEqual(await ids(Number.NaN), []);
      assert.deepEqual(await ids(1.9), ["c"]);
      assert.deepEqual(await ids(2), ["c", "b"]);
      assert.deepEqual(await ids(1e300), ["c", "b", "a"]);
      assert.deepEqual(await ids(Number.POSITIVE_INFINITY), ["c", "b", "a"]);
      assert.deepEqual(await ids(Number.MAX_SAFE_INTEGER), ["c", "b", "a"]);
    }));

    if (options.reopen) {
      const reopen = options.reopen;
      it("records survive close and reopen", async () => {
        const store = await options.create();
        const lease = await created(store, "r");
        await store.writeIntent(lease, stepRow("r", 1, "a"));
        await store.writeOutcome(lease, { seq: 1, status: "succeeded", value: '{"kept":true}', error: null, endedAt: NOW + 1, calls: 1, resolution: null, usage: null });
        await store.updateRun("r", () => ({ appendEvents: [{ runId: "r", seq: 1, name: "e", payload: "1", sentAt: NOW, consumedBy: null }], result: true }));
        await store.endAttempt(lease, { attempt: 1, ending: "completed", endedAt: NOW + 2, error: null, run: { status: "completed", value: '"v"' } });
        const before = comparable(await store.loadRun("r"));
        await store.close();
        const again = await reopen(store);
        try {
          assert.deepEqual(comparable(await again.loadRun("r")), before);
        } finally {
          await again.close();
        }
      });
    }

    it("leaseAge: a store that declares it gives every loaded lease its age (ms ≥ 0); one that does not gives none", withStore(async (store) => {
      await created(store, "r");
      const { lease } = (await store.loadRun("r"))!;
      const [listed] = await store.listRuns({});
      for (const [where, got] of [["loadRun", lease], ["listRuns", listed?.lease]] as const) {
        if (store.leaseAge === true) assert.ok(typeof got?.ageMs === "number" && got.ageMs >= 0, `${where}: lease.ageMs must be a number of ms ≥ 0, got ${String(got?.ageMs)}`);
        else assert.ok(got && !("ageMs" in got), `${where}: a store without leaseAge: true gives no lease.ageMs (declare leaseAge if its clock is shared by every claimer)`);
      }
    }));

    if (options.corrupt) {
      const corrupt = options.corrupt;
      it("an unreadable store is reported as unreadable (STORE_UNREADABLE)", async () => {
        const store = await options.create();
        await created(store, "r");
        await store.close();
        const broken = await corrupt(store);
        try {
          await assert.rejects(broken.loadRun("r"), (error: unknown) => isSteplogError(error, "STORE_UNREADABLE"));
        } finally {
          await broken.close().catch(() => {});
        }
      });
    }

    options.additionalTests?.({ it: runner.it, withStore, runRow, attemptRow, stepRow, now: NOW });

    if (skips.size > 0) {
      throw new Error(`describeStore(${JSON.stringify(name)}): skip names no test of the suite: ${[...skips.keys()].map((k) => JSON.stringify(k)).join(", ")}. Use a test's exact name.`);
    }
  });
}
