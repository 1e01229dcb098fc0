// Always fails, and allows two attempts: after the second the run is dead-lettered.
//
//   steplog run examples/cli/flaky.mjs --id flaky-1
//   steplog run --continue --id flaky-1          # the second and last attempt
//   steplog dead-letters
//   steplog run --continue --id flaky-1 --force  # a fresh budget

import { defineWorkflow } from "steplog";

export default defineWorkflow({
  name: "flaky",
  maxAttempts: 2,
  async run(ctx) {
    await ctx.step("fetch", async () => ({ ok: true }));
    return ctx.step("upload", async () => {
      throw new Error("ECONNRESET while uploading");
    });
  },
});
