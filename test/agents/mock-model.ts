/**
 * A scripted AI SDK mock model for the agents tests: the answer depends only on the prompt (how
 * many assistant turns it holds), so a re-asked turn would answer the same; the calls are counted.
 * It is the SDK's own mock of its newest model interface: LanguageModelV3 on ai 6, V4 on ai 7.
 */
import type { AiSdk } from "./ai-sdks.js";

export const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

export interface ScriptedTurn {
  text?: string;
  calls?: Array<{ id: string; tool: string; input: unknown }>;
}

type Prompt = Array<{ role: string; content: unknown }>;

export function turnIndex(prompt: Prompt): number {
  return prompt.filter((m) => m.role === "assistant").length;
}

export function generateResult(turn: ScriptedTurn, n: number) {
  const content: any[] = [];
  if (turn.text) content.push({ type: "text", text: turn.text });
  for (const c of turn.calls ?? []) content.push({ type: "tool-call", toolCallId: c.id, toolName: c.tool, input: JSON.stringify(c.input) });
  return {
    content,
    finishReason: { unified: turn.calls?.length ? "tool-calls" : "stop", raw: undefined },
    usage: usage(100 + n * 10, 20 + n),
    warnings: [],
    response: { id: `resp-${n}`, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n)), modelId: "scripted" },
  };
}

export function streamParts(turn: ScriptedTurn, n: number) {
  const parts: any[] = [
    { type: "stream-start", warnings: [] },
    { type: "response-metadata", id: `resp-${n}`, modelId: "scripted", timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n)) },
  ];
  if (turn.text) {
    parts.push({ type: "text-start", id: `t${n}` });
    for (const word of turn.text.split(/(?<= )/)) parts.push({ type: "text-delta", id: `t${n}`, delta: word });
    parts.push({ type: "text-end", id: `t${n}` });
  }
  for (const c of turn.calls ?? []) {
    parts.push({ type: "tool-input-start", id: c.id, toolName: c.tool });
    parts.push({ type: "tool-input-delta", id: c.id, delta: JSON.stringify(c.input) });
    parts.push({ type: "tool-input-end", id: c.id });
    parts.push({ type: "tool-call", toolCallId: c.id, toolName: c.tool, input: JSON.stringify(c.input) });
  }
  parts.push({ type: "finish", finishReason: { unified: turn.calls?.length ? "tool-calls" : "stop", raw: undefined }, usage: usage(100 + n * 10, 20 + n) });
  return parts;
}

/** A mock model of `sdk` that answers turn n of the script (n = assistant turns in the prompt). */
export function scriptedModel(sdk: AiSdk, script: ScriptedTurn[]) {
  const pick = (prompt: Prompt) => {
    const n = turnIndex(prompt);
    const turn = script[n];
    if (!turn) throw new Error(`scripted model: no turn ${n}`);
    return [turn, n] as const;
  };
  const MockLanguageModel = sdk.test.MockLanguageModelV4 ?? sdk.test.MockLanguageModelV3;
  return new MockLanguageModel({
    provider: "scripted",
    modelId: "scripted",
    doGenerate: async (options) => {
      const [turn, n] = pick(options.prompt as Prompt);
      return generateResult(turn, n) as any;
    },
    doStream: async (options) => {
      const [turn, n] = pick(options.prompt as Prompt);
      const parts = streamParts(turn, n);
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const p of parts) controller.enqueue(p);
            controller.close();
          },
        }),
      } as any;
    },
  });
}
