// Budgets under a real crash: a process SIGKILLed after a paid step's outcome was committed (at
// the next step's intent). The continue counts that spend (the run's spend is on its record, not
// in the process): it parks at the budget where the spend says, not from zero. On SQLite and, with
// STEPLOG_PG_URL, on Postgres (each process a separate client).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { STORE_PLACES } from "../helpers/stores.js";
import { tmpDb } from "../helpers/tmp.js";

const FIXTURE = new URL("./fixtures/budget.mjs", import.meta.url).pathname;

describe.each(STORE_PLACES)("budgets under SIGKILL (%s)", (_name, place) => {
  it("killed after pay-2's outcome (at pay-3's intent): the continue counts pay-1 and pay-2, re-drives pay-3 and parks before pay-4", () => {
    const where = place();
    const ledger = tmpDb("ledger.jsonl");
    const run = (mode: string, env: Record<string, string> = {}) => {
      const out = spawnSync(process.execPath, [FIXTURE, where, mode], {
        env: { ...process.env, STEPLOG_FAULT: "", LEDGER: ledger, ...env },
        encoding: "utf8",
        timeout: 30_000,
      });
      const last = out.stdout
        .trim()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .at(-1);
      return { signal: out.signal, stderr: out.stderr, out: last ? JSON.parse(last) : undefined };
    };
    const calls = () =>
      fs.existsSync(ledger)
        ? fs
            .readFileSync(ledger, "utf8")
            .trim()
            .split("\n")
            .map((l) => (JSON.parse(l) as { step: string }).step)
        : [];

    // $2.50: pay-1 and pay-2 spend $2; pay-3 starts (under the budget) and the process is killed
    // with its intent durable, pay-2's outcome (and its spend) committed with it.
    const killed = run("start", { STEPLOG_FAULT: "after-intent@pay-3" });
    expect(killed.signal, killed.stderr).toBe("SIGKILL");
    expect(calls()).toEqual(["pay-1", "pay-2"]);

    // The continue starts from the recorded spend ($2): pay-3 is re-driven ($3), and pay-4 parks.
    // From a spend reset to zero it would have run pay-4 and pay-5.
    const next = run("continue");
    expect(next.out?.report, next.stderr).toMatchObject({
      status: "waiting",
      waitingFor: { kind: "budget", step: "pay-4", spent: { usd: 3, tokens: 450 }, budget: { usd: 2.5 } },
    });
    expect(next.out.view).toMatchObject({ status: "waiting", budget: { usd: 2.5 }, spent: { usd: 3, tokens: 450 } });
    expect(calls()).toEqual(["pay-1", "pay-2", "pay-3"]);

    // Raised from another process: a worker goes on from pay-4, and nothing paid runs twice.
    const raised = run("raise");
    expect(raised.out?.view, raised.stderr).toMatchObject({ status: "completed", budget: { usd: 10 }, spent: { usd: 5, tokens: 750 } });
    expect(calls()).toEqual(["pay-1", "pay-2", "pay-3", "pay-4", "pay-5"]);
  });
});
