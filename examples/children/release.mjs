// A parent run with a child run: release starts review as a child (ctx.child) and waits for it.
// The review waits for a person's verdict, so both park and the process may exit; the verdict
// wakes the child, the child's end wakes the parent.
//
//   steplog run examples/children/release.mjs --id rel-1 -- '{"version":"2.1.0"}'   # parks: waits for child run rel-1/review
//   steplog show rel-1                                                                # links the child
//   steplog send rel-1/review verdict '"ship it"'
//   steplog work --until-idle                                                         # the review, then the release, complete
//
// The child's workflow is exported too: a child run records its parent's file as its source,
// and the steplog command loads the workflow of that name from it.

import { defineWorkflow } from "steplog";

export const review = defineWorkflow({
  name: "review",
  async run(ctx, args) {
    const notes = await ctx.step("notes", async () => `changes in ${args.version}`);
    const verdict = await ctx.waitForEvent("verdict");
    return { notes, verdict };
  },
});

export default defineWorkflow({
  name: "release",
  async run(ctx, args) {
    const build = await ctx.step("build", async () => `build of ${args.version}`);
    const reviewed = await ctx.child("review", review, { version: args.version });
    const published = await ctx.step("publish", { effect: "irreversible" }, async ({ idempotencyKey }) => `published ${args.version} (${idempotencyKey})`);
    return { build, reviewed, published };
  },
});
