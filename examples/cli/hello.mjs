// A small "agent job" for the steplog command: plan, draft, publish. Each step does a little
// pretend work and reports what a model call would have cost with info.usage(...).
//
//   steplog run examples/cli/hello.mjs --id hello-1 -- '{"topic":"durable steps"}'
//   steplog show hello-1
//
// With "failFirst": "publish" in the args, publish throws on the run's first attempt, so
// `steplog run --continue --id …` has something to continue (plan and draft are reused).

import { z } from "zod";
import { defineWorkflow } from "steplog"; // this repo's own build (package self-reference)

const pause = (ms, signal) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason ?? new Error("aborted"));
    });
  });

export default defineWorkflow({
  name: "hello",
  version: "1.0.0",
  args: z.object({ topic: z.string(), failFirst: z.string().optional() }),
  async run(ctx, { topic, failFirst }) {
    const plan = await ctx.step("plan", async (info) => {
      await pause(120, info.signal);
      info.usage({ inputTokens: 1200, outputTokens: 300, costUsd: 0.0021 });
      return { title: `Notes on ${topic}`, sections: ["why", "how", "what next"] };
    });
    const draft = await ctx.step("draft", async (info) => {
      await pause(180, info.signal);
      info.usage({ inputTokens: 2500, outputTokens: 1400, costUsd: 0.0094 });
      return { words: plan.sections.length * 120 };
    });
    const post = await ctx.step("publish", async (info) => {
      await pause(60, info.signal);
      if (failFirst === "publish" && info.attempt === 1) throw new Error("the blog API answered 503 Service Unavailable");
      return { url: `https://blog.example/${encodeURIComponent(topic.replace(/\s+/g, "-"))}` };
    });
    return { title: plan.title, words: draft.words, url: post.url };
  },
});
