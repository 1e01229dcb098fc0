// A tool call's step acts on the call's arguments (its input), and the frameworks' approval flags
// are step approvals, on the Vercel AI SDK (6 and 7): a continue that reaches a tool call's record
// with other arguments stops (STEP_INPUT_CHANGED) instead of handing back a result made for other
// arguments; a tool with `needsApproval` (or durableTools' `approval`) parks the run before the
// call, `approve` lets exactly that call run once, a rejection stops the run, and the SDK's own
// approval flow (a tool-approval-request, the tool never executed) does not also happen.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durableModel, durableTools } from "../../src/entries/agents.js";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { loadAiSdks } from "./ai-sdks.js";
import { scriptedModel, type ScriptedTurn } from "./mock-model.js";

const SDKS = await loadAiSdks();

const sendTo = (to: string, id = "call-1"): ScriptedTurn[] => [{ calls: [{ id, tool: "sendEmail", input: { to } }] }, { text: `Sent to ${to}.` }];

describe.each(SDKS)("AI SDK $major ($name): tool inputs and approvals", (sdk) => {
  const { generateText, stepCountIs, tool } = sdk.ai;

  /** The support agent: one sendEmail tool whose approval is set by `approval`; every email sent is in `sent`. */
  function agent(
    name: string,
    setup: {
      script: () => ScriptedTurn[];
      needsApproval?: unknown;
      approval?: unknown;
      /** The model not wrapped in durableModel: a continue asks it again (deterministic call ids). */
      unrecorded?: boolean;
      failAfter?: () => boolean;
    },
  ) {
    const sent: string[] = [];
    const requests: unknown[] = [];
    const workflow = defineWorkflow({
      name,
      async run(ctx) {
        const sendEmail = tool({
          inputSchema: z.object({ to: z.string() }),
          ...(setup.needsApproval === undefined ? {} : { needsApproval: setup.needsApproval }),
          execute: async ({ to }: { to: string }) => (sent.push(to), { messageId: `m-${sent.length}` }),
        } as never);
        const tools = durableTools(
          ctx,
          { sendEmail },
          { effects: { sendEmail: "irreversible" }, ...(setup.approval === undefined ? {} : { approval: setup.approval as never }) },
        );
        const model = scriptedModel(sdk, setup.script());
        const result = await generateText({ model: setup.unrecorded ? model : durableModel(ctx, model), tools, stopWhen: stepCountIs(4), prompt: "Tell Ada." });
        requests.push(...result.content.filter((p: { type: string }) => p.type === "tool-approval-request"));
        if (setup.failAfter?.()) throw new Error("later failure");
        return result.text;
      },
    });
    return { workflow, sent, requests };
  }

  it("a tool call's step records the call's arguments as its input", async () => {
    const { workflow } = agent("ai-input", { script: () => sendTo("ada@example.com") });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "completed", value: "Sent to ada@example.com." });
    const send = (await engine.get("r")).steps.find((s) => s.key === "tool:sendEmail:call-1")!;
    expect(send.input).toEqual({ to: "ada@example.com" });
    expect(send.inputDigest).toMatch(/^sha256:/);
    await engine.close();
  });

  it("a continue whose call has other arguments under the same call id stops (STEP_INPUT_CHANGED); redo sends the new one", async () => {
    let to = "ada@example.com";
    let fail = true;
    const { workflow, sent } = agent("ai-input-changed", { script: () => sendTo(to), unrecorded: true, failAfter: () => fail });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "failed", error: { message: "later failure" } });
    // The model (not recorded) answers otherwise on the continue, under the same call id.
    to = "bob@example.com";
    fail = false;
    const stopped = await engine.continue("r");
    expect(stopped).toMatchObject({ status: "stopped", error: { code: "STEP_INPUT_CHANGED", step: "tool:sendEmail:call-1" } });
    expect(stopped.error!.message).toContain("ada@example.com");
    expect(stopped.error!.message).toContain("bob@example.com");
    expect(sent).toEqual(["ada@example.com"]);
    expect(await engine.continue("r", { redo: ["tool:sendEmail:call-1"] })).toMatchObject({ status: "completed", value: "Sent to bob@example.com." });
    expect(sent).toEqual(["ada@example.com", "bob@example.com"]);
    await engine.close();
  });

  const GATES: Array<[string, { needsApproval?: unknown; approval?: unknown }]> = [
    ["the tool's needsApproval: true", { needsApproval: true }],
    ["the tool's needsApproval function", { needsApproval: (input: { to: string }) => input.to.endsWith("@example.com") }],
    ["durableTools' approval list", { approval: ["sendEmail"] }],
    ["durableTools' approval record with ai 7's toolApproval status", { approval: { sendEmail: "user-approval" } }],
    [
      "durableTools' approval as ai 7's generic toolApproval function",
      { approval: ({ toolCall }: { toolCall: { toolName: string } }) => (toolCall.toolName === "sendEmail" ? "user-approval" : undefined) },
    ],
  ];

  it.each(GATES)("%s: the run parks before the call; approve lets exactly that call run once; the SDK does not ask as well", async (_label, gate) => {
    const { workflow, sent, requests } = agent("ai-approval", { script: () => sendTo("ada@example.com"), ...gate });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({
      status: "waiting",
      waitingFor: { kind: "approval", step: "tool:sendEmail:call-1" },
    });
    expect(sent).toEqual([]);
    // Not approved yet: a continue parks again, the tool not run.
    expect(await engine.continue("r")).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: "tool:sendEmail:call-1" } });
    expect(sent).toEqual([]);
    await engine.approve("r", "tool:sendEmail:call-1", { by: "ana" });
    expect(await engine.continue("r")).toMatchObject({ status: "completed", value: "Sent to ada@example.com." });
    expect(sent).toEqual(["ada@example.com"]);
    expect(requests).toEqual([]);
    const send = (await engine.get("r")).steps.find((s) => s.key === "tool:sendEmail:call-1")!;
    expect(send).toMatchObject({ status: "succeeded", input: { to: "ada@example.com" }, value: { messageId: "m-1" } });
    await engine.close();
  });

  it("a needsApproval function that says no: the call runs without parking", async () => {
    const { workflow, sent } = agent("ai-approval-no", {
      script: () => sendTo("ada@elsewhere.org"),
      needsApproval: (input: { to: string }) => input.to.endsWith("@example.com"),
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "completed" });
    expect(sent).toEqual(["ada@elsewhere.org"]);
    await engine.close();
  });

  it("a rejected call never runs: the run ends stopped, and a continue asks again", async () => {
    const { workflow, sent } = agent("ai-approval-reject", { script: () => sendTo("ada@example.com"), needsApproval: true });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "waiting" });
    await engine.reject("r", "tool:sendEmail:call-1", { by: "ana", reason: "wrong customer" });
    expect(await engine.get("r")).toMatchObject({ status: "stopped", error: { code: "STOPPED" } });
    expect(sent).toEqual([]);
    // A continue asks again (the rejection is not an approval): parked, still not sent.
    expect(await engine.continue("r")).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: "tool:sendEmail:call-1" } });
    expect(sent).toEqual([]);
    await engine.close();
  });

  it('an approval rule answering "denied": the call is not run and the model is told so', async () => {
    const { workflow, sent } = agent("ai-approval-denied", {
      script: () => sendTo("ada@example.com"),
      approval: { sendEmail: { type: "denied", reason: "not on weekends" } },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [workflow] });
    expect(await engine.start(workflow, undefined, { id: "r" })).toMatchObject({ status: "completed" });
    expect(sent).toEqual([]);
    const send = (await engine.get("r")).steps.find((s) => s.key === "tool:sendEmail:call-1")!;
    expect(send.value).toEqual({ "steplog.toolError": { name: "ToolCallDenied", message: 'The call of tool "sendEmail" was denied: not on weekends.' } });
    await engine.close();
  });
});
