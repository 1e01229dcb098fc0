// What a prune leaves in a SQLite file: the values of the pruned runs (args, step values, event
// payloads, results) are overwritten, not left in the file's free pages, once the WAL is
// checkpointed (as closing the last connection does); a kept run's values are still there.
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { tmpDb } from "../helpers/tmp.js";

const T0 = Date.UTC(2026, 0, 1);

const secretive = defineWorkflow({
  name: "secretive",
  async run(ctx, args: { secret: string }) {
    const value = await ctx.step("fetch", async () => `${args.secret}-step-${"x".repeat(300)}`);
    const note = await ctx.waitForEvent("note");
    return `${value}-${String(note)}-result`;
  },
});

describe("prune on the SQLite store", () => {
  it("leaves no value of a pruned run in the file once the WAL is checkpointed", async () => {
    const file = tmpDb();
    const clock = { at: T0, now: () => clock.at };
    const engine = createEngine({ store: sqliteStore({ path: file }), clock, workflows: [secretive] });
    const secrets = Array.from({ length: 30 }, (_, i) => `PRUNED${i}SECRET`);
    for (const [i, secret] of secrets.entries()) {
      await engine.start(secretive, { secret }, { id: `gone-${i}` });
      await engine.send(`gone-${i}`, "note", `${secret}-event`);
      clock.at += 10;
      expect((await engine.continue(`gone-${i}`)).status).toBe("completed");
    }
    clock.at = T0 + 1_000_000;
    await engine.start(secretive, { secret: "KEPTSECRET" }, { id: "kept" });
    await engine.send("kept", "note", "n");
    clock.at += 10;
    await engine.continue("kept");
    expect(await engine.prune({ endedBefore: T0 + 500_000 })).toMatchObject({ runs: 30 });
    await engine.close();
    const bytes = fs.readFileSync(file).toString("latin1");
    expect(fs.existsSync(`${file}-wal`) ? fs.statSync(`${file}-wal`).size : 0, "the WAL checkpointed at close").toBe(0);
    expect(bytes).toContain("KEPTSECRET-step");
    const left = secrets.filter((s) => bytes.includes(s));
    expect(left, "values of pruned runs still in the file").toEqual([]);
  });
});
