/**
 * The conformance suite's basic cases, on one store handle: what createRun, the step writes and
 * claimRun keep, and what updateRun, events and listRuns read back. Registered in two groups so
 * the suite keeps its order (the fencing cases come between them).
 */

import assert from "node:assert/strict";
import type { EventRow } from "../store/types.js";
import { attemptRow, created, comparable, NOW, runRow, stepRow, takeIfFree } from "./conformance-rows.js";
import type { SuiteCases } from "./conformance-types.js";

/** A missing run, createRun, steps and outcomes, claimRun's verdicts, an attempt's consent. */
export function writeAndClaimCases({ it, withStore }: SuiteCases): void {
  it(
    "a missing run is reported as missing, and nothing is created",
    withStore(async (store) => {
      assert.equal(await store.loadRun("nope"), undefined);
      assert.deepEqual(await store.claimRun("nope", takeIfFree("nope")), { kind: "missing" });
      assert.equal(await store.updateRun("nope", () => ({ result: 1 })), undefined);
      assert.deepEqual(await store.listRuns({}), []);
    }),
  );

  it(
    "createRun writes the run, its first attempt and a lease at epoch 1; a taken id writes nothing",
    withStore(async (store) => {
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
    }),
  );

  it(
    "steps come back in order and values round-trip exactly",
    withStore(async (store) => {
      const lease = await created(store, "r");
      const values = [
        '"plain"',
        JSON.stringify("quotes \" ' ; DROP TABLE steps; -- \n\t\u0000 \u202e 🙂"),
        JSON.stringify("x".repeat(200_000)),
        '{"$type":"BigInt","value":"12"}',
      ];
      for (let i = 0; i < values.length; i++) await store.writeIntent(lease, stepRow("r", i + 1, i === 0 ? "a" : `a#${i + 1}`));
      for (let i = values.length - 1; i >= 0; i--) {
        await store.writeOutcome(lease, {
          seq: i + 1,
          status: "succeeded",
          value: values[i]!,
          error: null,
          endedAt: NOW + 100 + i,
          calls: 1,
          resolution: '{"policy":"redrive"}',
          usage: null,
        });
      }
      const steps = (await store.loadRun("r"))!.steps;
      assert.deepEqual(
        steps.map((s) => s.seq),
        [1, 2, 3, 4],
      );
      assert.deepEqual(
        steps.map((s) => s.value),
        values,
      );
      assert.deepEqual(
        steps[0],
        stepRow("r", 1, "a", { status: "succeeded", value: values[0]!, endedAt: NOW + 100, calls: 1, resolution: '{"policy":"redrive"}' }),
      );
    }),
  );

  it(
    "an intent reads back exactly as written, whatever its effect, with or without a resolution carried on it",
    withStore(async (store) => {
      const lease = await created(store, "r");
      const rows = [
        stepRow("r", 1, "a", { effect: "read" }),
        stepRow("r", 2, "b", { effect: "compensatable", resolution: '{"policy":"redrive","previous":{"attempt":1}}' }),
        stepRow("r", 3, "c", { effect: "irreversible", version: null }),
        stepRow("r", 4, "d", { resolution: '{"thrown":{"attempt":1,"entered":3}}', position: null }),
      ];
      for (const row of rows) await store.writeIntent(lease, row);
      assert.deepEqual((await store.loadRun("r"))!.steps, rows);
    }),
  );

  it(
    "a step's input (sealed text and digest, carried in its resolution) reads back with the intent and stays through its outcome",
    withStore(async (store) => {
      const lease = await created(store, "r");
      const resolution = `{"input":"enc:v1:k1:aXY=:dGFn:c2VhbGVk","inputDigest":"hmac-sha256:k1:${"ab".repeat(32)}"}`;
      const row = stepRow("r", 1, "a", { effect: "irreversible", resolution });
      await store.writeIntent(lease, row);
      assert.deepEqual((await store.loadRun("r"))!.steps, [row]);
      await store.writeOutcome(lease, { seq: 1, status: "succeeded", value: '"ok"', error: null, endedAt: NOW + 1, calls: 1, resolution, usage: null });
      assert.deepEqual((await store.loadRun("r"))!.steps[0], { ...row, status: "succeeded", value: '"ok"', endedAt: NOW + 1, calls: 1 });
    }),
  );

  it(
    "an outcome needs an open intent",
    withStore(async (store) => {
      const lease = await created(store, "r");
      await store.writeIntent(lease, stepRow("r", 1, "a"));
      const outcome = { seq: 1, status: "succeeded" as const, value: "1", error: null, endedAt: NOW, calls: 1, resolution: null, usage: null };
      await store.writeOutcome(lease, outcome);
      await assert.rejects(store.writeOutcome(lease, outcome));
      await assert.rejects(store.writeOutcome(lease, { ...outcome, seq: 9 }));
    }),
  );

  it(
    "claimRun applies decide's verdict in one step: take (new attempt, epoch + 1) or refuse (patch kept, error thrown)",
    withStore(async (store) => {
      const first = await created(store, "r");
      await store.endAttempt(first, { attempt: 1, ending: "failed", endedAt: NOW + 1, error: '{"name":"Error","message":"x"}', run: { status: "failed" } });
      const taken = await store.claimRun("r", takeIfFree("r"));
      assert.equal(taken.kind, "taken");
      if (taken.kind !== "taken") return;
      assert.deepEqual(taken.lease, { runId: "r", epoch: 2, attempt: 2, expiresAt: NOW + 60_000 });
      assert.equal(taken.state.run.attempts, 2);
      assert.deepEqual(
        taken.state.attempts.map((a) => [a.number, a.ending]),
        [
          [1, "failed"],
          [2, null],
        ],
      );
      await assert.rejects(
        store.claimRun("r", () => ({ kind: "refuse", error: new Error("no"), run: { status: "dead-lettered" } })),
        /no/,
      );
      assert.equal((await store.loadRun("r"))!.run.status, "dead-lettered");
      assert.equal((await store.loadRun("r"))!.lease!.epoch, 2);
    }),
  );

  it(
    "an attempt's consent (redo / reuse) is kept as given, and absent where none was given",
    withStore(async (store) => {
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
    }),
  );

  it(
    "a run's trace context is kept as created, and a claim's patch can set it later",
    withStore(async (store) => {
      const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
      await created(store, "traced", { traceContext: traceparent });
      assert.equal((await store.loadRun("traced"))!.run.traceContext, traceparent);
      const listed = (await store.listRuns({})).find((l) => l.run.id === "traced");
      assert.equal(listed?.run.traceContext, traceparent);
      // A run created without one (tracing off) gets its first traced attempt's, in the claim.
      const first = await created(store, "later");
      assert.equal((await store.loadRun("later"))!.run.traceContext, null);
      await store.endAttempt(first, { attempt: 1, ending: "failed", endedAt: NOW + 1, error: null, run: { status: "failed" } });
      const later = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
      const taken = await store.claimRun("later", (current) => {
        const decision = takeIfFree("later")(current);
        return decision.kind === "take" ? { ...decision, run: { ...decision.run, traceContext: later } } : decision;
      });
      assert.equal(taken.kind, "taken");
      assert.equal((await store.loadRun("later"))!.run.traceContext, later);
      if (store.enqueueRun) {
        await store.enqueueRun(runRow("queued", { status: "waiting", attempts: 0, budgetUsed: 0, wakeAt: NOW, traceContext: traceparent }), NOW);
        assert.equal((await store.loadRun("queued"))!.run.traceContext, traceparent);
      }
    }),
  );
}

/** updateRun's atomicity, events, listRuns' filters, order and limits. */
export function updateAndListCases({ it, withStore }: SuiteCases): void {
  it(
    "listRuns by the kind of what a run waits for (waitingKind), and by parent",
    withStore(async (store) => {
      await created(store, "on-child", { status: "waiting", waitingFor: '{"kind":"child","step":"c","child":"kid"}', parent: null });
      await created(store, "on-event", { status: "waiting", waitingFor: '{"kind":"event","step":"e","event":"go"}' });
      await created(store, "kid", { parent: "on-child" });
      await created(store, "odd", { status: "waiting", waitingFor: "not json" });
      assert.deepEqual(
        (await store.listRuns({ status: ["waiting"], waitingKind: "child" })).map((l) => l.run.id),
        ["on-child"],
      );
      assert.deepEqual(
        (await store.listRuns({ parent: "on-child" })).map((l) => l.run.id),
        ["kid"],
      );
    }),
  );

  it(
    "updateRun reads and writes one run atomically; an error writes nothing",
    withStore(async (store) => {
      await created(store, "r");
      const lease = (await store.loadRun("r"))!.lease!;
      await store.writeIntent(lease, stepRow("r", 1, "a"));
      const result = await store.updateRun("r", (current) => ({
        run: { status: "escalated", updatedAt: NOW + 1 },
        updateSteps: [{ seq: 1, patch: { status: "escalated", endedAt: NOW + 1 } }],
        appendSteps: [stepRow("r", 2, "b", { status: "succeeded", value: "2" })],
        appendEvents: [{ runId: "r", seq: 1, name: "go", payload: '"now"', sentAt: NOW, consumedBy: null, key: null }],
        result: current.steps.length,
      }));
      assert.equal(result, 1);
      const stored = (await store.loadRun("r"))!;
      assert.equal(stored.run.status, "escalated");
      assert.deepEqual(
        stored.steps.map((s) => [s.seq, s.status]),
        [
          [1, "escalated"],
          [2, "succeeded"],
        ],
      );
      assert.deepEqual(
        stored.events.map((e) => e.name),
        ["go"],
      );
      await assert.rejects(
        store.updateRun("r", () => ({ run: { status: "failed" }, error: new Error("refused"), result: 0 })),
        /refused/,
      );
      assert.equal((await store.loadRun("r"))!.run.status, "escalated");
    }),
  );

  it(
    "events: in order of arrival, each consumed at most once; an ending can wake the run on an unconsumed event",
    withStore(async (store) => {
      const lease = await created(store, "r");
      const event = (seq: number, name: string): EventRow => ({
        runId: "r",
        seq,
        name,
        payload: JSON.stringify(`${name}-${seq}`),
        sentAt: NOW + seq,
        consumedBy: null,
        key: null,
      });
      await store.updateRun("r", () => ({ appendEvents: [event(1, "item"), event(2, "item"), event(3, "other")], result: true }));
      await store.writeIntent(lease, stepRow("r", 1, "item"));
      const outcome = { seq: 1, status: "succeeded" as const, value: '"item-1"', error: null, endedAt: NOW, calls: 1, resolution: null, usage: null };
      await store.writeOutcome(lease, { ...outcome, consumes: { eventSeq: 1, by: "item" } });
      await store.writeIntent(lease, stepRow("r", 2, "item#2"));
      await assert.rejects(store.writeOutcome(lease, { ...outcome, seq: 2, consumes: { eventSeq: 1, by: "item#2" } }));
      assert.equal((await store.loadRun("r"))!.steps[1]!.status, "intended");
      const events = (await store.loadRun("r"))!.events;
      assert.deepEqual(
        events.map((e) => [e.seq, e.name, e.consumedBy]),
        [
          [1, "item", "item"],
          [2, "item", null],
          [3, "other", null],
        ],
      );
      await store.endAttempt(lease, {
        attempt: 1,
        ending: "waiting",
        endedAt: NOW + 50,
        error: null,
        run: { status: "waiting", wakeAt: null, waitingFor: '{"kind":"event"}' },
        wakeOnEvent: "item",
      });
      assert.equal((await store.loadRun("r"))!.run.wakeAt, NOW + 50);
    }),
  );

  it(
    "an event's key is kept, one per key within a run (a second is refused and nothing written); another run may use it",
    withStore(async (store) => {
      await created(store, "r");
      await created(store, "s");
      const keyed = (runId: string, seq: number, key: string | null): EventRow => ({
        runId,
        seq,
        name: "paid",
        payload: "1",
        sentAt: NOW + seq,
        consumedBy: null,
        key,
      });
      await store.updateRun("r", () => ({ appendEvents: [keyed("r", 1, "pay-1"), keyed("r", 2, null)], result: true }));
      await assert.rejects(store.updateRun("r", () => ({ appendEvents: [keyed("r", 3, "pay-1")], run: { updatedAt: NOW + 9 }, result: true })));
      const stored = (await store.loadRun("r"))!;
      assert.deepEqual(
        stored.events.map((e) => [e.seq, e.key]),
        [
          [1, "pay-1"],
          [2, null],
        ],
      );
      assert.notEqual(stored.run.updatedAt, NOW + 9, "a refused update writes nothing");
      await store.updateRun("s", () => ({ appendEvents: [keyed("s", 1, "pay-1")], result: true }));
      assert.deepEqual(
        (await store.loadRun("s"))!.events.map((e) => e.key),
        ["pay-1"],
      );
    }),
  );

  it(
    "listRuns filters by status, workflow and due time, newest first, with the last attempt and the lease",
    withStore(async (store) => {
      await created(store, "old", { createdAt: NOW - 10, workflow: "a" });
      await created(store, "new", { createdAt: NOW, workflow: "b", status: "waiting", wakeAt: NOW + 5 });
      await created(store, "later", { createdAt: NOW - 5, workflow: "b", status: "waiting", wakeAt: NOW + 500 });
      assert.deepEqual(
        (await store.listRuns({})).map((l) => l.run.id),
        ["new", "later", "old"],
      );
      assert.deepEqual(
        (await store.listRuns({ status: ["running"] })).map((l) => l.run.id),
        ["old"],
      );
      assert.deepEqual(
        (await store.listRuns({ workflow: "b" })).map((l) => l.run.id),
        ["new", "later"],
      );
      assert.deepEqual(
        (await store.listRuns({ status: ["waiting"], dueBy: NOW + 10 })).map((l) => l.run.id),
        ["new"],
      );
      // A due listing goes oldest due first, whatever the creation order.
      assert.deepEqual(
        (await store.listRuns({ status: ["waiting"], dueBy: NOW + 1000 })).map((l) => l.run.id),
        ["new", "later"],
      );
      assert.deepEqual(
        (await store.listRuns({ limit: 1 })).map((l) => l.run.id),
        ["new"],
      );
      const [listing] = await store.listRuns({ workflow: "a" });
      assert.deepEqual([listing!.lastAttempt!.number, listing!.lease!.epoch], [1, 1]);
      await created(store, "earliest", { createdAt: NOW + 50, workflow: "b", status: "waiting", wakeAt: NOW + 1 });
      await created(store, "made-first", { createdAt: NOW - 100, workflow: "b", status: "waiting", wakeAt: NOW + 2 });
      assert.deepEqual(
        (await store.listRuns({ status: ["waiting"], dueBy: NOW + 1000 })).map((l) => l.run.id),
        ["earliest", "made-first", "new", "later"],
      );
      assert.deepEqual(
        (await store.listRuns({ status: ["waiting"], dueBy: NOW + 1000, limit: 2 })).map((l) => l.run.id),
        ["earliest", "made-first"],
      );
    }),
  );

  it(
    "listRuns' limit at its edges: 0 and below list nothing, a fraction is rounded down, a huge or infinite one lists everything",
    withStore(async (store) => {
      for (const [id, at] of [
        ["a", NOW - 2],
        ["b", NOW - 1],
        ["c", NOW],
      ] as const)
        await created(store, id, { createdAt: at });
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
    }),
  );
}
