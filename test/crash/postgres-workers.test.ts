// Many workers, one Postgres database: four worker processes (engine.work, concurrency 4) share
// 200 runs of five steps; one is SIGKILLed mid-run and another SIGSTOPped past its lease, then
// woken. Every run completes, no succeeded step's function runs twice, no run is ever held by two
// live attempts, and every extra call is a re-drive of a step cut off in a crashed or fenced
// attempt. (The fixture imports dist/: run `npm run build` first when calling vitest directly.)
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { postgresStore } from "../../src/entries/postgres.js";
import { tmpDir } from "../helpers/tmp.js";
import { spawnNode, type ChildRun } from "../helpers/child.js";

const URL_ = process.env.STEPLOG_PG_URL;
if (!URL_) {
  console.warn("postgres multi-process tests skipped: set STEPLOG_PG_URL (e.g. STEPLOG_PG_URL=postgres://postgres@127.0.0.1:5432/test) to run them");
}
const suite = URL_ ? describe : describe.skip;

const WORKER = fileURLToPath(new URL("./fixtures/pg-worker.mjs", import.meta.url));
const RUNS = 200;
const STEPS = ["s1", "s2", "s3", "s4", "s5"];
const LEASE_MS = 1500;
const schema = `steplog_w${process.pid}_${crypto.randomBytes(3).toString("hex")}`;

// The fixture's definition; here only its first attempt runs, which parks on "go" before any step.
const flow = defineWorkflow({
  name: "pg-five",
  autoResume: true,
  maxAttempts: 20,
  async run(ctx) {
    await ctx.waitForEvent("go");
    throw new Error("the test process never runs steps");
  },
});

function spawnWorker(ledgerDir: string) {
  return spawnNode(WORKER, [], { env: { PG_SCHEMA: schema, LEDGER_DIR: ledgerDir, LEASE_MS: String(LEASE_MS), STEP_MS: "25" } });
}

interface Call {
  run: string;
  step: string;
  idempotencyKey: string;
  pid: number;
  attempt: number;
}

// While workers run, a read can catch a line half-appended: counting calls then looks only at
// whole lines. Once every worker has exited (`final`), text after the last newline is an error.
function readLedger(dir: string, final = false): Call[] {
  const calls: Call[] = [];
  for (const file of fs.readdirSync(dir).filter((f) => f.startsWith("ledger-"))) {
    const lines = fs.readFileSync(path.join(dir, file), "utf8").split("\n");
    const tail = lines.pop()!;
    if (final && tail.trim()) throw new Error(`${file} ends in a line without its newline: ${JSON.stringify(tail)}`);
    for (const line of lines) if (line.trim()) calls.push(JSON.parse(line));
  }
  return calls;
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

let admin: pg.Pool | undefined;
afterAll(async () => {
  if (!admin) return;
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

suite("postgres: many worker processes on one database", () => {
  it("four workers, 200 runs × 5 steps, one worker SIGKILLed and one SIGSTOPped past its lease: every run completes exactly as the policies allow", async () => {
    const t0 = Date.now();
    // Where the test got to, shown if it fails.
    const phases: string[] = [];
    const phase = (what: string) => phases.push(`${((Date.now() - t0) / 1000).toFixed(1)}s ${what}`);
    const failWith = (error: unknown): never => {
      const tails = workers.map((w, i) => `worker ${i} (pid ${w.child.pid}): ${w.output().slice(-600)}`).join("\n");
      throw new Error(`${(error as Error).message}\nphases: ${phases.join("; ")}\n${tails}`, { cause: error });
    };
    let workers: ChildRun[] = [];
    const pool = new pg.Pool({ connectionString: URL_, max: 3 });
    pool.on("error", () => {});
    try {
      await pool.query("SELECT 1");
      admin = pool;
    } catch (error) {
      await pool.end();
      throw new Error(`STEPLOG_PG_URL is set but the server cannot be reached: ${(error as Error).message}`);
    }
    const q = async <T = any>(sql: string, values: unknown[] = []) => (await admin!.query(sql, values)).rows as T[];
    const s = `"${schema}"`;

    // 200 runs, each parked on "go".
    const engine = createEngine({ store: postgresStore({ connectionString: URL_!, schema }), workflows: [flow], leaseMs: LEASE_MS });
    const ids = Array.from({ length: RUNS }, (_, i) => `r${String(i).padStart(3, "0")}`);
    for (let i = 0; i < RUNS; i += 20) {
      const parked = await Promise.all(ids.slice(i, i + 20).map((id) => engine.start(flow, undefined, { id })));
      for (const p of parked) expect(p.status).toBe("waiting");
    }

    const ledgerDir = tmpDir("steplog-pg-ledger-");
    workers = Array.from({ length: 4 }, () => spawnWorker(ledgerDir));
    try {
      await Promise.all(workers.map((w) => w.ready));
      const [killed, stopped] = [workers[0]!, workers[1]!];
      const t1 = Date.now();
      for (let i = 0; i < RUNS; i += 20) await Promise.all(ids.slice(i, i + 20).map((id) => engine.send(id, "go")));
      phase("go sent");

      // The runs a worker holds; and a way to stop it at a moment it holds one (else the test would
      // prove nothing). A worker may finish the run it held between the check and the signal, so
      // it is let go and stopped again until it is caught holding one.
      const heldBy = (pid: number | undefined) =>
        q<{ run_id: string; epoch: string }>(
          `SELECT l.run_id, l.epoch FROM ${s}.leases l JOIN ${s}.attempts a ON a.run_id = l.run_id AND a.number = l.attempt WHERE a.pid = $1`,
          [pid],
        );
      const stopWhileHolding = async (child: ChildRun["child"], who: string) => {
        for (let tries = 0; tries < 50; tries++) {
          if (tries > 0) child.kill("SIGCONT");
          await until(async () => (await heldBy(child.pid)).length > 0, 30_000, `${who} to hold a run`);
          child.kill("SIGSTOP");
          const at = Date.now();
          await new Promise((resolve) => setTimeout(resolve, 100)); // statements it had sent already finish
          const held = await heldBy(child.pid);
          if (held.length > 0) return { held, at };
        }
        return { held: [], at: Date.now() };
      };

      // SIGKILL one worker mid-run, while it holds a run (stopped first, so it cannot let go of it
      // between the check and the kill).
      await until(() => readLedger(ledgerDir).length >= 150, 30_000, "150 step calls");
      expect((await stopWhileHolding(killed.child, "the worker to be killed")).held.length, "the killed worker held runs").toBeGreaterThan(0);
      const killedAt = Date.now();
      killed.child.kill("SIGKILL");
      phase("killed");

      // Freeze another one, and keep it frozen until every run it held was taken over (its leases
      // expire after LEASE_MS; a transaction it froze inside is ended by the server after 5 s).
      await until(() => readLedger(ledgerDir).length >= 300, 30_000, "300 step calls");
      const { held: frozen, at: stoppedAt } = await stopWhileHolding(stopped.child, "the worker to be frozen");
      phase("stopped");
      expect(frozen.length, "the frozen worker held runs").toBeGreaterThan(0);
      await until(
        async () => {
          const now = await q<{ run_id: string; epoch: string; attempt: number | null }>(
            `SELECT run_id, epoch, attempt FROM ${s}.leases WHERE run_id = ANY($1)`,
            [frozen.map((f) => f.run_id)],
          );
          return now.every((l) => Number(l.epoch) > Number(frozen.find((f) => f.run_id === l.run_id)!.epoch));
        },
        30_000,
        "the frozen worker's runs to be taken over",
      );
      const frozenFor = Date.now() - stoppedAt;
      stopped.child.kill("SIGCONT");
      phase(`continued (held ${frozen.length} runs)`);

      await until(async () => (await q(`SELECT 1 FROM ${s}.runs WHERE status <> 'completed'`)).length === 0, 45_000, "every run to complete");
      const t2 = Date.now();
      for (const w of workers.slice(1)) w.child.kill("SIGTERM");
      phase("all completed; SIGTERM");
      const outcomes = await Promise.race([
        Promise.all(workers.map((w) => w.done)),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error("a worker did not exit within 15 s of SIGTERM")), 15_000)),
      ]);
      phase("workers exited");
      expect(outcomes[0]!.signal).toBe("SIGKILL");
      for (const o of outcomes.slice(1)) expect(o.code, o.stderr).toBe(0);
      await engine.close();

      // ---- what the database and the ledger say ----
      const runs = await q<{ id: string; status: string; value: string }>(`SELECT id, status, value FROM ${s}.runs ORDER BY id`);
      expect(runs).toHaveLength(RUNS);
      for (const run of runs) {
        expect(run.status).toBe("completed");
        expect(JSON.parse(run.value)).toBe(STEPS.map((step) => `${run.id}:${step}`).join(","));
      }
      const attempts = await q<{
        run_id: string;
        number: number;
        pid: number;
        ending: string | null;
        started_at: string;
        epoch: string;
        claimed_at: Date;
        claimed_us: string;
        replaced_expires_at: string | null;
      }>(
        `SELECT run_id, number, pid, ending, started_at, epoch, claimed_at, (extract(epoch FROM claimed_at) * 1000000)::bigint AS claimed_us, replaced_expires_at FROM ${s}.attempts ORDER BY run_id, number`,
      );
      const steps = await q<{ run_id: string; seq: number; attempt: number; key: string; status: string; written_epoch: string; written_us: string }>(
        `SELECT run_id, seq, attempt, key, status, written_epoch, (extract(epoch FROM written_at) * 1000000)::bigint AS written_us FROM ${s}.steps ORDER BY run_id, seq`,
      );
      const calls = readLedger(ledgerDir, true);
      const attemptsOf = (runId: string) => attempts.filter((a) => a.run_id === runId);
      // An attempt that never recorded an ending, and that a later attempt replaced: it crashed or was fenced out.
      const cutOff = new Set(
        attempts.filter((a) => a.ending === null && attemptsOf(a.run_id).some((b) => b.number > a.number)).map((a) => `${a.run_id}#${a.number}`),
      );

      // Every step succeeded exactly once; every extra call is a re-drive of a step cut off in a crashed or fenced attempt.
      const extraPerAttempt = new Map<string, number>();
      for (const id of ids) {
        for (const key of STEPS) {
          const succeeded = steps.filter((r) => r.run_id === id && r.key === key && r.status === "succeeded");
          expect(succeeded, `${id} ${key}`).toHaveLength(1);
          const mine = calls.filter((c) => c.run === id && c.step === key);
          expect(new Set(mine.map((c) => c.idempotencyKey))).toEqual(new Set([`${id}:${key}`]));
          // The call whose value was recorded, once; after it, nobody called the function again.
          expect(
            mine.filter((c) => c.attempt === succeeded[0]!.attempt),
            `${id} ${key}`,
          ).toHaveLength(1);
          for (const extra of mine.filter((c) => c.attempt !== succeeded[0]!.attempt)) {
            const tag = `${id}#${extra.attempt}`;
            expect(cutOff.has(tag), `call of ${id} ${key} by attempt ${extra.attempt} (pid ${extra.pid}) is explained by a crashed or fenced attempt`).toBe(
              true,
            );
            expect(extra.attempt).toBeLessThan(succeeded[0]!.attempt);
            extraPerAttempt.set(tag, (extraPerAttempt.get(tag) ?? 0) + 1);
          }
        }
      }
      // Steps run one at a time, so an attempt cut off re-drives at most the one step it was in.
      for (const [tag, n] of extraPerAttempt) expect(n, tag).toBe(1);
      const extras = [...extraPerAttempt.values()].reduce((a, b) => a + b, 0);
      expect(calls.length).toBe(RUNS * STEPS.length + extras);
      expect(extras).toBeLessThanOrEqual(cutOff.size);

      // No run held by two live attempts: a takeover only from a holder whose lease had expired (by
      // the taker's clock) or whose process was dead...
      const byPid = (pid: number | undefined) => attempts.filter((a) => a.pid === pid);
      for (const a of attempts) {
        const before = attemptsOf(a.run_id).find((b) => b.number === a.number - 1);
        if (!before || !cutOff.has(`${a.run_id}#${before.number}`)) continue;
        expect(a.replaced_expires_at, `${a.run_id} attempt ${a.number} took a lease that was held`).not.toBeNull();
        const expired = Number(a.replaced_expires_at) <= Number(a.started_at);
        const holderDead = before.pid === killed.child.pid && a.claimed_at.getTime() >= killedAt;
        expect(
          expired || holderDead,
          `${a.run_id}: attempt ${a.number} took over from attempt ${before.number} (pid ${before.pid}) while its lease was live`,
        ).toBe(true);
      }
      // ...and no step row written under an epoch after a later epoch was taken (server clock, in lock order).
      for (const row of steps) {
        const later = attemptsOf(row.run_id).filter((a) => Number(a.epoch) > Number(row.written_epoch));
        for (const a of later)
          expect(Number(row.written_us), `${row.run_id} seq ${row.seq} written under epoch ${row.written_epoch} after epoch ${a.epoch} began`).toBeLessThan(
            Number(a.claimed_us),
          );
      }
      // The test did what it says: both the killed and the frozen worker lost runs to the others.
      const tookOverFrom = (pid: number | undefined) => byPid(pid).filter((a) => cutOff.has(`${a.run_id}#${a.number}`)).length;
      expect(tookOverFrom(killed.child.pid)).toBeGreaterThan(0);
      expect(tookOverFrom(stopped.child.pid)).toBeGreaterThan(0);
      for (const a of byPid(killed.child.pid)) expect(a.claimed_at.getTime()).toBeLessThan(killedAt);

      console.log(
        `postgres workers: ${RUNS} runs in ${((t2 - t1) / 1000).toFixed(1)} s (setup ${((t1 - t0) / 1000).toFixed(1)} s), ` +
          `${calls.length} calls (${extras} re-drives), ${attempts.length} attempts, ${cutOff.size} cut off ` +
          `(killed pid: ${tookOverFrom(killed.child.pid)}, frozen pid: ${tookOverFrom(stopped.child.pid)}, frozen ${frozenFor} ms); ` +
          `workers: ${outcomes
            .slice(1)
            .map((o) => o.stdout.trim().split("\n").at(-1))
            .join(" ")}`,
      );
    } catch (error) {
      for (const w of workers) w.child.kill("SIGKILL");
      failWith(error);
    }
  }, 120_000);
});
