/**
 * LangChain (`@langchain/core`), made durable: durableLangChainTools(ctx, tools) gives the same
 * tools (`tool()`, StructuredTool) with each call a step keyed by the model's tool-call id;
 * durableChatModel(ctx, model) gives a chat model whose `invoke` is a model turn. The app's
 * loop (or agent) uses them as it used the originals. Works on LangChain's shapes by
 * structure; LangChain is not imported.
 */

import type { RetryOptions, WorkflowContext } from "../workflow/context.js";
import { InvalidOptionError } from "../base/errors.js";
import { modelTurn, type TurnUsage } from "./model-turn.js";
import { markFatal, throwIfFatal } from "./run-state.js";
import { approvalCheck, checkToolOptions, durableCall, type DurableToolsOptions } from "./tools.js";

/** The structural minimum of a LangChain tool: `tool()` and StructuredTool subclasses have it. */
export interface LangChainToolLike {
  name: string;
  invoke: (input: any, config?: any) => Promise<unknown>;
  _call: (arg: any, runManager?: unknown, parentConfig?: any) => unknown;
}

export interface DurableChatModelOptions {
  /** Names the turns `model:<label>` instead of `model`. */
  label?: string;
  /** The turn's cost in US dollars from its token counts. */
  costUsd?: (usage: TurnUsage) => number | undefined;
  /** Retries of a failed call inside the turn's step (default: none; chat models retry on their own, `maxRetries`). */
  retry?: RetryOptions;
}

/** What a LangChain model turn records: the AI message's fields, as LangChain builds a message from them. */
export interface RecordedAIMessage {
  type: "ai";
  content: unknown;
  tool_calls?: Array<{ id?: string; name: string; args: Record<string, unknown>; type?: string }>;
  invalid_tool_calls?: unknown[];
  additional_kwargs?: Record<string, unknown>;
  response_metadata?: Record<string, unknown>;
  usage_metadata?: { input_tokens?: number; output_tokens?: number; total_tokens?: number; [field: string]: unknown };
  id?: string;
  name?: string;
}

const isLangChainTool = (tool: unknown): tool is LangChainToolLike =>
  typeof tool === "object" &&
  tool !== null &&
  typeof (tool as LangChainToolLike).name === "string" &&
  typeof (tool as LangChainToolLike).invoke === "function" &&
  typeof (tool as LangChainToolLike)._call === "function";

function combineSignals(...signals: Array<AbortSignal | null | undefined>): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => s instanceof AbortSignal);
  return present.length === 1 ? present[0]! : AbortSignal.any(present);
}

function wrapTool<T extends LangChainToolLike>(ctx: WorkflowContext, tool: T, options: DurableToolsOptions): T {
  const wrapped = Object.create(Object.getPrototypeOf(tool) as object | null, Object.getOwnPropertyDescriptors(tool)) as T;
  const inner = tool._call;
  // `_call` is what `invoke` runs once the input is parsed: the step records the tool's own
  // output, and LangChain formats it (a ToolMessage for a tool call) on every attempt alike.
  wrapped._call = (arg: unknown, runManager?: unknown, parentConfig?: Record<string, any>) => {
    const toolCallId = typeof parentConfig?.toolCall?.id === "string" ? (parentConfig.toolCall.id as string) : undefined;
    const callOptions = { toolCallId, abortSignal: parentConfig?.signal };
    const approval = approvalCheck(options, tool.name, arg, callOptions);
    return durableCall(
      ctx,
      tool.name,
      arg,
      callOptions,
      options,
      (input, durable) => {
        // The tool's function gets its config with the step's fields: config.idempotencyKey, …
        const config: Record<string, unknown> = { ...parentConfig, idempotencyKey: durable.idempotencyKey, step: durable.step, signal: durable.abortSignal };
        if (durable.previous) config.previous = durable.previous;
        return inner.call(tool, input, runManager, config);
      },
      { approval },
    );
  };
  return wrapped;
}

/**
 * Wrap LangChain tools (an array, as `bindTools` and agents take them, or a record by name) so
 * that each call is a durable step `tool:<name>:<tool call id>`, with the effect, query,
 * compensation, retry and timeout you give per tool name. The tool call id is the one in
 * `tool.invoke(toolCall)` (what a model's `tool_calls` hold); a tool invoked with bare input is
 * numbered per name in call order. The tool's function gets its config with `idempotencyKey`,
 * `step` and, when re-driven after a crash, `previous`. Every other field and method is kept.
 * A call's step input is the tool's parsed input; `approval` parks the calls it names for a person.
 *
 *   const tools = durableLangChainTools(ctx, [lookupOrder, saveDraft, sendEmail], {
 *     effects: { lookupOrder: "read", sendEmail: "irreversible" },
 *   });
 */
export function durableLangChainTools<T extends readonly unknown[] | Record<string, unknown>>(
  ctx: WorkflowContext,
  tools: T,
  options: DurableToolsOptions = {},
): T {
  if (typeof tools !== "object" || tools === null)
    throw new InvalidOptionError("durableLangChainTools(ctx, tools): tools must be an array or a record of LangChain tools.");
  const entries = Object.values(tools);
  checkToolOptions(
    "durableLangChainTools",
    options,
    entries.filter(isLangChainTool).map((t) => t.name),
  );
  const wrap = (tool: unknown) => (isLangChainTool(tool) ? wrapTool(ctx, tool, options) : tool);
  if (Array.isArray(tools)) return tools.map(wrap) as unknown as T;
  return Object.fromEntries(Object.entries(tools).map(([name, tool]) => [name, wrap(tool)])) as T;
}

type Coerce = (input: unknown[]) => { toChatMessages(): unknown[] };

/**
 * LangChain's own way from message data to a message object (the `_convertInputToPromptValue`
 * that every chat model's class has), found on the model or the model a binding wraps, so a
 * recorded turn comes back as the same library's AIMessage.
 */
function findCoerce(model: unknown): Coerce | undefined {
  for (let m = model, depth = 0; typeof m === "object" && m !== null && depth < 8; m = (m as { bound?: unknown }).bound, depth++) {
    const ctor = (m as { constructor?: { _convertInputToPromptValue?: unknown } }).constructor;
    if (typeof ctor?._convertInputToPromptValue === "function") return (input) => (ctor._convertInputToPromptValue as Coerce).call(ctor, input);
  }
  return undefined;
}

function recordMessage(message: any): RecordedAIMessage {
  const recorded: RecordedAIMessage = { type: "ai", content: message?.content ?? "" };
  for (const field of ["tool_calls", "invalid_tool_calls", "additional_kwargs", "response_metadata", "usage_metadata", "id", "name"] as const) {
    if (message?.[field] !== undefined) (recorded as unknown as Record<string, unknown>)[field] = message[field];
  }
  // JSON data: what LangChain's providers put in these fields is JSON already.
  return JSON.parse(JSON.stringify(recorded)) as RecordedAIMessage;
}

function usageOfMessage(recorded: RecordedAIMessage): TurnUsage | undefined {
  const u = recorded.usage_metadata;
  if (!u) return undefined;
  const usage: TurnUsage = {};
  if (typeof u.input_tokens === "number") usage.inputTokens = u.input_tokens;
  if (typeof u.output_tokens === "number") usage.outputTokens = u.output_tokens;
  const cached = (u.input_token_details as { cache_read?: unknown } | undefined)?.cache_read;
  if (typeof cached === "number") usage.cachedInputTokens = cached;
  const reasoning = (u.output_token_details as { reasoning?: unknown } | undefined)?.reasoning;
  if (typeof reasoning === "number") usage.reasoningTokens = reasoning;
  return Object.keys(usage).length > 0 ? usage : undefined;
}

/** Runnable methods that call the model without `invoke`: refused rather than left unrecorded. */
const UNRECORDED = new Set(["stream", "batch", "streamEvents", "streamLog", "transform", "pipe", "withStructuredOutput"]);
/** Methods that return a new model or binding to the same model: their result is wrapped too. */
const REWRAPPED = new Set(["bindTools", "withConfig"]);

function wrapModel<M extends object>(ctx: WorkflowContext, model: M, options: DurableChatModelOptions, coerce: Coerce): M {
  const target = model as M & { invoke: (input: unknown, options?: Record<string, unknown>) => Promise<unknown> };
  const turnOptions = {
    ...(options.retry ? { retry: options.retry } : {}),
    ...(options.label === undefined ? {} : { label: options.label }),
    ...(options.costUsd ? { costUsd: options.costUsd } : {}),
  };
  const invoke = async (input: unknown, callOptions?: Record<string, unknown>) => {
    throwIfFatal(ctx);
    const recorded = await modelTurn(
      ctx,
      async (info) =>
        recordMessage(await target.invoke(input, { ...callOptions, signal: combineSignals(callOptions?.signal as AbortSignal | undefined, info.signal) })),
      { ...turnOptions, usage: usageOfMessage },
    );
    // The same message object on every attempt, live or handed back: an AIMessage built from the record.
    return coerce([recorded]).toChatMessages()[0];
  };
  return new Proxy(target, {
    get(object, property) {
      if (property === "invoke") return invoke;
      const value = Reflect.get(object, property, object) as unknown;
      if (typeof property === "string" && typeof value === "function") {
        if (REWRAPPED.has(property)) return (...args: unknown[]) => wrapModel(ctx, (value as (...a: unknown[]) => object).apply(object, args), options, coerce);
        if (UNRECORDED.has(property)) {
          return () => {
            const error = new InvalidOptionError(
              `durableChatModel: ${property}() would call the model without recording the turn, so a continue would ask again and get other tool-call ids. ` +
                `Call invoke() on the durable model, or record a call that answers with JSON data yourself: modelTurn(ctx, () => …) (docs/agents.md, "LangChain").`,
            );
            markFatal(ctx, error);
            throw error;
          };
        }
      }
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  }) as M;
}

/**
 * Wrap a LangChain chat model (or one bound with `bindTools`) so that each `invoke` is a model
 * turn: the AI message's fields (content, tool calls with their ids, usage, metadata) are
 * recorded, and every attempt gets an AIMessage built from the record, so a continue hands the
 * same tool calls back without asking the model. `bindTools` and `withConfig` on the wrapped
 * model give wrapped models; `stream`, `batch`, `pipe`, `withStructuredOutput` and the other
 * ways around `invoke` are refused (INVALID_OPTION).
 *
 *   const model = durableChatModel(ctx, chat).bindTools(tools);
 *   const ai = await model.invoke(messages);
 */
export function durableChatModel<M extends object>(ctx: WorkflowContext, model: M, options: DurableChatModelOptions = {}): M {
  const coerce = findCoerce(model);
  if (typeof (model as { invoke?: unknown }).invoke !== "function" || !coerce) {
    throw new InvalidOptionError("durableChatModel(ctx, model): model must be a LangChain chat model (BaseChatModel), or one bound with bindTools.");
  }
  return wrapModel(ctx, model, options, coerce);
}
