// Steering runs from the terminal through the built bin: recover, escalations, resolve, send,
// approve, reject, work, compensate, dead-letters, cancel; --json output and exit codes.
import crypto from "node:crypto";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { assertBuilt, cli, collect, example, spawnCli, TempDirs, waitForOutput } from "./helpers.js";

const dirs = new TempDirs();
beforeAll(assertBuilt);
afterEach(() => dirs.cleanup());

describe("steplog recover", () => {
  it("marks a run whose process died as interrupted, once, and says how to continue it", async () => {
    const cwd = dirs.make();
    expect((await cli(["recover", "--json"], { cwd })).json()).toEqual([]);
    const crashed = await cli(["run", example("crash.mjs"), "--id", "r1"], { cwd });
    expect(crashed.signal).toBe("SIGKILL");
    const r = await cli(["recover", "--json"], { cwd });
    expect(r.code, r.output).toBe(0);
    expect(r.json()).toEqual([
      {
        id: "r1",
        workflow: "crash-demo",
        status: "interrupted",
        attempt: 1,
        step: "two",
        explanation: expect.stringContaining("ended without recording an ending"),
        next: "steplog run --continue --id r1",
      },
    ]);
    expect((await cli(["recover", "--json"], { cwd })).json()).toEqual([]);
    const text = await cli(["recover"], { cwd });
    expect(text.stdout).toMatch(/No interrupted runs to mark/);
    expect((await cli(["run", "--continue", "--id", "r1", "--json"], { cwd })).json()).toMatchObject({ status: "completed" });
  });
});

describe("escalations and resolve", () => {
  it("an irreversible step cut off by a crash waits for a person; resolve --value lets the continue go on without repeating it", async () => {
    const cwd = dirs.make();
    await cli(["run", example("charge.mjs"), "--id", "ch1"], { cwd });
    const escalated = await cli(["run", "--continue", "--id", "ch1", "--json"], { cwd });
    expect(escalated.code, escalated.output).toBe(1);
    expect(escalated.json()).toMatchObject({ status: "escalated", error: { code: "RUN_ESCALATED" } });
    expect(escalated.json().next.slice(0, 2)).toEqual(["steplog resolve ch1 charge --value '<json>'", "steplog resolve ch1 charge --redo"]);

    const list = await cli(["escalations", "--json"], { cwd });
    expect(list.json()).toEqual([
      expect.objectContaining({
        runId: "ch1",
        workflow: "charge",
        step: "charge",
        effect: "irreversible",
        idempotencyKey: "ch1:charge",
        attempt: 1,
        next: ["steplog resolve ch1 charge --value '<json>'", "steplog resolve ch1 charge --redo"],
      }),
    ]);
    const refusedContinue = await cli(["run", "--continue", "--id", "ch1"], { cwd });
    expect(refusedContinue.code).toBe(3);
    expect(refusedContinue.stderr).toMatch(/RUN_ESCALATED/);

    const usage: Array<[string[], number, RegExp]> = [
      [["resolve", "ch1", "charge"], 2, /exactly one of --value JSON .* or --redo/],
      [["resolve", "ch1", "charge", "--value", "{x", "--redo"], 2, /exactly one/],
      [["resolve", "ch1", "charge", "--value", "{not json"], 2, /--value is not JSON/],
      [["resolve", "ch1", "nope", "--redo"], 4, /STEP_NOT_FOUND/],
      [["resolve", "ch1", "cart", "--redo"], 3, /NOT_ESCALATED/],
      [["resolve", "missing", "charge", "--redo"], 4, /RUN_NOT_FOUND/],
    ];
    for (const [args, code, pattern] of usage) {
      const r = await cli(args, { cwd });
      expect(r.code, r.output).toBe(code);
      expect(r.stderr, r.output).toMatch(pattern);
    }

    const resolved = await cli(["resolve", "ch1", "charge", "--value", '{"id":"ch_1"}', "--by", "ana", "--json"], { cwd });
    expect(resolved.code, resolved.output).toBe(0);
    expect(resolved.json()).toEqual({ id: "ch1", step: "charge", answer: "value", runStatus: "ready", next: ["steplog run --continue --id ch1"] });
    expect((await cli(["escalations", "--json"], { cwd })).json()).toEqual([]);

    const done = await cli(["run", "--continue", "--id", "ch1", "--json"], { cwd });
    expect(done.json()).toMatchObject({ status: "completed", value: { charge: "ch_1", total: 4200 } });
    expect(done.json().steps.map((s: { key: string; state: string }) => [s.key, s.state])).toEqual([
      ["cart", "reused"],
      ["charge", "reused"],
      ["receipt", "succeeded"],
    ]);
  });

  it("resolve --redo runs the step again on continue", async () => {
    const cwd = dirs.make();
    await cli(["run", example("charge.mjs"), "--id", "ch2"], { cwd });
    await cli(["run", "--continue", "--id", "ch2"], { cwd });
    const redo = await cli(["resolve", "ch2", "charge", "--redo"], { cwd });
    expect(redo.code, redo.output).toBe(0);
    expect(redo.stdout).toMatch(/resolved: redo it\. The run is ready\./);
    const done = await cli(["run", "--continue", "--id", "ch2", "--json"], { cwd });
    expect(done.json()).toMatchObject({ status: "completed", value: { charge: "ch_3" } });
  });
});

describe("send, approve, reject and work", () => {
  it("a run waits for an event, then for an approval; send, approve and work carry it to the end", async () => {
    const cwd = dirs.make();
    const parked = await cli(["run", example("order.mjs"), "--id", "o1", "--json", "--", '{"item":"book"}'], { cwd });
    expect(parked.code, parked.output).toBe(1);
    expect(parked.json()).toMatchObject({ status: "waiting", waitingFor: { kind: "event", event: "paid", step: "paid" } });
    expect(parked.json().next.slice(0, 2)).toEqual(["steplog send o1 paid '<json>'", "steplog work"]);

    const early = await cli(["approve", "o1", "ship"], { cwd });
    expect(early.code, early.output).toBe(3);
    expect(early.stderr).toMatch(/NOT_WAITING/);
    const wrongEvent = await cli(["send", "o1", "refund", "{}"], { cwd });
    expect(wrongEvent.code).toBe(3);
    expect((await cli(["send", "o1", "note", '"kept"', "--keep", "--json"], { cwd })).json()).toMatchObject({ event: "note", payload: "kept", kept: true });
    expect((await cli(["send", "o1", "paid", "{oops"], { cwd })).code).toBe(2);

    const sent = await cli(["send", "o1", "paid", '{"amount":12}', "--json"], { cwd });
    expect(sent.code, sent.output).toBe(0);
    expect(sent.json()).toEqual({ id: "o1", event: "paid", payload: { amount: 12 }, kept: false, next: ["steplog work", "steplog run --continue --id o1"] });

    const worked = await cli(["work", "--until-idle", "--poll", "100ms"], { cwd });
    expect(worked.code, worked.output).toBe(0);
    expect(worked.stdout).toMatch(/loaded workflow order from .*order\.mjs/);
    expect(worked.stdout).toMatch(/o1 +waiting/);
    const waitingApproval = (await cli(["show", "o1", "--json"], { cwd })).json();
    expect(waitingApproval).toMatchObject({
      status: "waiting",
      waitingFor: { kind: "approval", step: "ship", inputDigest: expect.stringMatching(/^sha256:/) },
    });
    // The step is given what it ships: look at it, then approve what was seen.
    expect(waitingApproval.next).toEqual([
      "steplog approvals",
      `steplog approve o1 ship --input-digest ${waitingApproval.waitingFor.inputDigest}`,
      "steplog reject o1 ship --reason '<why>'",
      "steplog work",
    ]);

    const approved = await cli(["approve", "o1", "ship", "--by", "ana", "--json"], { cwd });
    expect(approved.json()).toMatchObject({ id: "o1", step: "ship", approved: true, by: "ana" });
    const finished = await cli(["work", "--until-idle", "--poll", "100ms", "--json"], { cwd });
    expect(finished.code, finished.output).toBe(0);
    const lines = finished.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.type === "step-succeeded").map((l) => l.step)).toEqual(["ship"]);
    expect(lines.at(-1)).toEqual({ type: "summary", attempts: [{ id: "o1", status: "completed", runStatus: "completed", attempt: 3 }] });
    expect((await cli(["show", "o1", "--json"], { cwd })).json().value).toMatchObject({ payment: { amount: 12 }, shipped: { tracking: "T-o1:ship" } });
  });

  it("send --key sends once: a second process sending the same key changes nothing and says so", async () => {
    const cwd = dirs.make();
    await cli(["run", example("order.mjs"), "--id", "o3", "--", '{"item":"mug"}'], { cwd });
    const first = await cli(["send", "o3", "paid", '{"amount":5}', "--key", "evt_9", "--json"], { cwd });
    expect(first.code, first.output).toBe(0);
    expect(first.json()).toMatchObject({ id: "o3", event: "paid", key: "evt_9", seq: 1, duplicate: false });
    const again = await cli(["send", "o3", "paid", '{"amount":50}', "--key", "evt_9"], { cwd });
    expect(again.code, again.output).toBe(0);
    expect(again.stdout).toMatch(/already sent with key evt_9: event paid #1 at .*; nothing changed/);
    expect((await cli(["send", "o3", "paid", "{}", "--key", "evt_9", "--json"], { cwd })).json()).toMatchObject({ seq: 1, duplicate: true });
    await cli(["work", "--until-idle", "--poll", "100ms"], { cwd });
    const shown = (await cli(["show", "o3", "--json"], { cwd })).json();
    expect(shown).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: "ship" } });
  });

  it("reject stops the run with the reason", async () => {
    const cwd = dirs.make();
    await cli(["run", example("order.mjs"), "--id", "o2", "--", '{"item":"pen"}'], { cwd });
    await cli(["send", "o2", "paid", "{}"], { cwd });
    await cli(["work", "--until-idle", "--poll", "100ms"], { cwd });
    const rejected = await cli(["reject", "o2", "ship", "--by", "bo", "--reason", "address missing", "--json"], { cwd });
    expect(rejected.code, rejected.output).toBe(0);
    expect(rejected.json()).toMatchObject({ approved: false, by: "bo", reason: "address missing", runStatus: "stopped" });
    const shown = (await cli(["show", "o2", "--json"], { cwd })).json();
    expect(shown.error.message).toMatch(/rejected by bo: address missing/);
  });

  it("work loads runs started by an app only with --workflow", async () => {
    const cwd = dirs.make();
    const db = path.join(cwd, "app.db");
    const { default: order } = (await import(example("order.mjs"))) as { default: never };
    const engine = createEngine({ store: sqliteStore({ path: db }) });
    await engine.start(order, { item: "mug" } as never, { id: "app-o" });
    await engine.send("app-o", "paid", { amount: 3 });
    await engine.close();

    const blind = await cli(["work", "--db", db, "--until-idle", "--poll", "100ms", "--json"], { cwd });
    expect(blind.code, blind.output).toBe(0);
    expect(blind.stdout).not.toMatch(/"type":"attempt-started"/);
    const seeing = await cli(["work", "--db", db, "--until-idle", "--poll", "100ms", "--workflow", example("order.mjs")], { cwd });
    expect(seeing.code, seeing.output).toBe(0);
    expect(seeing.stdout).toMatch(/app-o +order · attempt 2/);
    expect((await cli(["show", "app-o", "--db", db, "--json"], { cwd })).json().waitingFor).toMatchObject({ kind: "approval", step: "ship" });
  });
});

describe("steplog work: runs it cannot take", () => {
  it("--until-idle with a ready run sealed with a key it lacks: finds the workflow, says why it cannot take the run, and stops", async () => {
    const cwd = dirs.make();
    const keys = { STEPLOG_KEYS: `k1=${crypto.randomBytes(32).toString("base64")}` };
    await cli(["run", example("order.mjs"), "--id", "o9", "--", '{"item":"book"}'], { cwd, env: keys });
    expect((await cli(["send", "o9", "paid", '{"amount":12}'], { cwd, env: keys })).code).toBe(0);
    const keyless = await cli(["work", "--until-idle", "--poll", "100ms"], { cwd, timeoutMs: 20_000 });
    expect(keyless.code, keyless.output).toBe(0);
    expect(keyless.stdout).toMatch(/loaded workflow order from .*order\.mjs/);
    expect(keyless.output).toContain('run "o9" was not taken');
    expect(keyless.output).toContain('sealed with key "k1"');
    expect(keyless.stdout).toContain("1 ready run(s) could not be taken");
    // With the key, the same command takes it.
    const keyed = await cli(["work", "--until-idle", "--poll", "100ms"], { cwd, env: keys });
    expect(keyed.stdout, keyed.output).toMatch(/o9 +order · attempt 2/);
  });
});

describe("steplog work: stopping", () => {
  it("Ctrl-C stops the worker (exit 130); bad options are usage errors", async () => {
    const cwd = dirs.make();
    const child = spawnCli(["work", "--poll", "100ms"], { cwd });
    const done = collect(child, 20_000);
    await waitForOutput(child, (t) => /worker started/.test(t));
    child.kill("SIGINT");
    const r = await done;
    expect(r.code, r.output).toBe(130);
    expect(r.stdout).toMatch(/worker stopped; attempts: none/);
    expect((await cli(["work", "--concurrency", "0"], { cwd })).code).toBe(2);
    expect((await cli(["work", "--poll", "fast"], { cwd })).code).toBe(2);
    expect((await cli(["work", "--workflow", "missing.mjs"], { cwd })).code).toBe(6);
  });
});

describe("steplog compensate", () => {
  it("runs the saga with the workflow loaded from the recorded source", async () => {
    const cwd = dirs.make();
    const failed = await cli(["run", example("trip.mjs"), "--id", "t1"], { cwd });
    expect(failed.code).toBe(1);
    const saga = await cli(["compensate", "t1"], { cwd });
    expect(saga.code, saga.output).toBe(0);
    expect(saga.stdout).toMatch(/^  ↶ book-hotel +compensated\n  ↶ book-flight +compensated$/m);
    expect(saga.stdout).toMatch(/^↶ attempt 2 compensated$/m);
    const again = await cli(["compensate", "t1", "--json"], { cwd });
    expect(again.json()).toMatchObject({ status: "compensated", runStatus: "compensated", steps: [] });
    const shown = (await cli(["show", "t1", "--json"], { cwd })).json();
    expect(shown.attempts[1].ending).toBe("compensated");
    expect(shown.attempts[1].entries.map((e: { key: string; kind: string; status: string }) => [e.key, e.kind, e.status])).toEqual([
      ["book-hotel", "compensation", "compensated"],
      ["book-flight", "compensation", "compensated"],
    ]);
    expect((await cli(["compensate", "nope"], { cwd })).code).toBe(4);
  });

  it("asks for --workflow when the run has no recorded source", async () => {
    const cwd = dirs.make();
    const db = path.join(cwd, "app.db");
    const { default: trip } = (await import(example("trip.mjs"))) as { default: never };
    const engine = createEngine({ store: sqliteStore({ path: db }) });
    await engine.start(trip, undefined as never, { id: "app-t" });
    await engine.close();
    const r = await cli(["compensate", "app-t", "--db", db], { cwd });
    expect(r.code, r.output).toBe(6);
    expect(r.stderr).toMatch(/next: steplog compensate app-t --workflow <file>/);
    const ok = await cli(["compensate", "app-t", "--db", db, "--workflow", example("trip.mjs"), "--json"], { cwd });
    expect(ok.code, ok.output).toBe(0);
    expect(ok.json().runStatus).toBe("compensated");
  });
});

describe("dead-letters and cancel", () => {
  it("dead-letters lists runs that used up their attempts, with their last error", async () => {
    const cwd = dirs.make();
    expect((await cli(["dead-letters", "--json"], { cwd })).json()).toEqual([]);
    await cli(["run", example("flaky.mjs"), "--id", "dl1"], { cwd });
    await cli(["run", "--continue", "--id", "dl1"], { cwd });
    await cli(["run", example("hello.mjs"), "--id", "ok1", "--", '{"topic":"x"}'], { cwd });
    const r = await cli(["dead-letters", "--json"], { cwd });
    expect(r.code, r.output).toBe(0);
    expect(r.json()).toEqual([
      expect.objectContaining({
        id: "dl1",
        workflow: "flaky",
        status: "dead-lettered",
        attempts: 2,
        error: "ECONNRESET while uploading",
        next: "steplog run --continue --id dl1 --force",
      }),
    ]);
    const text = await cli(["dead-letters"], { cwd });
    expect(text.stdout).toMatch(/^dl1 +flaky +dead-lettered +2 +upload \(failed\)/m);
  });

  it("cancel stops a parked run (a continue goes on later), refuses a completed one, and says when there is no such run", async () => {
    const cwd = dirs.make();
    await cli(["run", example("order.mjs"), "--id", "c1", "--", '{"item":"x"}'], { cwd });
    const cancelled = await cli(["cancel", "c1", "--reason", "customer left", "--json"], { cwd });
    expect(cancelled.code, cancelled.output).toBe(0);
    expect(cancelled.json()).toEqual({ id: "c1", runStatus: "cancelled", next: "steplog run --continue --id c1" });
    expect((await cli(["show", "c1", "--json"], { cwd })).json()).toMatchObject({ status: "cancelled", error: { code: "RUN_CANCELLED" } });
    await cli(["run", example("hello.mjs"), "--id", "c2", "--", '{"topic":"x"}'], { cwd });
    const completed = await cli(["cancel", "c2"], { cwd });
    expect(completed.code).toBe(3);
    expect(completed.stderr).toMatch(/RUN_COMPLETED/);
    expect((await cli(["cancel", "c3"], { cwd })).code).toBe(4);
  });
});
