// durableClaudeQuery's bookkeeping with a stand-in for the SDK's query (the crash tests run the
// real SDK and binary: claude-crash.test.ts): a continue after a call was cut off inside its effect
// settles it by its tool's policy, re-driven (the resumed session's repeat runs, recorded under the
// cut-off call's step) or queried (found done: the model is told, and a repeat is refused).
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { durableClaudeQuery, type ClaudeMessageLike } from "../../src/entries/agents.js";

type Hook = (input: Record<string, unknown>, id: string | undefined, o: { signal: AbortSignal }) => Promise<Record<string, any>>;
interface Seen {
  prompt: string;
  resume: unknown;
  answers: Array<Record<string, any>>;
}

/** A query that plays one session: init, then each call through the hooks (PreToolUse, the tool, PostToolUse), then a result. */
function standIn(calls: Array<{ tool: string; input: Record<string, unknown>; id: string }>, seen: Seen[], ran: string[]) {
  return (params: { prompt: string; options?: Record<string, any> }): AsyncIterable<ClaudeMessageLike> => {
    const options = params.options ?? {};
    const hook = (event: string): Hook => options.hooks[event].at(-1).hooks[0];
    const entry: Seen = { prompt: params.prompt, resume: options.resume, answers: [] };
    seen.push(entry);
    return (async function* () {
      yield { type: "system", subtype: "init", session_id: (options.resume ?? options.sessionId) as string };
      for (const call of calls) {
        const signal = new AbortController().signal;
        const answer = await hook("PreToolUse")({ tool_name: call.tool, tool_input: call.input, tool_use_id: call.id }, call.id, { signal });
        entry.answers.push(answer);
        if (answer.hookSpecificOutput?.permissionDecision === "deny") continue;
        ran.push(call.id);
        await hook("PostToolUse")({ tool_name: call.tool, tool_input: call.input, tool_use_id: call.id, tool_response: { ok: call.id } }, call.id, { signal });
      }
      yield { type: "result", subtype: "success", result: "DONE", usage: { input_tokens: 10, output_tokens: 2 }, total_cost_usd: 0.001 };
    })();
  };
}

/** A run whose first attempt was cut off inside the call `tool` (its row intended, the run not ended). */
async function cutOffInside(store: ReturnType<typeof memoryStore>, key: string) {
  await store.updateRun("r", (current) => {
    const rows = current.steps.filter((s) => s.key === key || s.key === "claude:b");
    return {
      updateSteps: rows.map((row) => ({ seq: row.seq, patch: { status: "intended" as const, value: null, endedAt: null } })),
      run: { status: "failed" },
      result: true,
    };
  });
}

describe("durableClaudeQuery: a call cut off inside its effect, settled on the continue", () => {
  it("idempotent: re-driven; the resumed session's repeat (same tool, same input) runs under the cut-off call's step", async () => {
    const store = memoryStore();
    const engine = createEngine({ store });
    const seen: Seen[] = [];
    const ran: string[] = [];
    let calls = [{ tool: "Write", input: { file_path: "/w/a.txt", content: "a" }, id: "t1" }];
    const workflow = defineWorkflow({
      name: "stage",
      run: (ctx) => durableClaudeQuery(ctx, (p) => standIn(calls, seen, ran)(p), { prompt: "write a" }, { label: "b", effects: { Write: "idempotent" } }),
    });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "completed", value: "DONE" });
    const sessionId = (await engine.get("r")).steps.find((s) => s.key === "claude:b/session:1")!.value as { sessionId: string };
    await cutOffInside(store, "claude:b/tool:Write:t1");

    calls = [{ tool: "Write", input: { content: "a", file_path: "/w/a.txt" }, id: "t2" }];
    expect(await engine.continue("r")).toMatchObject({ status: "completed", value: "DONE" });
    expect(seen[1]).toMatchObject({ resume: sessionId.sessionId, answers: [{}] });
    expect(ran).toEqual(["t1", "t2"]);
    const view = await engine.get("r");
    // Attempt 1's row says it was cut off and re-driven; attempt 2's holds the repeat's result.
    expect(view.steps.filter((s) => s.key.includes("/tool:")).map((s) => [s.key, s.attempt, s.status, s.value])).toEqual([
      ["claude:b/tool:Write:t1", 1, "failed", undefined],
      ["claude:b/tool:Write:t1", 2, "succeeded", { ok: "t2" }],
    ]);
    expect(view.steps.find((s) => s.key === "claude:b" && s.status === "succeeded")!.usage).toMatchObject({ inputTokens: 10, outputTokens: 2, costUsd: 0.001 });
    await engine.close();
  });

  it("irreversible with a query that finds it done: recorded done before the session resumes, the model told; a repeat is refused with the result", async () => {
    const store = memoryStore();
    const engine = createEngine({ store });
    const seen: Seen[] = [];
    const ran: string[] = [];
    let calls = [{ tool: "Bash", input: { command: "deploy" }, id: "t1" }];
    const workflow = defineWorkflow({
      name: "stage",
      run: (ctx) =>
        durableClaudeQuery(
          ctx,
          (p) => standIn(calls, seen, ran)(p),
          { prompt: "deploy" },
          { label: "b", query: { Bash: async () => ({ done: true, value: { deployed: "v7" } }) } },
        ),
    });
    await engine.start(workflow, undefined, { id: "r" });
    await cutOffInside(store, "claude:b/tool:Bash:t1");

    calls = [{ tool: "Bash", input: { command: "deploy" }, id: "t2" }];
    expect(await engine.continue("r")).toMatchObject({ status: "completed" });
    expect(ran).toEqual(["t1"]);
    expect(seen[1]!.prompt).toContain('Its recorded result: {"deployed":"v7"}');
    expect(seen[1]!.answers[0]).toMatchObject({
      hookSpecificOutput: { permissionDecision: "deny", permissionDecisionReason: expect.stringContaining("already ran") },
    });
    const view = await engine.get("r");
    expect(view.steps.filter((s) => s.key.includes("/tool:")).map((s) => [s.key, s.status, s.value])).toEqual([
      ["claude:b/tool:Bash:t1", "succeeded", { deployed: "v7" }],
    ]);
    await engine.close();
  });

  it("refuses the options steplog sets, naming them", async () => {
    const engine = createEngine({ store: memoryStore() });
    const workflow = defineWorkflow({
      name: "stage",
      run: (ctx) => durableClaudeQuery(ctx, standIn([], [], []), { prompt: "x", options: { resume: "s" } }),
    });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({
      status: "failed",
      error: { code: "INVALID_OPTION", message: expect.stringContaining("options.resume is steplog's to set") },
    });
    await engine.close();
  });
});
