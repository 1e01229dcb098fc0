/**
 * messagesFromSteps: the conversation, derived from the step log. Model turns (steps named
 * `model` or `model:<label>`) and tool calls (`tool:<name>:<call id>`) are read in order and
 * turned into chat messages, OpenAI-style or AI SDK ModelMessage-style.
 *
 * The step log is the state; the conversation is a view of it. A continue does not need this
 * (it replays the code, handing every recorded turn and tool result back), but a UI, an audit, a
 * summary, or a hand-over to another model does, and it must not make up what nobody knows: a
 * tool call cut off by a crash (its step has no outcome) is not given a result.
 */

import { InvalidOptionError, SteplogError } from "../base/errors.js";
import { isRecordedToolError, TOOL_ERROR_KEY } from "./tools.js";
import { isModelStepName, keyOf, toolStepName } from "./step-names.js";

/** The fields of a step-log row this reads: engine.get(id).steps has them. */
export interface StepRowLike {
  seq?: number;
  key: string;
  name: string;
  status: string;
  value?: unknown;
}

/** One tool call the model asked for in a turn. */
export interface TurnToolCall {
  id: string;
  name: string;
  /** The parsed input (the raw text when it is not JSON). */
  input: unknown;
  /** The input as JSON text, as OpenAI-style messages carry it. */
  arguments: string;
}

/** A model turn, read from its recorded value. */
export interface Turn {
  text: string;
  reasoning?: string;
  toolCalls: TurnToolCall[];
}

export interface OpenAIToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export type OpenAIMessage =
  { role: "assistant"; content: string | null; tool_calls?: OpenAIToolCall[] } | { role: "tool"; tool_call_id: string; content: string };

export type ToolResultOutput = { type: "text"; value: string } | { type: "json"; value: unknown } | { type: "error-text"; value: string };

export type ModelMessage =
  | {
      role: "assistant";
      content: Array<
        { type: "text"; text: string } | { type: "reasoning"; text: string } | { type: "tool-call"; toolCallId: string; toolName: string; input: unknown }
      >;
    }
  | { role: "tool"; content: Array<{ type: "tool-result"; toolCallId: string; toolName: string; output: ToolResultOutput }> };

/** A tool call with no outcome in the log: cut off by a crash, escalated, or not reached. */
export interface PendingToolCall {
  /** The step key it has or would have, e.g. `tool:sendEmail:call_3`. */
  key: string;
  toolName: string;
  toolCallId: string;
  /** The status of its latest row, or "missing" when it has none. */
  status: string;
  /** The model turn that asked for it. */
  turn: string;
}

export interface MessagesFromStepsOptions<F extends "openai" | "ai-sdk"> {
  /** "openai" (chat completions: assistant + role "tool") or "ai-sdk" (ModelMessage). Default "openai". */
  format?: F;
  /** Only model turns with this label (`model:<label>`); default every model turn. */
  label?: string;
  /**
   * A turn with a tool call that has no outcome: "throw" (default; a ToolCallPendingError lists
   * them), "omit" (the history ends before that turn) or "include" (the turn, without results
   * for those calls, then nothing after it).
   */
  pending?: "throw" | "omit" | "include";
  /** Reads a turn from a recorded value of a shape this does not know. */
  turn?: (value: unknown, step: string) => Turn | undefined;
  /**
   * For format "ai-sdk": the major of the `ai` package the messages are for (default 6). They
   * differ in a tool error's text: 6 gives the model the error's message, 7 `String(error)`
   * ("TypeError: …").
   */
  aiSdk?: 6 | 7;
}

/** The history ends in tool calls nobody knows the outcome of. */
export class ToolCallPendingError extends SteplogError {
  override name = "ToolCallPendingError";
  constructor(readonly pending: PendingToolCall[]) {
    super(
      "TOOL_CALL_PENDING",
      `The step log has no outcome for tool call${pending.length === 1 ? "" : "s"} ${pending.map((p) => `${JSON.stringify(p.key)} (${p.status})`).join(", ")}: ` +
        `nobody knows whether ${pending.length === 1 ? "it" : "they"} happened, so no result is made up for ${pending.length === 1 ? "it" : "them"}. ` +
        `engine.continue(runId) settles a cut-off call by its tool's policy (query, redrive, compensate, escalate); an escalated one waits for engine.resolve. ` +
        `To see the history anyway, pass { pending: "include" } or { pending: "omit" }.`,
      pending[0] ? { step: pending[0].key } : {},
    );
  }
}

const parseInput = (text: unknown): unknown => {
  if (typeof text !== "string") return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};
const argumentsOf = (input: unknown): string => (typeof input === "string" ? input : JSON.stringify(input ?? {}));

function call(id: unknown, name: unknown, input: unknown): TurnToolCall | undefined {
  if (typeof id !== "string" || typeof name !== "string") return undefined;
  const parsed = parseInput(input);
  return { id, name, input: parsed, arguments: typeof input === "string" ? input : argumentsOf(parsed) };
}

/** A turn from the shapes model APIs answer with; undefined when the value is none of them. */
export function readTurn(value: unknown): Turn | undefined {
  if (typeof value === "string") return { text: value, toolCalls: [] };
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, any>;
  // OpenAI chat completion, or the message itself.
  if (Array.isArray(v.choices)) return readTurn(v.choices[0]?.message);
  if (v.role === "assistant" && (typeof v.content === "string" || v.content === null || v.content === undefined)) {
    const toolCalls: TurnToolCall[] = [];
    for (const c of Array.isArray(v.tool_calls) ? v.tool_calls : []) {
      const found = call(c?.id, c?.function?.name, c?.function?.arguments);
      if (found) toolCalls.push(found);
    }
    return { text: typeof v.content === "string" ? v.content : "", toolCalls };
  }
  // OpenAI responses API.
  if (Array.isArray(v.output) && v.object === "response") {
    const turn: Turn = { text: "", toolCalls: [] };
    for (const item of v.output) {
      if (item?.type === "message" && Array.isArray(item.content)) {
        for (const c of item.content) if (c?.type === "output_text") turn.text += String(c.text ?? "");
      } else if (item?.type === "function_call") {
        const found = call(item.call_id, item.name, item.arguments);
        if (found) turn.toolCalls.push(found);
      }
    }
    return turn;
  }
  // OpenAI Agents SDK ModelResponse (durableAgentModel), or its recorded stream (the response_done event's response).
  if (Array.isArray(v.events)) return readTurn(v.events.find((e: { type?: unknown }) => e?.type === "response_done")?.response);
  if (Array.isArray(v.output) && v.object === undefined) {
    const turn: Turn = { text: "", toolCalls: [] };
    for (const item of v.output) {
      if (item?.type === "message" && Array.isArray(item.content)) {
        for (const c of item.content) if (c?.type === "output_text") turn.text += String(c.text ?? "");
      } else if (item?.type === "function_call") {
        const found = call(item.callId, item.name, item.arguments);
        if (found) turn.toolCalls.push(found);
      }
    }
    return turn;
  }
  // LangChain AI message (durableChatModel): content (a string or blocks), tool_calls { id, name, args }.
  if (v.type === "ai" && (typeof v.content === "string" || Array.isArray(v.content))) {
    const turn: Turn = { text: "", toolCalls: [] };
    if (typeof v.content === "string") turn.text = v.content;
    else for (const part of v.content) if (part?.type === "text") turn.text += String(part.text ?? "");
    for (const c of Array.isArray(v.tool_calls) ? v.tool_calls : []) {
      const found = call(c?.id, c?.name, c?.args);
      if (found) turn.toolCalls.push(found);
    }
    return turn;
  }
  // AI SDK generate result (durableModel), AI SDK assistant ModelMessage, Anthropic message.
  if (Array.isArray(v.content)) {
    const turn: Turn = { text: "", toolCalls: [] };
    let reasoning = "";
    for (const part of v.content) {
      if (part?.type === "text") turn.text += String(part.text ?? "");
      else if (part?.type === "reasoning" || part?.type === "thinking") reasoning += String(part.text ?? part.thinking ?? "");
      else if (part?.type === "tool-call" && !part.providerExecuted) {
        const found = call(part.toolCallId, part.toolName, part.input);
        if (found) turn.toolCalls.push(found);
      } else if (part?.type === "tool_use") {
        const found = call(part.id, part.name, part.input);
        if (found) turn.toolCalls.push(found);
      }
    }
    if (reasoning) turn.reasoning = reasoning;
    return turn;
  }
  // AI SDK stream record (durableModel's doStream).
  if (Array.isArray(v.parts)) {
    const turn: Turn = { text: "", toolCalls: [] };
    let reasoning = "";
    for (const part of v.parts) {
      if (part?.type === "text-delta") turn.text += String(part.delta ?? "");
      else if (part?.type === "reasoning-delta") reasoning += String(part.delta ?? "");
      else if (part?.type === "tool-call" && !part.providerExecuted) {
        const found = call(part.toolCallId, part.toolName, part.input);
        if (found) turn.toolCalls.push(found);
      }
    }
    if (reasoning) turn.reasoning = reasoning;
    return turn;
  }
  return undefined;
}

interface ToolOutcome {
  call: TurnToolCall;
  key: string;
  row: StepRowLike | undefined;
}

interface History {
  turns: Array<{ key: string; turn: Turn; results: ToolOutcome[] }>;
}

function rowsOf(source: { steps: StepRowLike[] } | StepRowLike[]): StepRowLike[] {
  const rows = Array.isArray(source) ? source : source?.steps;
  if (!Array.isArray(rows)) throw new TypeError("messagesFromSteps: pass engine.get(runId) or its steps.");
  return rows.some((r) => typeof r.seq === "number") ? [...rows].sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0)) : rows;
}

function readHistory(source: { steps: StepRowLike[] } | StepRowLike[], options: MessagesFromStepsOptions<"openai" | "ai-sdk">): History {
  const rows = rowsOf(source);
  const latest = new Map<string, StepRowLike>();
  const order: string[] = [];
  for (const row of rows) {
    if (!latest.has(row.key)) order.push(row.key);
    latest.set(row.key, row);
  }
  const occurrences = new Map<string, number>();
  const counters = new Map<string, number>();
  const history: History = { turns: [] };
  for (const key of order) {
    const row = latest.get(key)!;
    if (!isModelStepName(row.name, options.label)) continue;
    // A turn without an outcome is asked again by a continue: the history ends before it.
    if (row.status !== "succeeded") break;
    const turn = options.turn?.(row.value, key) ?? readTurn(row.value);
    if (!turn) {
      throw new TypeError(
        `messagesFromSteps: the value of model turn ${JSON.stringify(key)} has a shape it cannot read (not an OpenAI, Anthropic or AI SDK answer). Pass options.turn to read it.`,
      );
    }
    const results = turn.toolCalls.map((c): ToolOutcome => {
      const byId = toolStepName(c.name, c.id);
      const n = (occurrences.get(byId) ?? 0) + 1;
      const idKey = keyOf(byId, n);
      if (latest.has(idKey)) {
        occurrences.set(byId, n);
        return { call: c, key: idKey, row: latest.get(idKey) };
      }
      // A plain function called without the call id was numbered 1, 2, … per tool name.
      const m = (counters.get(c.name) ?? 0) + 1;
      const counted = toolStepName(c.name, String(m));
      if (latest.has(counted)) {
        counters.set(c.name, m);
        return { call: c, key: counted, row: latest.get(counted) };
      }
      return { call: c, key: idKey, row: undefined };
    });
    history.turns.push({ key, turn, results });
  }
  return history;
}

const settled = (outcome: ToolOutcome) => outcome.row?.status === "succeeded";

/** Tool calls asked for by recorded model turns whose steps have no outcome (cut off, escalated, not reached). */
export function pendingToolCalls(
  source: { steps: StepRowLike[] } | StepRowLike[],
  options: Pick<MessagesFromStepsOptions<"openai">, "label" | "turn"> = {},
): PendingToolCall[] {
  return readHistory(source, options).turns.flatMap(({ key, results }) =>
    results
      .filter((r) => !settled(r))
      .map((r) => ({ key: r.key, toolName: r.call.name, toolCallId: r.call.id, status: r.row?.status ?? "missing", turn: key })),
  );
}

function errorMessage(value: unknown): string | undefined {
  return isRecordedToolError(value) ? value[TOOL_ERROR_KEY].message : undefined;
}

/** A recorded tool error as `String(error)` reads it: "name: message", or the one that is not empty. */
function errorString(value: unknown): string | undefined {
  if (!isRecordedToolError(value)) return undefined;
  const { name, message } = value[TOOL_ERROR_KEY];
  return name && message ? `${name}: ${message}` : name || message;
}

function openAIContent(value: unknown): string {
  const error = errorMessage(value);
  if (error !== undefined) return JSON.stringify({ error });
  return typeof value === "string" ? value : JSON.stringify(value ?? null);
}

function modelOutput(value: unknown, aiSdk: 6 | 7): ToolResultOutput {
  const error = aiSdk >= 7 ? errorString(value) : errorMessage(value);
  if (error !== undefined) return { type: "error-text", value: error };
  return typeof value === "string" ? { type: "text", value } : { type: "json", value: value === undefined ? null : value };
}

/**
 * The conversation recorded in a run's step log: for each model turn, the assistant message,
 * then the results of its tool calls, in order. Prepend your own system and user messages.
 *
 * - "openai": `{ role: "assistant", content, tool_calls: [{ id, type: "function", function: { name,
 *   arguments } }] }`, then one `{ role: "tool", tool_call_id, content }` per call; content is the
 *   result as JSON text (a string result as it is), or `{"error":"<message>"}` for a tool that threw.
 * - "ai-sdk": `{ role: "assistant", content: [text, reasoning, tool-call parts] }`, then one
 *   `{ role: "tool", content: [tool-result parts] }` with output `{ type: "json" | "text" |
 *   "error-text", value }`, as the AI SDK's generateText puts in `response.messages` (6) or
 *   `responseMessages` (7; pass `aiSdk: 7` for its tool error text).
 *
 * Reads steps named `model` / `model:<label>` and `tool:<name>:<call id>`; other steps are left out.
 * A model turn without an outcome ends the history (a continue asks it again). A tool call without
 * an outcome is handled by `options.pending`.
 */
export function messagesFromSteps(source: { steps: StepRowLike[] } | StepRowLike[], options?: MessagesFromStepsOptions<"openai">): OpenAIMessage[];
export function messagesFromSteps(source: { steps: StepRowLike[] } | StepRowLike[], options: MessagesFromStepsOptions<"ai-sdk">): ModelMessage[];
export function messagesFromSteps(
  source: { steps: StepRowLike[] } | StepRowLike[],
  options: MessagesFromStepsOptions<"openai" | "ai-sdk"> = {},
): OpenAIMessage[] | ModelMessage[] {
  const format = options.format ?? "openai";
  if (format !== "openai" && format !== "ai-sdk") throw new TypeError(`messagesFromSteps: format must be "openai" or "ai-sdk", got ${JSON.stringify(format)}.`);
  const pendingMode = options.pending ?? "throw";
  const aiSdk = options.aiSdk ?? 6;
  if (aiSdk !== 6 && aiSdk !== 7) {
    throw new InvalidOptionError(`messagesFromSteps: options.aiSdk must be 6 or 7 (the major of your "ai" package), got ${JSON.stringify(aiSdk)}.`);
  }
  const history = readHistory(source, options);
  const openai: OpenAIMessage[] = [];
  const sdk: ModelMessage[] = [];
  for (const { key, turn, results } of history.turns) {
    const open = results.filter((r) => !settled(r));
    if (open.length > 0 && pendingMode === "throw") {
      throw new ToolCallPendingError(
        open.map((r) => ({ key: r.key, toolName: r.call.name, toolCallId: r.call.id, status: r.row?.status ?? "missing", turn: key })),
      );
    }
    if (open.length > 0 && pendingMode === "omit") break;
    const done = results.filter(settled);
    if (format === "openai") {
      const message: OpenAIMessage = { role: "assistant", content: turn.text === "" && turn.toolCalls.length > 0 ? null : turn.text };
      if (turn.toolCalls.length > 0)
        message.tool_calls = turn.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
      openai.push(message);
      for (const r of done) openai.push({ role: "tool", tool_call_id: r.call.id, content: openAIContent(r.row!.value) });
    } else {
      const content: Extract<ModelMessage, { role: "assistant" }>["content"] = [];
      if (turn.reasoning) content.push({ type: "reasoning", text: turn.reasoning });
      if (turn.text !== "") content.push({ type: "text", text: turn.text });
      for (const c of turn.toolCalls) content.push({ type: "tool-call", toolCallId: c.id, toolName: c.name, input: c.input });
      if (content.length > 0) sdk.push({ role: "assistant", content });
      if (done.length > 0) {
        sdk.push({
          role: "tool",
          content: done.map((r) => ({ type: "tool-result", toolCallId: r.call.id, toolName: r.call.name, output: modelOutput(r.row!.value, aiSdk) })),
        });
      }
    }
    if (open.length > 0) break;
  }
  return format === "openai" ? openai : sdk;
}
