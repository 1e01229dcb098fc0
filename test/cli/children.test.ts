// Child runs through the steplog command, as examples/children/release.mjs tells a user to:
// the parent parks on its waiting child, show links them both ways, send wakes the child, and a
// worker finishes the child and then the parent (the child's workflow loaded from the parent's file).
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, cli, ROOT, TempDirs } from "./helpers.js";

const dirs = new TempDirs();
beforeAll(assertBuilt);
afterEach(() => dirs.cleanup());

const RELEASE = path.join(ROOT, "examples", "children", "release.mjs");

describe("child runs in the steplog command", () => {
  it("run parks on the child; show links parent and child; send and work complete both", async () => {
    const cwd = dirs.make();
    const started = await cli(["run", RELEASE, "--id", "rel-1", "--", '{"version":"2.1.0"}'], { cwd });
    // Parked: exit 1 (not completed), as for any run that waits. The child's lines name it.
    expect(started.code, started.output).toBe(1);
    expect(started.stdout).toContain("Run rel-1/review · review · attempt 1");
    expect(started.stdout).toContain("⏸ run rel-1/review attempt 1 waiting");
    expect(started.stdout).toMatch(/^⏸ attempt 1 waiting$/m);
    expect(started.stdout).toContain("Waits  for child run rel-1/review");

    const parent = await cli(["show", "rel-1"], { cwd });
    expect(parent.stdout).toMatch(/waiting +for child run rel-1\/review \(step review\)/);
    expect(parent.stdout).toMatch(/children +rel-1\/review review, waiting/);
    const child = await cli(["show", "rel-1/review"], { cwd });
    expect(child.stdout).toMatch(/parent +rel-1 \(steplog show rel-1\)/);
    const json = (await cli(["show", "rel-1/review", "--json"], { cwd })).json();
    expect(json).toMatchObject({ parent: "rel-1", children: [], source: RELEASE });

    expect((await cli(["send", "rel-1/review", "verdict", '"ship it"'], { cwd })).code).toBe(0);
    const worked = await cli(["work", "--until-idle", "--json"], { cwd });
    expect(worked.code, worked.output).toBe(0);
    const summary = worked.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; attempts?: Array<{ id: string; status: string }> })
      .find((l) => l.type === "summary")!;
    expect(summary.attempts!.map((a) => [a.id, a.status])).toEqual([
      ["rel-1/review", "completed"],
      ["rel-1", "completed"],
    ]);
    const done = (await cli(["show", "rel-1", "--json"], { cwd })).json();
    expect(done).toMatchObject({
      status: "completed",
      children: [{ id: "rel-1/review", status: "completed" }],
      value: { build: "build of 2.1.0", reviewed: { notes: "changes in 2.1.0", verdict: "ship it" }, published: "published 2.1.0 (rel-1:publish)" },
    });
  });

  it("cancel --children cancels the waiting child too; without it the child goes on waiting", async () => {
    const cwd = dirs.make();
    await cli(["run", RELEASE, "--id", "rel-2", "--", '{"version":"1"}'], { cwd });
    await cli(["run", RELEASE, "--id", "rel-3", "--", '{"version":"1"}'], { cwd });
    const cascaded = await cli(["cancel", "rel-2", "--children", "--json"], { cwd });
    expect(cascaded.code, cascaded.output).toBe(0);
    expect(cascaded.json()).toMatchObject({ id: "rel-2", runStatus: "cancelled" });
    expect((await cli(["show", "rel-2/review", "--json"], { cwd })).json()).toMatchObject({ status: "cancelled" });
    await cli(["cancel", "rel-3"], { cwd });
    expect((await cli(["show", "rel-3/review", "--json"], { cwd })).json()).toMatchObject({ status: "waiting" });
  });
});
