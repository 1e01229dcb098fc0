// The ownership protocol, model-checked: model/ownership.pml is run through SPIN (spin -a, gcc,
// ./pan) exhaustively for its bounds, once per configuration. The sound configurations must
// report "errors: 0"; the broken ones (no fence, a claimer trusting a skewed clock, ...) must
// report errors, or the model could not fail and would prove nothing. The header of the model
// says what each part mirrors, the bounds, the fairness assumed for liveness, and what is not
// covered.
//
// Needs spin and gcc (apt-get install spin gcc). Without them the file is skipped with a
// warning, except under CI, where it fails.
import { execFile, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const MODEL = fileURLToPath(new URL("../../model/ownership.pml", import.meta.url));

const found = (command: string, arg: string) => spawnSync(command, [arg], { stdio: "ignore" }).status === 0;
const missing = [found("spin", "-V") ? undefined : "spin", found("gcc", "--version") ? undefined : "gcc"].filter((t) => t !== undefined);
if (missing.length > 0 && !process.env.CI) {
  console.warn(`model checks skipped: ${missing.join(" and ")} not found (apt-get install spin gcc, then npx vitest run test/model/ownership.test.ts)`);
}

interface Check {
  /** -D flags for spin (the model's configuration). */
  model: string[];
  /** -D flags for gcc (pan's own options). */
  cc: string[];
  /** pan's flags. */
  pan: string[];
  /** -O2 pays for itself only on a big search. */
  optimise: boolean;
}

const safety = (model: string[], optimise = true): Check => ({ model, cc: ["-DSAFETY"], pan: ["-E", "-w22"], optimise });
const liveness = (model: string[], optimise = true): Check => ({ model: ["-DLIVENESS", ...model], cc: ["-DNFAIR=3"], pan: ["-a", "-f", "-E", "-w22"], optimise });

interface Verdict {
  errors: number;
  states: number;
  output: string;
}

/** spin -a, gcc, ./pan in a directory of its own; the number of errors and of states stored. */
async function check(dir: string, c: Check): Promise<Verdict> {
  await run("spin", [...c.model, "-a", MODEL], { cwd: dir });
  await run("gcc", [c.optimise ? "-O2" : "-O0", ...c.cc, "-o", "pan", "pan.c"], { cwd: dir });
  // pan exits 0 whether or not it found an error: what it prints says.
  const { stdout } = await run("./pan", c.pan, { cwd: dir, maxBuffer: 16 * 1024 * 1024 }).catch((error: { stdout?: string; message: string }) => {
    if (typeof error.stdout === "string" && /errors: \d+/.test(error.stdout)) return { stdout: error.stdout };
    throw error;
  });
  const errors = /errors: (\d+)/.exec(stdout);
  const states = /(\d+) states, stored/.exec(stdout);
  if (!errors || !states) throw new Error(`pan said nothing conclusive:\n${stdout}`);
  // An exhaustive search to the end, or it is not the answer asked for.
  expect(stdout).toMatch(/Full statespace search for/);
  expect(stdout).not.toMatch(/max search depth too small|out of memory/i);
  return { errors: Number(errors[1]), states: Number(states[1]), output: stdout };
}

/** Every check of the file, started at once and run a few at a time (one per core). */
const CHECKS: Record<string, Check> = {
  // Sound: P1 one outcome per intent row, P2 no succeeded step run again, P3 no effect before its
  // durable intent, P5 no live lease taken (model header).
  "2 workers, one of each fault (crash, freeze, lost or failed write, slow renewal)": safety([]),
  "3 workers, two of them crash, one freezes": safety(["-DNPROC=3", "-DCRASHES=2", "-DWFAULTS=0", "-DRFAULTS=0"]),
  "3 workers, 0 and 1 on one host (the pid decides between them)": safety(["-DNPROC=3", "-DSHARED_HOST", "-DCRASHES=2", "-DWFAULTS=0", "-DRFAULTS=0"]),
  "Postgres: expiry by the server's clock": safety(["-DSERVER_CLOCK", "-DWFAULTS=0"]),
  // P4: a run whose owner is gone is claimed again (weak fairness, finite faults).
  "P4 with crashes, freezes and lost writes": liveness(["-DRFAULTS=0"]),
  "P4 with crashes, lost writes and slow renewals": liveness(["-DFREEZES=0"]),
  "P4 with crashes, freezes and slow renewals": liveness(["-DWFAULTS=0"]),
  // What the model found in the code, now fixed (model header, "WHAT THE MODEL FOUND").
  "a failed renewal's deadline ends the attempt (P6)": safety(["-DCHECK_SELF_STOP", "-DCRASHES=0"]),
  "a failed group-committed outcome ends the attempt": safety(["-DGROUP_COMMIT", "-DMAXROWS=8", "-DCRASHES=0"]),
  // Broken on purpose: each must be caught.
  "broken: no fence on step writes": safety(["-DBREAK=1"], false),
  "broken: the claimer trusts a skewed clock": safety(["-DBREAK=2"], false),
  "broken: a failed intent taken as written": safety(["-DBREAK=3"], false),
  "broken: no fence and no intended-row check on outcomes": safety(["-DBREAK=4"], false),
  "broken: watchLease never sees a full period": liveness(["-DBREAK=5"], false),
  // The code before the fixes of what the model found: the attempt went on after a failed
  // group-committed outcome; the deadline after a failed renewal did nothing.
  "broken: group commit going on after a failed outcome (the code before the fix)": safety(
    ["-DGROUP_COMMIT", "-DGROUP_COMMIT_AS_WRITTEN", "-DCRASHES=0", "-DFREEZES=0", "-DRFAULTS=0"],
    false,
  ),
  "broken: the deadline after a failed renewal doing nothing (the code before the fix)": safety(
    ["-DCHECK_SELF_STOP", "-DKEEPER_AS_WRITTEN", "-DCRASHES=0", "-DFREEZES=0"],
    false,
  ),
};

const tools = missing.length === 0;
const suite = tools || process.env.CI ? describe : describe.skip;

suite("the ownership protocol, model-checked (model/ownership.pml)", () => {
  const verdicts = new Map<string, Promise<Verdict>>();
  let root = "";

  beforeAll(() => {
    if (!tools) throw new Error(`the model checks need ${missing.join(" and ")} (apt-get install spin gcc); CI is set, so they may not be skipped`);
    root = fs.mkdtempSync(path.join(os.tmpdir(), "steplog-model-"));
    const queue = Object.entries(CHECKS);
    const slots = Math.max(1, Math.min(4, os.availableParallelism()));
    let next = 0;
    const waiters = new Map<string, { resolve: (v: Verdict) => void; reject: (e: unknown) => void }>();
    for (const [name] of queue) {
      verdicts.set(name, new Promise<Verdict>((resolve, reject) => waiters.set(name, { resolve, reject })));
      // A failure is reported by the test that asks for it.
      verdicts.get(name)!.catch(() => {});
    }
    const worker = async () => {
      while (next < queue.length) {
        const [name, c] = queue[next++]!;
        const dir = fs.mkdtempSync(path.join(root, "check-"));
        try {
          waiters.get(name)!.resolve(await check(dir, c));
        } catch (error) {
          waiters.get(name)!.reject(error);
        }
      }
    };
    for (let i = 0; i < slots; i++) void worker();
  });

  afterAll(() => {
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  const sound = (name: string) =>
    it(name, async () => {
      const v = await verdicts.get(name)!;
      expect(v.errors, v.output).toBe(0);
      expect(v.states).toBeGreaterThan(1000);
    }, 300_000);
  const caught = (name: string) =>
    it(name, async () => {
      const v = await verdicts.get(name)!;
      expect(v.errors, v.output).toBeGreaterThan(0);
    }, 300_000);

  describe("holds, for every interleaving within its bounds", () => {
    for (const name of Object.keys(CHECKS).filter((n) => !n.startsWith("broken:"))) sound(name);
  });

  describe("can fail: each deliberately broken protocol is caught", () => {
    for (const name of Object.keys(CHECKS).filter((n) => n.startsWith("broken:"))) caught(name);
  });
});
