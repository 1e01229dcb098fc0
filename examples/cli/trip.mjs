// A saga: two bookings that can be undone, then a payment that fails. `steplog compensate`
// cancels the bookings, newest first.
//
//   steplog run examples/cli/trip.mjs --id trip-1       # fails at "pay"
//   steplog compensate trip-1                           # ↶ hotel, ↶ flight

import { defineWorkflow } from "steplog";

export default defineWorkflow({
  name: "trip",
  async run(ctx) {
    const flight = await ctx.step("book-flight", { effect: "compensatable", compensate: async () => ({ cancelled: true }) }, async () => ({ ref: "FL-1" }));
    const hotel = await ctx.step("book-hotel", { effect: "compensatable", compensate: async () => ({ cancelled: true }) }, async () => ({ ref: "HO-1" }));
    await ctx.step("pay", async () => {
      throw new Error("card declined");
    });
    return { flight, hotel };
  },
});
