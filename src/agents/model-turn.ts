/**
 * modelTurn: one call of a model, as a step. Its recorded value is what the model answered, so
 * a continue hands the same answer back without asking the model again; the turn's tokens and
 * cost are recorded as the step's usage (summed per run by engine.get and the steplog command).
 */

import { SteplogError } from "../base/errors.js";
import type { RetryOptions, StepInfo, StepOptions, Usage, WorkflowContext } from "../workflow/context.js";
import type { StandardSchemaV1 } from "../workflow/value-schemas.js";
import { isMachineryError, markFatal, throwIfFatal } from "./run-state.js";
import { modelStepName } from "./step-names.js";

/** Token counts found in a model's answer; every field optional. */
export interface TurnUsage {
  inputTokens?: number;
  outputTokens?: number;
  reasoningTokens?: number;
  cachedInputTokens?: number;
}

export interface ModelTurnOptions<T> {
  /** Names the turn `model:<label>` instead of `model` (e.g. two models in one run). */
  label?: string;
  /**
   * How to read the turn's token counts from its value. Default: usageOf, which knows the
   * OpenAI chat and responses APIs, Anthropic messages and the AI SDK's results.
   */
  usage?: (value: T) => TurnUsage | undefined;
  /** The turn's cost in US dollars from its token counts, when you know the price. */
  costUsd?: (usage: TurnUsage, value: T) => number | undefined;
  /** Retries of the call inside the step (same step, same key): e.g. { maxAttempts: 3 } for rate limits. */
  retry?: RetryOptions;
  timeoutMs?: number;
  /** Schema of the answer, checked when recorded and when reused. */
  result?: StandardSchemaV1<unknown, T>;
}

/** Thrown when a model turn failed (its step is recorded failed; a continue asks the model again, from that turn). */
export class ModelTurnFailedError extends SteplogError {
  override name = "ModelTurnFailedError";
  constructor(step: string | undefined, cause: unknown) {
    super(
      "MODEL_TURN_FAILED",
      `Model turn ${step === undefined ? "" : `${JSON.stringify(step)} `}failed: ${cause instanceof Error ? cause.message : String(cause)}. ` +
        `The agent stops here in this attempt; a continue asks the model again from this turn (earlier turns and tool results are reused).`,
      step === undefined ? { cause } : { step, cause },
    );
  }
}

const num = (value: unknown): number | undefined => (typeof value === "number" && Number.isFinite(value) ? value : undefined);
/** A count that may be a number (AI SDK v2, OpenAI) or `{ total }` (AI SDK LanguageModelV3). */
const countOf = (value: unknown): number | undefined =>
  num(value) ?? (typeof value === "object" && value !== null ? num((value as { total?: unknown }).total) : undefined);

/**
 * Token counts from a model's answer, whatever the API: `usage` with `inputTokens`/`outputTokens`
 * (AI SDK; numbers or `{ total }`; reasoning and cached counts also from ai 7's
 * `outputTokenDetails`/`inputTokenDetails`), `prompt_tokens`/`completion_tokens` (OpenAI chat) or
 * `input_tokens`/`output_tokens` (OpenAI responses, Anthropic). Undefined when there is none.
 */
export function usageOf(value: unknown): TurnUsage | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const holder = value as { usage?: unknown; totalUsage?: unknown };
  const usage = (holder.totalUsage ?? holder.usage) as Record<string, any> | undefined;
  if (typeof usage !== "object" || usage === null) return undefined;
  const out: TurnUsage = {};
  const set = (field: keyof TurnUsage, amount: number | undefined) => {
    if (amount !== undefined) out[field] = amount;
  };
  set("inputTokens", countOf(usage.inputTokens) ?? num(usage.prompt_tokens) ?? num(usage.input_tokens));
  set("outputTokens", countOf(usage.outputTokens) ?? num(usage.completion_tokens) ?? num(usage.output_tokens));
  set(
    "reasoningTokens",
    num(usage.reasoningTokens) ??
      num(usage.outputTokens?.reasoning) ??
      num(usage.outputTokenDetails?.reasoningTokens) ??
      num(usage.completion_tokens_details?.reasoning_tokens) ??
      num(usage.output_tokens_details?.reasoning_tokens),
  );
  set(
    "cachedInputTokens",
    num(usage.cachedInputTokens) ??
      num(usage.inputTokens?.cacheRead) ??
      num(usage.inputTokenDetails?.cacheReadTokens) ??
      num(usage.prompt_tokens_details?.cached_tokens) ??
      num(usage.input_tokens_details?.cached_tokens) ??
      num(usage.cache_read_input_tokens),
  );
  return Object.keys(out).length === 0 ? undefined : out;
}

/**
 * Run one model call as the step `model` (or `model:<label>`), recording its answer and usage.
 *
 *   const response = await modelTurn(ctx, () => client.chat.completions.create({ model, messages, tools }));
 *
 * A continue hands the recorded answer back (the model is not asked again), so everything the
 * code derives from it — the tool calls, their ids, the next messages — comes out the same.
 * The step's effect is "read": a turn cut off by a crash is simply asked again.
 *
 * If the call fails (after `retry`), the turn is recorded failed and a ModelTurnFailedError is
 * thrown; the agent's part of this attempt ends there (any later turn or tool call in the
 * attempt throws it again), so the log never holds a failed turn followed by later ones.
 */
export function modelTurn<T>(ctx: WorkflowContext, fn: (info: StepInfo) => T | Promise<T>, options?: ModelTurnOptions<T>): Promise<Awaited<T>>;
export function modelTurn<T>(ctx: WorkflowContext, label: string, fn: (info: StepInfo) => T | Promise<T>, options?: ModelTurnOptions<T>): Promise<Awaited<T>>;
export async function modelTurn<T>(
  ctx: WorkflowContext,
  labelOrFn: string | ((info: StepInfo) => T | Promise<T>),
  fnOrOptions?: ((info: StepInfo) => T | Promise<T>) | ModelTurnOptions<T>,
  maybeOptions?: ModelTurnOptions<T>,
): Promise<Awaited<T>> {
  const [fn, options] =
    typeof labelOrFn === "function"
      ? [labelOrFn, (fnOrOptions ?? {}) as ModelTurnOptions<T>]
      : [fnOrOptions as (info: StepInfo) => T | Promise<T>, { ...maybeOptions, label: labelOrFn }];
  throwIfFatal(ctx);
  let name: string;
  try {
    name = modelStepName(options.label);
  } catch (error) {
    markFatal(ctx, error);
    throw error;
  }
  const stepOptions: StepOptions<unknown> = { effect: "read" };
  if (options.retry) stepOptions.retry = options.retry;
  if (options.timeoutMs !== undefined) stepOptions.timeoutMs = options.timeoutMs;
  if (options.result) stepOptions.result = options.result as StandardSchemaV1<unknown, unknown>;
  let key: string | undefined;
  try {
    return (await ctx.step<unknown>(name, stepOptions, async (info) => {
      key = info.step;
      const value = await fn(info);
      const used = (options.usage ?? (usageOf as (value: T) => TurnUsage | undefined))(value);
      const report: Usage = { ...used };
      const cost = used && options.costUsd ? options.costUsd(used, value) : undefined;
      if (typeof cost === "number" && Number.isFinite(cost)) report.costUsd = cost;
      if (Object.keys(report).length > 0) info.usage(report);
      return value;
    })) as Awaited<T>;
  } catch (error) {
    const thrown = isMachineryError(error, ctx.signal) ? error : new ModelTurnFailedError(key, error);
    markFatal(ctx, thrown);
    throw thrown;
  }
}
