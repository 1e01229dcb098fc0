// An irreversible step cut off by a crash goes to the human queue: steplog never guesses
// whether a charge happened.
//
//   steplog run examples/cli/charge.mjs --id charge-1    # dies inside "charge"
//   steplog run --continue --id charge-1                 # ends escalated
//   steplog escalations
//   steplog resolve charge-1 charge --value '{"id":"ch_1"}' --by ana
//   steplog run --continue --id charge-1                 # completes, charge not repeated

import { defineWorkflow } from "steplog";

export default defineWorkflow({
  name: "charge",
  async run(ctx) {
    const cart = await ctx.step("cart", async () => ({ total: 4200 }));
    const charge = await ctx.step("charge", { effect: "irreversible" }, async (info) => {
      if (info.attempt === 1) process.kill(process.pid, "SIGKILL");
      return { id: `ch_${info.attempt}` };
    });
    return ctx.step("receipt", async () => ({ charge: charge.id, total: cart.total }));
  },
});
