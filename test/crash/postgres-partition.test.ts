// A worker cut off by a network partition while inside a claim transaction: no RST, no FIN, its
// connections go silent. The test's TCP proxy (node:net, on 127.0.0.1) carries the cut-off
// worker's connections to Postgres and, once armed, stops forwarding in both directions (without
// closing a socket) right after one of that worker's claims locked a run the healthy worker holds.
// The healthy worker connects directly. With a 3 s lease and the defaults otherwise, the server
// must end the cut-off transaction soon enough that the healthy worker's writes queued behind
// its lock keep their leases; the cut-off worker's own run is taken over once its lease ends.
// The cut-off worker runs under another host name (`unshare --uts`, which needs root; CI runs it),
// as a worker behind a partition would: a process on this host is known alive by its pid, one on
// another machine only by its lease.
// (The fixtures import dist/: run `npx tsup` first when calling vitest directly.)
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import net from "node:net";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { postgresStore } from "../../src/entries/postgres.js";
import { spawnNode, type ChildRun } from "../helpers/child.js";
import { tmpDir } from "../helpers/tmp.js";
import { until } from "../helpers/until.js";

const URL_ = process.env.STEPLOG_PG_URL;
if (!URL_) console.warn("postgres partition test skipped: set STEPLOG_PG_URL (e.g. STEPLOG_PG_URL=postgres://postgres@127.0.0.1:5432/test) to run it");
const ANOTHER_HOST = ["unshare", "--uts", "sh", "-c", 'hostname steplog-cut-off && exec "$0" "$@"'];
const canUnshare = spawnSync(ANOTHER_HOST[0]!, [...ANOTHER_HOST.slice(1), "true"]).status === 0;
if (URL_ && !canUnshare && !process.env.CI) console.warn("postgres partition test skipped: `unshare --uts` needs root (CI runs it)");
const suite = URL_ && (canUnshare || process.env.CI) ? describe : describe.skip;

const HEALTHY = fileURLToPath(new URL("./fixtures/pg-worker.mjs", import.meta.url));
const CUT_OFF = fileURLToPath(new URL("./fixtures/pg-cut-off.mjs", import.meta.url));
const LEASE_MS = 3000;
const schema = `steplog_p${process.pid}_${crypto.randomBytes(3).toString("hex")}`;
const HEALTHY_RUNS = ["a0", "a1", "a2", "a3"]; // pg-worker.mjs runs four at once
const CUT_OFF_RUN = "b0";

// The fixtures' definition; here only its first attempt runs, which parks on "go" before any step.
const flow = defineWorkflow({
  name: "pg-five",
  autoResume: true,
  maxAttempts: 20,
  async run(ctx) {
    await ctx.waitForEvent("go");
    throw new Error("the test process never runs steps");
  },
});

/**
 * A TCP proxy to the Postgres server. Armed, it watches each connection's exchanges; the first
 * claim (`… FOR UPDATE SKIP LOCKED`) on one of `runIds` whose answer says it locked the row is
 * let through, answer and all, and then every connection through the proxy goes silent: no byte
 * forwarded either way, no socket closed, and new connections accepted and never forwarded.
 */
async function partitionProxy(target: URL, runIds: string[]) {
  const sockets = new Set<net.Socket>();
  let armed = false;
  let cut: { at: number; runId: string } | undefined;
  const silence = () => {
    for (const socket of sockets) socket.pause();
  };
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on("error", () => {});
    if (cut) return void client.pause();
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(upstream);
    upstream.on("error", () => {});
    // What the client sent since the server was last ready for a query, and the answer so far.
    let sent = "";
    let reply = "";
    client.on("data", (chunk: Buffer) => {
      if (cut) return;
      if (armed) sent += chunk.toString("latin1");
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (cut) return;
      client.write(chunk);
      if (!armed) return;
      reply += chunk.toString("latin1");
      const runId = runIds.find((id) => sent.includes(id));
      if (sent.includes("SKIP LOCKED") && runId && reply.includes("SELECT 1\0")) {
        cut = { at: Date.now(), runId };
        silence();
      } else if (reply.includes("Z\0\0\0\x05")) {
        // ReadyForQuery: that exchange is over.
        sent = "";
        reply = "";
      }
    });
    const close = () => {
      if (cut) return; // a partition closes nothing
      client.destroy();
      upstream.destroy();
    };
    client.on("close", close);
    upstream.on("close", close);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  const url = new URL(target.href);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return {
    url: url.href,
    arm: () => (armed = true),
    get cut() {
      return cut;
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

let admin: pg.Pool | undefined;
afterAll(async () => {
  if (!admin) return;
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

suite("postgres: a worker cut off by a network partition inside a claim transaction", () => {
  it("with a 3 s lease, the healthy worker keeps its leases and completes its runs; the cut-off worker's run is taken over after its lease ends", async () => {
    const t0 = Date.now();
    const phases: string[] = [];
    const phase = (what: string) => phases.push(`${((Date.now() - t0) / 1000).toFixed(1)}s ${what}`);
    const children: ChildRun[] = [];
    const proxy = await partitionProxy(new URL(URL_!), HEALTHY_RUNS);
    admin = new pg.Pool({ connectionString: URL_, max: 2 });
    admin.on("error", () => {});
    const q = async <T = any>(sql: string, values: unknown[] = []) => (await admin!.query(sql, values)).rows as T[];
    const s = `"${schema}"`;
    try {
      // Five runs, each parked on "go"; the healthy worker's four get it now.
      const engine = createEngine({ store: postgresStore({ connectionString: URL_!, schema }), workflows: [flow], leaseMs: LEASE_MS });
      for (const id of HEALTHY_RUNS) expect((await engine.start(flow, undefined, { id })).status).toBe("waiting");
      for (const id of HEALTHY_RUNS) await engine.send(id, "go");
      await engine.close();

      const ledgerDir = tmpDir("steplog-pg-partition-");
      // Steps of 300 ms: the healthy worker writes on each of its runs several times a second.
      const env = { PG_SCHEMA: schema, LEDGER_DIR: ledgerDir, LEASE_MS: String(LEASE_MS), STEP_MS: "300", STEPS: "30" };
      const heldBy = async (pid: number | undefined) =>
        (
          await q<{ run_id: string }>(
            `SELECT l.run_id FROM ${s}.leases l JOIN ${s}.attempts a ON a.run_id = l.run_id AND a.number = l.attempt WHERE a.pid = $1`,
            [pid],
          )
        ).map((r) => r.run_id);

      // The worker to be cut off (through the proxy) starts its own run: 30 s of steps, so it is
      // still running when the partition comes, however slowly the processes start.
      const cutOff = spawnNode(CUT_OFF, [], {
        env: { ...env, STEP_MS: "1000", STEPLOG_PG_URL: proxy.url, RUN_ID: CUT_OFF_RUN, BUSY_IDS: HEALTHY_RUNS.join(",") },
        under: ANOTHER_HOST,
      });
      children.push(cutOff);
      await cutOff.ready;
      await until("the cut-off worker to hold its run", async () => (await heldBy(cutOff.child.pid)).includes(CUT_OFF_RUN), 30_000);
      phase("cut-off worker holds its run");

      // The healthy worker (straight to the server) takes its four runs, 9 s of steps each (and no
      // more: its four places are full until one ends).
      const healthy = spawnNode(HEALTHY, [], { env });
      children.push(healthy);
      await healthy.ready;
      await until("the healthy worker to hold its four runs", async () => (await heldBy(healthy.child.pid)).length === HEALTHY_RUNS.length, 30_000);
      phase("healthy holds its runs");

      // It tries to continue the healthy worker's runs; the partition falls inside one such claim.
      proxy.arm();
      cutOff.child.kill("SIGUSR1");
      await until("a claim of the cut-off worker to lock a healthy run", () => proxy.cut !== undefined, 30_000);
      const cut = proxy.cut!;
      phase(`cut inside the claim of ${cut.runId}`);
      const idleInClaim = () =>
        q(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle in transaction' AND query LIKE '%SKIP LOCKED%'`, [
          `steplog-cut-off-${cutOff.child.pid}`,
        ]);
      // The cut-off transaction holds the lock (the server has not ended it yet)...
      expect((await idleInClaim()).length, "the cut-off claim transaction sits idle, holding its lock").toBe(1);
      // ...until the server ends it, well within the lease; meanwhile the healthy worker's writes wait behind it.
      let waitedBehind = false;
      const waiting = () =>
        q(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND cardinality(pg_blocking_pids(pid)) > 0`, [`steplog-worker-${healthy.child.pid}`]);
      await until(
        "the server to end the cut-off claim transaction",
        async () => {
          waitedBehind ||= (await waiting()).length > 0;
          return (await idleInClaim()).length === 0;
        },
        30_000,
      );
      const heldFor = Date.now() - cut.at;
      phase(`the server ended it after ${heldFor} ms (the healthy worker's writes ${waitedBehind ? "were" : "were not"} seen waiting behind it)`);
      expect(waitedBehind, "the healthy worker's writes waited behind the cut-off claim's lock").toBe(true);

      await until(
        "every run to complete",
        async () => (await q(`SELECT 1 FROM ${s}.runs WHERE status = 'completed'`)).length === HEALTHY_RUNS.length + 1,
        60_000,
      );
      phase("all completed");
      cutOff.child.kill("SIGKILL");
      healthy.child.kill("SIGTERM");
      const outcome = await healthy.done;
      expect(outcome.code, outcome.stderr).toBe(0);

      const attempts = await q<{ run_id: string; number: number; pid: number; ending: string | null; started_at: string; replaced_expires_at: string | null }>(
        `SELECT run_id, number, pid, ending, started_at, replaced_expires_at FROM ${s}.attempts WHERE number > 1 OR run_id = $1 ORDER BY run_id, number`,
        [CUT_OFF_RUN],
      );
      const summary = `attempts: ${JSON.stringify(attempts)}; healthy worker: ${outcome.stdout.trim().split("\n").at(-1)}`;
      // The healthy worker never lost a lease: each of its runs completed in the one attempt it took (number 2, after the test's parked first one).
      for (const id of HEALTHY_RUNS) {
        expect(
          attempts.filter((a) => a.run_id === id).map((a) => [a.number, a.pid, a.ending]),
          `${id}; ${summary}`,
        ).toEqual([[2, healthy.child.pid, "completed"]]);
      }
      expect(outcome.report.endings, summary).toEqual({ completed: HEALTHY_RUNS.length + 1 });
      // The cut-off worker's run: its attempt never ended, and the healthy worker took it over once its lease had expired.
      const [first, mine, taker, ...more] = attempts.filter((a) => a.run_id === CUT_OFF_RUN);
      expect(more, summary).toEqual([]);
      expect([first?.ending, mine?.pid, mine?.ending, taker?.pid, taker?.ending], summary).toEqual([
        "waiting",
        cutOff.child.pid,
        null,
        healthy.child.pid,
        "completed",
      ]);
      expect(Number(taker!.started_at), summary).toBeGreaterThanOrEqual(Number(taker!.replaced_expires_at));
      // The claim transaction was ended within a third of the lease (and a little time to notice).
      expect(heldFor, summary).toBeLessThan(LEASE_MS / 3 + 1000);
      console.log(`postgres partition: ${phases.join("; ")}`);
    } catch (error) {
      const tails = children.map((c) => `pid ${c.child.pid}: ${c.output().slice(-800)}`).join("\n");
      const rows = await q(
        `SELECT r.id, r.status, a.number, a.pid, a.ending, a.error FROM ${s}.runs r LEFT JOIN ${s}.attempts a ON a.run_id = r.id ORDER BY r.id, a.number`,
      ).catch((e: Error) => e.message);
      throw new Error(`${(error as Error).message}\nphases: ${phases.join("; ")}\n${tails}\nruns and attempts: ${JSON.stringify(rows)}`, { cause: error });
    } finally {
      for (const c of children) c.child.kill("SIGKILL");
      proxy.close();
    }
  }, 120_000);
});
