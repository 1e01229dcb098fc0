// A workflow whose first attempt dies for real: step two kills its own process with SIGKILL
// (nothing can catch that), so the run is left interrupted with step two `intended`.
//
//   steplog run examples/cli/crash.mjs --id crash-1     # dies inside step two
//   steplog runs --status interrupted                   # finds it
//   steplog run --continue --id crash-1                 # ↺ one, step two re-driven, three
//
// The continue needs no file: the run recorded this file as its source when it started.

import { defineWorkflow } from "steplog";

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export default defineWorkflow({
  name: "crash-demo",
  async run(ctx) {
    const one = await ctx.step("one", async (info) => {
      await pause(50);
      info.usage({ costUsd: 0.004, inputTokens: 800, outputTokens: 200 });
      return { fetched: 3 };
    });
    const two = await ctx.step("two", async (info) => {
      await pause(50);
      if (info.attempt === 1) process.kill(process.pid, "SIGKILL");
      return { processed: one.fetched * 2, redriven: info.previous !== undefined };
    });
    const three = await ctx.step("three", async () => ({ saved: two.processed }));
    return { ...two, ...three };
  },
});
