// A run that waits for a person outlives the process that started it: the first process exits
// while the run waits, a second approves and works it. And a worker killed while it runs a
// resumed run leaves it interrupted and resumable.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { tmpDb } from "../helpers/tmp.js";
import { inspectDb } from "../helpers/inspect.js";

const FIXTURE = new URL("./fixtures/approval.mjs", import.meta.url).pathname;

function run(file: string, mode: string, env: Record<string, string> = {}) {
  const out = spawnSync(process.execPath, [FIXTURE, file, mode, "o-1"], { env: { ...process.env, STEPLOG_FAULT: "", ...env }, encoding: "utf8" });
  const last = out.stdout
    .trim()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .at(-1);
  return { status: out.status, signal: out.signal, stderr: out.stderr, report: last ? JSON.parse(last) : undefined };
}

const ledger = (file: string) =>
  fs.existsSync(`${file}.ledger`)
    ? fs
        .readFileSync(`${file}.ledger`, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).step as string)
    : [];

describe("waiting across processes", () => {
  it("the approval example: the first process exits while the run waits; a second approves and works it", async () => {
    const file = tmpDb();
    const first = run(file, "start");
    expect(first.status).toBe(0); // the process ended: nothing is alive while the run waits
    expect(first.report.result).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: "send" } });
    const parked = inspectDb(file);
    expect(parked.runs[0]).toMatchObject({ status: "waiting" });
    expect(parked.leases[0]).toMatchObject({ attempt: null });
    expect(ledger(file)).toEqual(["draft"]);

    const second = run(file, "approve-and-work");
    expect(second.report.result, second.stderr).toMatchObject({ status: "completed", value: "archived m-o-1:send" });
    expect(ledger(file)).toEqual(["draft", "send", "archive"]);
  });

  it("a worker killed while it runs a resumed run leaves it interrupted and resumable", async () => {
    const file = tmpDb();
    run(file, "start");
    const killed = run(file, "approve-and-work", { CRASH_IN_EFFECT: "archive" });
    expect(killed.signal).toBe("SIGKILL");
    const db = inspectDb(file);
    expect(db.integrity).toBe("ok");
    expect(db.attempts.map((a) => a.ending)).toEqual(["waiting", null]);
    const next = run(file, "continue");
    expect(next.report.result).toMatchObject({ status: "completed", value: "archived m-o-1:send" });
    // send (irreversible) ran once; archive (idempotent) was re-driven with the same key.
    expect(ledger(file)).toEqual(["draft", "send", "archive", "archive"]);
  });
});
