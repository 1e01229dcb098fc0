// Flow control: at most one attempt per user at a time, however many workers run; a webhook
// delivered twice starts one run; urgent runs go first. A worker runs for a moment and each step
// prints when it starts and ends.
//
//   npm run build && node examples/flow/per-user.mjs [store-file]
import { createEngine, defineWorkflow } from "../../dist/index.js";
import { sqliteStore } from "../../dist/sqlite.js";

const sync = defineWorkflow({
  name: "sync-account",
  concurrency: { limit: 1, key: (args) => args.user }, // one sync per user at a time
  rateLimit: { limit: 20, periodMs: 1_000 }, // the provider allows 20 calls a second
  priority: (args) => (args.urgent ? 10 : 0),
  async run(ctx, args) {
    return ctx.step("sync", async () => {
      console.log(`start ${ctx.runId} (${args.user})`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      console.log(`end   ${ctx.runId} (${args.user})`);
      return `${args.user} synced`;
    });
  },
});

const engine = createEngine({ store: sqliteStore({ path: process.argv[2] ?? ".steplog/flow-example.db" }), workflows: [sync] });
const stop = new AbortController();
const worker = engine.work({ concurrency: 4, pollMs: 50, signal: stop.signal });
// Started together: ana's second run waits for her first; bo's runs beside them; the urgent one goes first among those waiting.
const started = await Promise.all([
  engine.start(sync, { user: "ana" }, { id: "ana-1" }),
  engine.start(sync, { user: "ana" }, { id: "ana-2" }),
  engine.start(sync, { user: "ana", urgent: true }, { id: "ana-urgent" }),
  engine.start(sync, { user: "bo" }, { id: "bo-1" }),
  // The same webhook twice: one run.
  engine.start(sync, { user: "cy" }, { id: "cy-hook", dedupeKey: "hook-42" }),
  engine.start(sync, { user: "cy" }, { dedupeKey: "hook-42" }),
]);
console.log(`started: ${started.map((r) => `${r.id} ${r.status}`).join(", ")}`);
while ((await engine.list({ workflow: "sync-account", status: "completed" })).length < 5) await new Promise((r) => setTimeout(r, 20));
stop.abort();
await worker;
await engine.close();
console.log("all done");
