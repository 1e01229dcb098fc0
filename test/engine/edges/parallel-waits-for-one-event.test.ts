import { describe, expect, it } from "vitest";
import { createEngine } from "../../../src/engine/engine.js";
import { defineWorkflow } from "../../../src/workflow/define-workflow.js";
import { memoryStore } from "../../../src/store/memory.js";
import { sqliteStore } from "../../../src/store/sqlite/store.js";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

for (const [name, make] of [
  ["memory", () => memoryStore()],
  ["sqlite", () => sqliteStore({ path: path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rv-")), "s.db") })],
] as const) {
  describe(`two parallel waits for one event name (${name})`, () => {
    it("consume the two kept events in order", async () => {
      const wf = defineWorkflow({
        name: "pw",
        async run(ctx) {
          await ctx.waitForEvent("go");
          return Promise.all([ctx.waitForEvent("vote"), ctx.waitForEvent("vote")]);
        },
      });
      const engine = createEngine({ workflows: [wf], store: make() });
      expect((await engine.start(wf, undefined as never, { id: "w" })).status).toBe("waiting");
      await engine.send("w", "vote", "yes", { keep: true });
      await engine.send("w", "vote", "no", { keep: true });
      await engine.send("w", "go");
      const r = await engine.continue("w");
      expect(r.error).toBeUndefined();
      expect(r).toMatchObject({ status: "completed", value: ["yes", "no"] });
      await engine.close();
    });
  });
}
