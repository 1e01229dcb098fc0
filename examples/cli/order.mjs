// A run that waits: for an event (payment), then for a person's approval before shipping.
//
//   steplog run examples/cli/order.mjs --id order-1 -- '{"item":"book"}'   # parks: waits for "paid"
//   steplog send order-1 paid '{"amount":12}'
//   steplog work --until-idle                                           # parks again: approval of ship
//   steplog approve order-1 ship --by ana
//   steplog work --until-idle                                           # completes

import { defineWorkflow } from "steplog";

export default defineWorkflow({
  name: "order",
  async run(ctx, args) {
    const quote = await ctx.step("quote", async () => ({ item: args.item, amount: 12 }));
    const payment = await ctx.waitForEvent("paid");
    // What a person approves: the item and where it goes (the approval is bound to it).
    const shipped = await ctx.step(
      "ship",
      { approval: true, effect: "irreversible", input: { item: args.item, to: "ada@example.com" } },
      async ({ idempotencyKey }) => ({
        tracking: `T-${idempotencyKey}`,
      }),
    );
    return { quote, payment, shipped };
  },
});
