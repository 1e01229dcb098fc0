// Ownership where pids mislead: a process in another pid namespace on the same host and kernel —
// a container that shares the host's name and the store's volume — holds a run. Its pid means
// nothing in this namespace (it is pid 1 there, and pid 1 here is another process), so a
// continue here must judge it by its lease alone: RUN_BUSY while the lease is live, and the step
// runs once. And two worker threads of one process where the kernel's boot id cannot be read
// (as off Linux): the thread is still recorded, so one thread never takes the other's run.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { spawnNode } from "../helpers/child.js";

const UNSHARE = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"];
const canUnshare = spawnSync(UNSHARE[0]!, [...UNSHARE.slice(1), "true"]).status === 0;
if (!canUnshare && !process.env.CI) console.warn("pid-namespace test skipped: `unshare --pid` needs root (CI runs it)");
const nsTest = canUnshare || process.env.CI ? it : it.skip;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "steplog-pidns-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const fixture = new URL("./fixtures/ns-holder.mjs", import.meta.url).pathname;
const threadsFixture = new URL("./fixtures/threads-one-process.mjs", import.meta.url).pathname;

describe("a holder in another pid namespace", () => {
  nsTest("is alive while its lease is: a continue from this namespace is RUN_BUSY and does not call the step", async () => {
    const file = path.join(dir, "ns.db");
    const release = path.join(dir, "release");
    const holder = spawnNode(fixture, [file, "r", release], { under: UNSHARE });
    await holder.ready;
    let calls = 0;
    const pay = defineWorkflow({ name: "pay", run: (ctx) => ctx.step("charge", async () => (calls++, "charged")) });
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [pay] });
    expect((await engine.get("r")).attempts[0]!.pid).toBe(1);
    expect((await engine.get("r")).status).toBe("running");
    await expect(engine.continue("r")).rejects.toMatchObject({ code: "RUN_BUSY" });
    expect(await engine.recover()).toEqual([]);
    fs.writeFileSync(release, "");
    const outcome = await holder.done;
    expect(outcome.report, holder.output()).toEqual({ pid: 1, status: "completed", attempt: 1 });
    expect(calls).toBe(0);
    expect((await engine.get("r")).status).toBe("completed");
    await engine.close();
  });
});

describe("two worker threads of one process with no boot id to read", () => {
  nsTest("the other thread's continue is RUN_BUSY; the holder completes", async () => {
    const file = path.join(dir, "no-boot.db");
    // A mount namespace of its own, with the boot id file hidden behind /dev/null (read as empty).
    const run = spawnNode(threadsFixture, [file, "r"], {
      under: ["unshare", "--mount", "sh", "-c", 'mount --bind /dev/null /proc/sys/kernel/random/boot_id && exec "$0" "$@"'],
    });
    const outcome = await run.done;
    expect(outcome.report, run.output()).toEqual({ worker: { error: "RUN_BUSY" }, main: { status: "completed", attempt: 1 }, bootId: null });
  });
});
