// The demo's workflow: a small "agent job" in three durable steps.
//
//   plan    → decide a title and an outline
//   draft   → write the post          (the first attempt is killed in here)
//   publish → put it online           (simulated: nothing leaves your machine)
//
// Each step does a couple hundred ms of pretend work and returns a small value that
// steplog records. Run it with `npm run demo` (see main.mjs).

import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { createEngine, defineWorkflow } from "../../dist/index.js";
import { sqliteStore } from "../../dist/sqlite.js";

const Plan = z.object({ title: z.string(), outline: z.array(z.string()) });
const Draft = z.object({ paragraphs: z.number().int(), words: z.number().int() });
const Post = z.object({ url: z.string(), words: z.number().int() });

export const writePost = defineWorkflow({
  name: "demo-write-post",
  version: "1.0.0",
  args: z.object({ topic: z.string() }),
  async run(ctx, { topic }) {
    const plan = await ctx.step("plan", { result: Plan }, async (info) => {
      tally(info);
      await work(200);
      return { title: `Notes on ${topic}`, outline: ["why", "how", "what next"] };
    });

    const draft = await ctx.step("draft", { result: Draft }, async (info) => {
      tally(info);
      let words = 0;
      for (const [i, section] of plan.outline.entries()) {
        await work(70);
        words += 80 + section.length;
        // The demo's crash: the first attempt kills its own process here, halfway through
        // this step's effect. SIGKILL cannot be caught, so no catch, finally or exit handler
        // runs and nothing gets written on the way down.
        if (i === 1 && process.env.STEPLOG_DEMO_CRASH_IN === "draft") {
          say(`! draft    ${i + 1} of ${plan.outline.length} sections written; now process.kill(${process.pid}, "SIGKILL")`);
          process.kill(process.pid, "SIGKILL");
          await new Promise(() => {}); // never reached: the process is gone
        }
      }
      return { paragraphs: plan.outline.length, words };
    });

    const post = await ctx.step("publish", { result: Post }, async (info) => {
      tally(info);
      await work(200);
      // A real publisher would take info.idempotencyKey, so a repeated call is a no-op.
      const slug = plan.title
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, "-")
        .replace(/^-|-$/g, "");
      return { url: `https://blog.example/${slug}`, words: draft.words };
    });

    return { title: plan.title, url: post.url, words: post.words };
  },
});

/**
 * The engine on the default store (.steplog/steplog.db under the working directory), or,
 * when STEPLOG_DEMO_DIR is set (the test does this), on a store in that directory.
 */
export function openEngine(onProgress) {
  const dir = process.env.STEPLOG_DEMO_DIR;
  return createEngine({
    workflows: [writePost],
    onProgress,
    ...(dir ? { store: sqliteStore({ path: storePath() }) } : {}),
  });
}

/** The demo's own evidence: one line per call of a step's function, in a side file. */
function tally(info) {
  const file = process.env.STEPLOG_DEMO_TALLY;
  if (!file) return;
  const line = { step: info.step, attempt: info.attempt, pid: process.pid, key: info.idempotencyKey, redrive: info.previous !== undefined };
  fs.appendFileSync(file, `${JSON.stringify(line)}\n`);
}

function work(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Where the demo's store is, relative to the working directory. */
export function storePath() {
  const dir = process.env.STEPLOG_DEMO_DIR;
  return dir ? path.join(dir, "steplog.db") : path.join(".steplog", "steplog.db");
}

/**
 * One line on stdout, written synchronously: the line printed just before the SIGKILL must
 * not sit in a stream buffer when the process dies (main.mjs relays the child's lines).
 */
export function say(line) {
  try {
    fs.writeSync(1, `${line}\n`);
  } catch {
    process.stdout.write(`${line}\n`);
  }
}
