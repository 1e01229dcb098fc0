// The app case 11 installs steplog into and runs (and test/package/first-run.test.ts): the
// README's shape, two steps on the SQLite store with the driver left to "auto". It prints one
// JSON line: the run's result, the driver that opened the file, and when the run completed.
import { z } from "zod";
import { createEngine, defineWorkflow } from "steplog";
import { sqliteStore } from "steplog/sqlite";

const greet = defineWorkflow({
  name: "greet",
  args: z.object({ name: z.string() }),
  async run(ctx, { name }) {
    const text = await ctx.step("greet", async () => `hello ${name}`);
    return ctx.step("shout", async () => text.toUpperCase());
  },
});

const store = sqliteStore({ path: ".steplog/steplog.db" });
const engine = createEngine({ store, workflows: [greet] });
const run = await engine.start(greet, { name: "ada" }, { id: "first-run" });
const completedAt = Date.now();
const driver = store.pragmas()?.driver;
await engine.close();
console.log(JSON.stringify({ status: run.status, value: run.value, driver, completedAt }));
