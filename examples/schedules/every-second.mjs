// A schedule with a seconds field: a worker runs for three seconds and starts one run per tick,
// each with the id every-second@<tick>. Run a second copy at the same time on the same store and
// each tick still has exactly one run.
//
//   npm run build && node examples/schedules/every-second.mjs [store-file]
import { createEngine, defineWorkflow } from "../../dist/index.js";
import { sqliteStore } from "../../dist/sqlite.js";

const everySecond = defineWorkflow({
  name: "every-second",
  schedule: { cron: "* * * * * *", args: (tick) => ({ tick: tick.toISOString() }) },
  async run(ctx, args) {
    return ctx.step("stamp", async () => `ran for ${args.tick}`);
  },
});

const path = process.argv[2] ?? ".steplog/schedules-example.db";
const engine = createEngine({ store: sqliteStore({ path }), workflows: [everySecond] });
const stop = new AbortController();
setTimeout(() => stop.abort(), Number(process.env.RUN_FOR_MS ?? 3000));
const { attempts } = await engine.work({ pollMs: 200, signal: stop.signal });
for (const a of attempts) console.log(`${a.id} ${a.status} ${JSON.stringify(a.value)}`);
const [schedule] = await engine.schedules({ next: 1 });
console.log(`next tick: ${schedule.next[0].runId}`);
await engine.close();
