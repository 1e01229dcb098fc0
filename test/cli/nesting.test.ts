// `steplog show` and the HTML timeline put the steps that ran inside another step (a Claude Code
// session's tool calls, durableClaudeQuery names them `<session key>/tool:<name>:<id>`) under
// that step, indented and by their own name.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { buildTimeline } from "../../src/cli/timeline.js";
import { renderTimeline } from "../../src/cli/commands/show.js";
import { renderHtml } from "../../src/cli/html.js";
import { painter } from "../../src/cli/format.js";
import { nestedKeys } from "../../src/cli/nesting.js";

describe("steps inside a step, as shown", () => {
  it("show indents a session's tool calls under it, by the part of their name after the session's key", async () => {
    const store = memoryStore();
    const engine = createEngine({ store });
    const workflow = defineWorkflow({
      name: "sessions",
      async run(ctx) {
        const plan = await ctx.step("claude:planner", async () => {
          await ctx.step("claude:planner/tool:Read:toolu_1", async () => "# demo");
          return "PLAN";
        });
        const other = await ctx.step("claude:plannerx", async () => "not nested");
        return { plan, other };
      },
    });
    await engine.start(workflow, undefined, { id: "r" });
    const timeline = buildTimeline(await engine.get("r"), [], Date.now());
    const text = renderTimeline(timeline, painter(false), Date.now()).join("\n");
    expect(text).toMatch(/^ {2}✓ claude:planner +/m);
    expect(text).toMatch(/^ {4}✓ tool:Read:toolu_1 +/m);
    expect(text).toMatch(/^ {2}✓ claude:plannerx +/m);
    expect(text).not.toContain("claude:planner/tool");
    const html = renderHtml(timeline, Date.now());
    expect(html).toMatch(
      /<li class="row [a-z-]+ nested"><span class="label" style="padding-left:1.5em"><span class="glyph">✓<\/span> <span class="key">tool:Read:toolu_1<\/span>/,
    );
    await engine.close();
  });

  it("a repeated session's key (#2) is matched through its encoded form; a step without its outer step beside it is not nested", () => {
    const nested = nestedKeys(["claude:b", "claude:b#2", "claude:b%232/tool:Bash:t1", "claude:b/tool:Bash:t0", "claude:c/tool:Bash:t9"]);
    expect(Object.fromEntries(nested)).toEqual({
      "claude:b%232/tool:Bash:t1": { outer: "claude:b#2", rest: "tool:Bash:t1" },
      "claude:b/tool:Bash:t0": { outer: "claude:b", rest: "tool:Bash:t0" },
    });
  });
});
