// One long step: for trying Ctrl-C and `steplog cancel`.
//
//   steplog run examples/cli/slow.mjs --id slow-1 -- 30000
//       Ctrl-C: the step's signal aborts, the attempt ends cancelled, the run can be continued.
//   steplog run examples/cli/slow.mjs --id slow-2 -- '{"ms":30000,"stubborn":true}'
//       the step ignores its signal, so the first Ctrl-C waits for it; a second Ctrl-C exits at
//       once and the run reads interrupted.

import { defineWorkflow } from "steplog";

export default defineWorkflow({
  name: "slow",
  async run(ctx, args) {
    const { ms = 30_000, stubborn = false } = typeof args === "number" ? { ms: args } : (args ?? {});
    await ctx.step("warm-up", async () => "ready");
    return ctx.step(
      "long",
      ({ signal }) =>
        new Promise((resolve, reject) => {
          const timer = setTimeout(() => resolve({ waited: ms }), ms);
          if (!stubborn) {
            signal.addEventListener("abort", () => {
              clearTimeout(timer);
              reject(signal.reason ?? new Error("aborted"));
            });
          }
        }),
    );
  },
});
