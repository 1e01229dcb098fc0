// Three Claude Code sessions as the durable stages of one workflow: a planner, a builder and a
// reviewer (docs/agents.md, "Claude Agent SDK"). Each stage is a step whose value is the
// session's result; each tool call inside a session is a step of its own. A crash anywhere
// continues from the stage it was in: finished stages are handed back, the cut-off session is
// resumed, and a tool call that already ran is not run again.
//
// The test (test/agents/claude-crash.test.ts) runs it against a fake Messages API; with an
// ANTHROPIC_API_KEY it runs against the real one: node examples/claude/main.mjs.
import { defineWorkflow } from "../../dist/index.js";
import { durableClaudeQuery } from "../../dist/agents.js";

/**
 * The workflow. `args.cwd` is the checkout the sessions work in; `args.env` the environment
 * Claude Code runs with (the SDK's options.env replaces the whole environment: pass PATH).
 * `query` is the SDK's query function: import { query } from "@anthropic-ai/claude-agent-sdk";
 * `sdkOptions`, more of the SDK's options for every session.
 */
export function stagesWorkflow(query, sdkOptions = {}) {
  return defineWorkflow({
    name: "claude-stages",
    async run(ctx, { task, cwd, env }) {
      const options = (allowedTools) => ({ ...sdkOptions, cwd, env, allowedTools, maxTurns: 20 });

      const plan = await durableClaudeQuery(
        ctx,
        query,
        {
          prompt: `Plan this change, in at most five numbered steps. Read what you need; change nothing.\n\nTask: ${task}`,
          options: options(["Read", "Glob", "Grep"]),
        },
        { label: "planner", effects: { Read: "read", Glob: "read", Grep: "read" } },
      );

      const build = await durableClaudeQuery(
        ctx,
        query,
        { prompt: `Carry out this plan in the working directory, then say what you changed.\n\n${plan}`, options: options(["Read", "Write", "Edit", "Bash"]) },
        // Bash is left undeclared: irreversible (a command cut off by a crash escalates unless a query settles it).
        { label: "builder", effects: { Read: "read", Write: "idempotent", Edit: "idempotent" } },
      );

      const review = await durableClaudeQuery(
        ctx,
        query,
        {
          prompt: `Review this change against the plan. Answer APPROVED or CHANGES NEEDED, then why.\n\nPlan:\n${plan}\n\nChange:\n${build}`,
          options: options(["Read", "Grep"]),
        },
        { label: "reviewer", effects: { Read: "read", Grep: "read" } },
      );

      return { plan, build, review };
    },
  });
}
