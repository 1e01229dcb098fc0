// Leases under skewed clocks, with real processes: a claimer whose clock runs ahead (faketime)
// never takes a live, renewing lease, an owner whose clock lags keeps its own, and a dead owner's
// run is still taken over within about one lease period. Same host (the pid decides) and
// another host (a UTS namespace with its own host name: the lease decides, watched on the
// claimer's monotonic clock, or on Postgres by the server's clock).
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { tmpDb } from "../helpers/tmp.js";
import { readLedger, runWorker, spawnWorker, type WorkerRun } from "../helpers/worker.js";

const has = (command: string[]) => {
  try {
    execFileSync(command[0]!, command.slice(1), { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};
const FAKETIME = has(["faketime", "-f", "+1h", "true"]);
const UNSHARE = has(["unshare", "--uts", "true"]);
if (!process.env.CI && (!FAKETIME || !UNSHARE))
  console.warn("clock-skew tests skipped: they need faketime (apt-get install faketime) and unshare --uts (root)");
const skewIt = (FAKETIME && UNSHARE) || process.env.CI ? it : it.skip;

const skewed = (offset: string) => ["faketime", "-f", offset];
/** Run under its own host name (a UTS namespace), optionally under a skewed clock too. */
const elsewhere = (...then: string[]) => ["unshare", "--uts", "sh", "-c", 'hostname steplog-other-host && exec "$0" "$@"', ...then];

const LEASE_MS = "900";
const effectsOf = (file: string, step: string) => readLedger(file).filter((e) => e.kind === "effect" && e.step === step);

function untilEntered(run: WorkerRun, step: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = (chunk: Buffer) => {
      if (chunk.toString().includes(`entered ${step}`)) {
        run.child.stdout!.off("data", check);
        resolve();
      }
    };
    run.child.stdout!.on("data", check);
    run.done.then(() => reject(new Error(`the owner ended before entering ${step}: ${run.output()}`)), reject);
  });
}

const PG = process.env.STEPLOG_PG_URL;
const schemas: string[] = [];
afterAll(async () => {
  if (!PG || schemas.length === 0) return;
  const admin = new pg.Pool({ connectionString: PG, max: 1 });
  for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await admin.end();
});

const STORES: Array<[string, () => Record<string, string>]> = [
  ["sqlite", () => ({})],
  ...(PG
    ? ([
        [
          "postgres",
          () => {
            const schema = `steplog_skew_${process.pid}_${crypto.randomBytes(3).toString("hex")}`;
            schemas.push(schema);
            return { PG_SCHEMA: schema };
          },
        ],
      ] as Array<[string, () => Record<string, string>]>)
    : []),
];

describe.each(STORES)("leases under skewed clocks (%s)", (_store, storeEnv) => {
  const cases: Array<[string, string[], string[]]> = [
    ["same host, the claimer's clock 2 h ahead", [], skewed("+2h")],
    ["same host, the owner's clock 2 h behind", skewed("-2h"), []],
    ["another host, the claimer's clock 2 h ahead", elsewhere(), skewed("+2h")],
    ["another host, the owner's clock 2 h behind", elsewhere(...skewed("-2h")), []],
  ];

  skewIt.each(cases)(
    "%s: a live, renewing owner is never taken over",
    async (_what, ownerUnder, claimerUnder) => {
      const file = tmpDb();
      const env = { ...storeEnv(), LEASE_MS, STEP_DELAY_MS: "1500" };
      const owner = spawnWorker(file, "r", "start", env, undefined, { under: ownerUnder });
      await untilEntered(owner, "one");
      const claimer = await runWorker(file, "r", "continue", { ...env, STEP_DELAY_MS: "0" }, undefined, { under: claimerUnder });
      expect(claimer.report?.refused?.code, claimer.stdout + claimer.stderr).toBe("RUN_BUSY");
      const done = await owner.done;
      expect(done.report?.result, done.stdout + done.stderr).toMatchObject({ status: "completed", attempt: 1 });
      // Nobody but the owner ran a step.
      expect(new Set(readLedger(file).map((e) => e.pid)).size).toBe(1);
      expect(effectsOf(file, "one")).toHaveLength(1);
    },
    30_000,
  );

  skewIt.each([
    ["another host, the claimer's clock 2 h behind", skewed("-2h")],
    ["another host, the claimer's clock 2 h ahead", skewed("+2h")],
  ])(
    "%s: a dead owner's run is taken over within about one lease period",
    async (_what, claimerUnder) => {
      const file = tmpDb();
      const env = { ...storeEnv(), LEASE_MS, STEP_DELAY_MS: "4000" };
      const owner = spawnWorker(file, "r", "start", env, undefined, { under: elsewhere() });
      await untilEntered(owner, "one");
      owner.child.kill("SIGKILL");
      await owner.done;
      const claimer = await runWorker(file, "r", "continue", { ...env, STEP_DELAY_MS: "0", REPORT_MS: "1" }, undefined, { under: claimerUnder });
      expect(claimer.report?.result, claimer.stdout + claimer.stderr).toMatchObject({ status: "completed", attempt: 2 });
      // It waited to see the lease go unrenewed, not much longer than a period: the continue call, timed
      // inside the claimer (its start-up is not counted), returned within the period and a margin.
      expect(claimer.report?.ms, claimer.stdout).toBeTypeOf("number");
      expect(claimer.report!.ms).toBeLessThan(Number(LEASE_MS) + 4000);
    },
    30_000,
  );
});
