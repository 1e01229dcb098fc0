// An approval bound to a step's input survives a SIGKILL between the approval and the call: a
// continue runs the approved step once, with the same input; with another input (the code was
// fixed meanwhile) it parks the step for a new approval instead of running it. Real processes,
// killed at the named fault points before and after the step's intent.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { STORE_PLACES } from "../helpers/stores.js";
import { tmpDb } from "../helpers/tmp.js";

const FIXTURE = new URL("./fixtures/approval-input.mjs", import.meta.url).pathname;

function run(where: string, mode: string, ledger: string, env: Record<string, string> = {}) {
  const out = spawnSync(process.execPath, [FIXTURE, where, mode, "m-1"], {
    env: { ...process.env, STEPLOG_FAULT: "", LEDGER: ledger, ...env },
    encoding: "utf8",
  });
  const last = out.stdout
    .trim()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .at(-1);
  return { signal: out.signal, stderr: out.stderr, report: last ? JSON.parse(last) : undefined };
}

const sent = (ledger: string) => (fs.existsSync(ledger) ? fs.readFileSync(ledger, "utf8").trim().split("\n").filter(Boolean) : []);

describe.each(STORE_PLACES)("an approval bound to its input, across a SIGKILL (%s)", (_name, place) => {
  for (const point of ["before-intent", "after-intent"]) {
    it(`killed ${point} of the approved step: the continue runs it once with the approved input`, () => {
      const where = place();
      const ledger = `${tmpDb()}.ledger`;
      expect(run(where, "start", ledger).report.result).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: "send" } });
      const killed = run(where, "approve", ledger, { STEPLOG_FAULT: `${point}@send` });
      expect(killed.signal, killed.stderr).toBe("SIGKILL");
      expect(sent(ledger)).toEqual([]);
      const next = run(where, "continue", ledger);
      expect(next.report.result, next.stderr).toMatchObject({ status: "completed", value: expect.stringContaining("sent v1") });
      expect(sent(ledger)).toEqual(["v1"]);
    });
  }

  it("killed before the intent, then continued with another input: it parks for a new approval (stale), and runs only once that is approved", () => {
    const where = place();
    const ledger = `${tmpDb()}.ledger`;
    run(where, "start", ledger);
    expect(run(where, "approve", ledger, { STEPLOG_FAULT: "before-intent@send" }).signal).toBe("SIGKILL");
    const parked = run(where, "continue", ledger, { DRAFT: "v2" });
    expect(parked.report.result, parked.stderr).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: "send", stale: { by: "ana" } } });
    expect(sent(ledger)).toEqual([]);
    expect(parked.report.approvals).toMatchObject([
      {
        step: "send",
        input: { to: "ana@example.com", body: "v2" },
        stale: { by: "ana", previews: { approved: '{"to":"ana@example.com","body":"v1"}', now: '{"to":"ana@example.com","body":"v2"}' } },
      },
    ]);
    const approved = run(where, "approve", ledger, { DRAFT: "v2" });
    expect(approved.report.result, approved.stderr).toMatchObject({ status: "completed", value: expect.stringContaining("sent v2") });
    expect(sent(ledger)).toEqual(["v2"]);
  });

  it("killed after the intent, then continued with another input: the cut-off call is settled for the approved input, and the new one waits for a new approval", () => {
    const where = place();
    const ledger = `${tmpDb()}.ledger`;
    run(where, "start", ledger);
    expect(run(where, "approve", ledger, { STEPLOG_FAULT: "after-intent@send" }).signal).toBe("SIGKILL");
    // The cut-off row was recorded for v1, which was approved: its re-drive is made for v1, with its key; then the change stops the attempt.
    const stopped = run(where, "continue", ledger, { DRAFT: "v2" });
    expect(stopped.report.result, stopped.stderr).toMatchObject({ status: "stopped", error: { code: "STEP_INPUT_CHANGED", step: "send" } });
    expect(sent(ledger)).toEqual(["v1"]);
    // Told to redo it with v2: not run under v1's approval, but parked for a new one.
    const parked = run(where, "redo", ledger, { DRAFT: "v2" });
    expect(parked.report.result, parked.stderr).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: "send", stale: { by: "ana" } } });
    expect(sent(ledger)).toEqual(["v1"]);
  });
});
