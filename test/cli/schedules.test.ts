// steplog schedules (the schedules of the workflows a worker loads, with their next ticks) and
// steplog work starting a schedule's ticks, through the built bin.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, collect, spawnCli, TempDirs, waitForOutput, writeWorkflow } from "./helpers.js";

const dirs = new TempDirs();
beforeAll(assertBuilt);
afterEach(() => dirs.cleanup());

describe("steplog schedules", () => {
  it("lists each loaded workflow's schedule with its next ticks (text and --json); nothing loaded, or --next out of range", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(
      cwd,
      "digest.mjs",
      `export default defineWorkflow({ name: "digest", schedule: { cron: "0 9 * * 1-5", timezone: "Europe/Berlin", catchUp: "all" }, run: async () => "sent" });`,
    );
    const plain = writeWorkflow(cwd, "plain.mjs", `export default defineWorkflow({ name: "plain", run: async () => "ok" });`);

    const json = await cli(["schedules", "--workflow", file, "--workflow", plain, "--next", "3", "--json"], { cwd });
    expect(json.code, json.output).toBe(0);
    const [digest, ...others] = json.json<any[]>();
    expect(others).toEqual([]);
    expect(digest).toMatchObject({ workflow: "digest", cron: "0 9 * * 1-5", timezone: "Europe/Berlin", catchUp: "all", last: null, file });
    expect(digest.next).toHaveLength(3);
    const now = Date.now();
    for (const [i, tick] of digest.next.entries()) {
      const at = Date.parse(tick.at);
      expect(at).toBeGreaterThan(now);
      if (i > 0) expect(at).toBeGreaterThan(Date.parse(digest.next[i - 1].at));
      // A weekday, 09:00 in Berlin: 07:00 or 08:00 UTC.
      expect([1, 2, 3, 4, 5]).toContain(new Date(at).getUTCDay());
      expect(tick.runId).toBe(`digest@${tick.at.slice(0, 16)}Z`);
    }

    const text = await cli(["schedules", "--workflow", file], { cwd });
    expect(text.code, text.output).toBe(0);
    expect(text.stdout).toContain("digest 0 9 * * 1-5 (Europe/Berlin, catch-up all)");
    expect(text.stdout).toMatch(/last +no tick has a run yet/);
    expect(text.stdout).toMatch(new RegExp(`next +${digest.next[0].runId} +in `));
    expect(text.stdout).toContain(`from ${file}`);

    const none = await cli(["schedules"], { cwd });
    expect(none.code, none.output).toBe(0);
    expect(none.stdout).toMatch(/No workflow loaded: give the workflow files with --workflow FILE/);
    expect((await cli(["schedules", "--workflow", plain], { cwd })).stdout).toMatch(/No schedule in the workflows loaded \(plain\)/);
    expect((await cli(["schedules", "--workflow", file, "--next", "101"], { cwd })).code).toBe(2);
  });

  it("steplog work starts the ticks of a loaded workflow's schedule, recording its file as the source; schedules then shows the last one", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(
      cwd,
      "beat.mjs",
      `export default defineWorkflow({ name: "beat", schedule: { cron: "* * * * * *" }, run: async (ctx) => ctx.step("pulse", async () => ctx.runId) });`,
    );
    const child = spawnCli(["work", "--workflow", file, "--poll", "100ms"], { cwd });
    const done = collect(child, 20_000);
    await waitForOutput(child, (t) => (t.match(/beat@\S+Z +completed/g) ?? []).length >= 2);
    child.kill("SIGINT");
    const worked = await done;
    expect(worked.code, worked.output).toBe(130);
    expect(worked.stdout).toMatch(/schedule of beat: \* \* \* \* \* \* \(UTC, catch-up latest\), next tick \d{4}-/);

    const runs = (await cli(["runs", "--json"], { cwd })).json<Array<{ id: string; status: string; source: string }>>();
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const run of runs) {
      expect(run.id).toMatch(/^beat@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(run.source).toBe(file);
    }
    const [listed] = (await cli(["schedules", "--workflow", file, "--json"], { cwd })).json<any[]>();
    const newest = runs
      .map((r) => r.id)
      .sort()
      .at(-1);
    expect(listed.last).toMatchObject({ runId: newest, status: runs.find((r) => r.id === newest)!.status });
  });
});
