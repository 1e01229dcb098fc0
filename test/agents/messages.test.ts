// messagesFromSteps on step logs written by hand: what it reads, in what order, and what it
// refuses to make up (a tool call without an outcome).
import { describe, expect, it } from "vitest";
import { messagesFromSteps, pendingToolCalls, readTurn, ToolCallPendingError, type StepRowLike } from "../../src/entries/agents.js";

const openaiTurn = (content: string | null, calls: Array<[string, string, object]> = []) => ({
  choices: [
    {
      message: {
        role: "assistant",
        content,
        ...(calls.length
          ? { tool_calls: calls.map(([id, name, args]) => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } })) }
          : {}),
      },
    },
  ],
});

let seq = 0;
const row = (key: string, status: string, value?: unknown): StepRowLike => ({
  seq: ++seq,
  key,
  name: key.replace(/#\d+$/, ""),
  status,
  ...(value === undefined ? {} : { value }),
});

describe("messagesFromSteps", () => {
  const complete = () => [
    row("plan-outline", "succeeded", "not a turn: left out"),
    row(
      "model",
      "succeeded",
      openaiTurn("Looking up.", [
        ["c1", "lookup", { id: 1 }],
        ["c2", "lookup", { id: 2 }],
      ]),
    ),
    row("tool:lookup:c1", "succeeded", { name: "Ada" }),
    row("tool:lookup:c2", "succeeded", { "steplog.toolError": { name: "Error", message: "no such customer" } }),
    row("model#2", "succeeded", openaiTurn(null, [["c3", "send", { to: "ada" }]])),
    row("tool:send:c3", "succeeded", "sent"),
    row("model#3", "succeeded", openaiTurn("Done.")),
  ];

  it("openai: assistant turns with tool_calls, then one tool message per call; errors as {error}", () => {
    expect(messagesFromSteps(complete())).toEqual([
      {
        role: "assistant",
        content: "Looking up.",
        tool_calls: [
          { id: "c1", type: "function", function: { name: "lookup", arguments: '{"id":1}' } },
          { id: "c2", type: "function", function: { name: "lookup", arguments: '{"id":2}' } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: '{"name":"Ada"}' },
      { role: "tool", tool_call_id: "c2", content: '{"error":"no such customer"}' },
      { role: "assistant", content: null, tool_calls: [{ id: "c3", type: "function", function: { name: "send", arguments: '{"to":"ada"}' } }] },
      { role: "tool", tool_call_id: "c3", content: "sent" },
      { role: "assistant", content: "Done." },
    ]);
  });

  it("ai-sdk: ModelMessage assistant and tool messages, outputs typed json / text / error-text", () => {
    const messages = messagesFromSteps(complete(), { format: "ai-sdk" });
    expect(messages[1]).toEqual({
      role: "tool",
      content: [
        { type: "tool-result", toolCallId: "c1", toolName: "lookup", output: { type: "json", value: { name: "Ada" } } },
        { type: "tool-result", toolCallId: "c2", toolName: "lookup", output: { type: "error-text", value: "no such customer" } },
      ],
    });
    expect(messages[3]).toEqual({
      role: "tool",
      content: [{ type: "tool-result", toolCallId: "c3", toolName: "send", output: { type: "text", value: "sent" } }],
    });
    expect(messages.map((m) => m.role)).toEqual(["assistant", "tool", "assistant", "tool", "assistant"]);
  });

  it("ai-sdk with aiSdk: 7: a tool error's text is String(error), as AI SDK 7 gives it to the model; another value is refused", () => {
    const rows = [
      row(
        "model",
        "succeeded",
        openaiTurn(null, [
          ["c1", "t", {}],
          ["c2", "t", {}],
        ]),
      ),
      row("tool:t:c1", "succeeded", { "steplog.toolError": { name: "TypeError", message: "bad input" } }),
      row("tool:t:c2", "succeeded", { "steplog.toolError": { name: "Error", message: "" } }),
    ];
    const outputs = (aiSdk?: 6 | 7) =>
      (messagesFromSteps(rows, { format: "ai-sdk", ...(aiSdk ? { aiSdk } : {}) })[1]!.content as Array<{ output: unknown }>).map((c) => c.output);
    expect(outputs(7)).toEqual([
      { type: "error-text", value: String(new TypeError("bad input")) },
      { type: "error-text", value: String(new Error("")) },
    ]);
    expect(outputs()).toEqual(outputs(6));
    expect(outputs(6)).toEqual([
      { type: "error-text", value: "bad input" },
      { type: "error-text", value: "" },
    ]);
    expect(() => messagesFromSteps(rows, { format: "ai-sdk", aiSdk: 8 as never })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
  });

  it("takes each key's latest row, in the order keys first appeared (a redone step keeps its place)", () => {
    const rows = complete();
    rows.splice(6, 0, row("tool:send:c3", "succeeded", "sent again, redone"));
    rows[5] = { ...rows[5]!, status: "failed", value: undefined };
    expect(messagesFromSteps({ steps: rows }).find((m) => m.role === "tool" && m.tool_call_id === "c3")).toEqual({
      role: "tool",
      tool_call_id: "c3",
      content: "sent again, redone",
    });
  });

  it("a tool call without an outcome: throws by default, naming it; omit ends before its turn; include keeps the turn", () => {
    const rows = complete().slice(0, 5).concat(row("tool:send:c3", "intended"));
    expect(() => messagesFromSteps(rows)).toThrow(ToolCallPendingError);
    expect(() => messagesFromSteps(rows)).toThrow(/"tool:send:c3" \(intended\).*engine\.continue/);
    expect(messagesFromSteps(rows, { pending: "omit" }).map((m) => m.role)).toEqual(["assistant", "tool", "tool"]);
    expect(messagesFromSteps(rows, { pending: "include" }).map((m) => m.role)).toEqual(["assistant", "tool", "tool", "assistant"]);
    expect(pendingToolCalls(rows)).toEqual([{ key: "tool:send:c3", toolName: "send", toolCallId: "c3", status: "intended", turn: "model#2" }]);
    // A call whose step was never entered counts as pending too.
    expect(pendingToolCalls(complete().slice(0, 5))).toEqual([{ key: "tool:send:c3", toolName: "send", toolCallId: "c3", status: "missing", turn: "model#2" }]);
  });

  it("a model turn without an outcome ends the history (a continue asks it again)", () => {
    const rows = complete().slice(0, 4).concat(row("model#2", "intended"));
    expect(messagesFromSteps(rows).map((m) => m.role)).toEqual(["assistant", "tool", "tool"]);
  });

  it("finds results of plain functions called without the call id (numbered per tool name)", () => {
    const rows = [
      row(
        "model",
        "succeeded",
        openaiTurn(null, [
          ["call_x", "add", { a: 1 }],
          ["call_y", "add", { a: 2 }],
        ]),
      ),
      row("tool:add:1", "succeeded", 1),
      row("tool:add:2", "succeeded", 2),
    ];
    expect(messagesFromSteps(rows).filter((m) => m.role === "tool")).toEqual([
      { role: "tool", tool_call_id: "call_x", content: "1" },
      { role: "tool", tool_call_id: "call_y", content: "2" },
    ]);
  });

  it("a call id the model used twice maps to steplog's numbered key (#2)", () => {
    const rows = [
      row("model", "succeeded", openaiTurn(null, [["same", "t", {}]])),
      row("tool:t:same", "succeeded", "first"),
      row("model#2", "succeeded", openaiTurn(null, [["same", "t", {}]])),
      row("tool:t:same#2", "succeeded", "second"),
    ];
    expect(
      messagesFromSteps(rows)
        .filter((m) => m.role === "tool")
        .map((m) => m.content),
    ).toEqual(["first", "second"]);
  });

  it("with a label, reads only that model's turns", () => {
    const rows = [row("model:planner", "succeeded", openaiTurn("plan")), row("model:writer", "succeeded", openaiTurn("draft"))];
    expect(messagesFromSteps(rows, { label: "writer" })).toEqual([{ role: "assistant", content: "draft" }]);
  });

  it("refuses a turn of a shape it does not know, unless told how to read it", () => {
    const rows = [row("model", "succeeded", { answer: 42 })];
    expect(() => messagesFromSteps(rows)).toThrow(/"model" has a shape it cannot read/);
    expect(messagesFromSteps(rows, { turn: (v: any) => ({ text: String(v.answer), toolCalls: [] }) })).toEqual([{ role: "assistant", content: "42" }]);
  });
});

describe("readTurn", () => {
  it("reads Anthropic messages, OpenAI responses, AI SDK results and streams", () => {
    expect(
      readTurn({
        role: "assistant",
        content: [
          { type: "thinking", thinking: "hmm" },
          { type: "text", text: "ok" },
          { type: "tool_use", id: "tu1", name: "f", input: { x: 1 } },
        ],
      }),
    ).toEqual({
      text: "ok",
      reasoning: "hmm",
      toolCalls: [{ id: "tu1", name: "f", input: { x: 1 }, arguments: '{"x":1}' }],
    });
    expect(
      readTurn({
        object: "response",
        output: [
          { type: "message", content: [{ type: "output_text", text: "hi" }] },
          { type: "function_call", call_id: "fc", name: "g", arguments: "{}" },
        ],
      }),
    ).toEqual({
      text: "hi",
      toolCalls: [{ id: "fc", name: "g", input: {}, arguments: "{}" }],
    });
    expect(readTurn({ content: [{ type: "tool-call", toolCallId: "a", toolName: "h", input: '{"y":2}' }], finishReason: "tool-calls" })).toEqual({
      text: "",
      toolCalls: [{ id: "a", name: "h", input: { y: 2 }, arguments: '{"y":2}' }],
    });
    expect(
      readTurn({
        parts: [
          { type: "text-delta", delta: "a" },
          { type: "text-delta", delta: "b" },
          { type: "tool-call", toolCallId: "z", toolName: "k", input: "{}" },
        ],
      }),
    ).toEqual({
      text: "ab",
      toolCalls: [{ id: "z", name: "k", input: {}, arguments: "{}" }],
    });
  });
});
