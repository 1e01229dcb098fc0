/**
 * durableModel: a language model whose every call is a model turn (a step). For frameworks that
 * run the tool loop themselves (the Vercel AI SDK's generateText / streamText with tools): wrap
 * the model and the tools, and each turn and each tool call of the loop is a step.
 *
 * Structural: any object with `doGenerate(options)` and/or `doStream(options)` in the shape of
 * the AI SDK's LanguageModelV4 (ai 7), V3 (ai 6) or V2. Every other member is passed through
 * untouched.
 */

import type { RetryOptions, WorkflowContext } from "../workflow/context.js";
import { modelTurn, usageOf, type TurnUsage } from "./model-turn.js";
import { throwIfFatal } from "./run-state.js";

/** The structural minimum of an AI SDK language model. */
export interface LanguageModelLike {
  doGenerate?: (options: any) => PromiseLike<any>;
  doStream?: (options: any) => PromiseLike<{ stream: ReadableStream<any> } & Record<string, any>>;
}

export interface DurableModelOptions {
  /** Names the turns `model:<label>` instead of `model`. */
  label?: string;
  /** The turn's cost in US dollars from its token counts. */
  costUsd?: (usage: TurnUsage) => number | undefined;
  /**
   * Retries of a failed call inside the turn's step. Default: up to 3 calls for errors that say
   * they are retryable (`isRetryable: true`, as the AI SDK's APICallError does), 1 s apart and
   * doubling. A turn that still fails ends the agent's part of the attempt (see modelTurn).
   */
  retry?: RetryOptions;
  /**
   * A streamed turn also writes its text, as it streams, to the run's stream of this name
   * (ctx.stream: docs/streams.md), for a page to follow; a continue that asks the model again
   * for a turn cut off resets the stream to where that turn began.
   */
  stream?: string;
}

/** What a generate turn records: the model's answer without the raw request and response bodies. */
export interface RecordedGenerate {
  content: unknown[];
  /** V4: the text a structured output is parsed from, when it is not all the text parts. */
  structuredOutputText?: string;
  finishReason: unknown;
  usage: unknown;
  warnings?: unknown[];
  providerMetadata?: unknown;
  response?: { id?: string; timestamp?: Date; modelId?: string };
}

/** What a streamed turn records: every part the model streamed (raw chunks left out), in order. */
export interface RecordedStream {
  parts: Array<Record<string, unknown>>;
}

const DEFAULT_RETRY: RetryOptions = {
  maxAttempts: 3,
  backoffMs: 1000,
  retryIf: (error) => typeof error === "object" && error !== null && (error as { isRetryable?: unknown }).isRetryable === true,
};

/** Parts released to the framework only once the turn is recorded: the framework acts on them. */
const HELD = new Set(["tool-call", "finish"]);

function combineSignals(...signals: Array<AbortSignal | undefined>): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => s instanceof AbortSignal);
  return present.length === 1 ? present[0]! : AbortSignal.any(present);
}

/** The parts that carry a file: V3 `data` is bytes or base64; V4 `data` is `{ type: "data" | "url", … }`. */
const FILE_PARTS = new Set(["file", "reasoning-file"]);

function fileData(part: unknown): unknown {
  if (typeof part !== "object" || part === null || !FILE_PARTS.has(String((part as { type?: unknown }).type))) return undefined;
  return (part as { data?: unknown }).data;
}

/**
 * A part as it can be recorded: a V3 file's bytes as base64 (the AI SDK accepts either), a V4
 * file's URL as its text (a recorded value must be JSON-like; restoredPart makes it a URL again).
 */
function recordablePart<P>(part: P): P {
  const data = fileData(part);
  if (data instanceof Uint8Array) return { ...part, data: Buffer.from(data).toString("base64") };
  if (typeof data === "object" && data !== null && (data as { url?: unknown }).url instanceof URL) {
    return { ...part, data: { ...data, url: (data as { url: URL }).url.href } };
  }
  return part;
}

/** A recorded part as the model gave it: a V4 file's URL is a URL again (the AI SDK reads `url.href`…). */
function restoredPart<P>(part: P): P {
  const data = fileData(part) as { type?: unknown; url?: unknown } | undefined;
  if (data?.type === "url" && typeof data.url === "string") return { ...part, data: { ...data, url: new URL(data.url) } };
  return part;
}

function recordGenerate(result: any): RecordedGenerate {
  const recorded: RecordedGenerate = {
    content: Array.isArray(result?.content) ? result.content.map(recordablePart) : [],
    finishReason: result?.finishReason,
    usage: result?.usage,
    warnings: Array.isArray(result?.warnings) ? result.warnings : [],
  };
  if (typeof result?.structuredOutputText === "string") recorded.structuredOutputText = result.structuredOutputText;
  if (result?.providerMetadata !== undefined) recorded.providerMetadata = result.providerMetadata;
  const response = result?.response;
  if (response && typeof response === "object") {
    const kept: NonNullable<RecordedGenerate["response"]> = {};
    if (typeof response.id === "string") kept.id = response.id;
    if (response.timestamp instanceof Date) kept.timestamp = response.timestamp;
    if (typeof response.modelId === "string") kept.modelId = response.modelId;
    recorded.response = kept;
  }
  return recorded;
}

/**
 * Wrap a language model so each call is a model turn: `doGenerate` records the model's answer;
 * `doStream` forwards the stream as it comes (text live), records every part, and releases the
 * parts the framework acts on (tool calls, the finish) once the turn is recorded, so no tool
 * runs on a turn a crash could lose. On a continue, recorded turns are answered from the log.
 *
 *   const { text } = await generateText({
 *     model: durableModel(ctx, openai("gpt-4.1")),
 *     tools: durableTools(ctx, tools, { effects: { sendEmail: "irreversible" } }),
 *     stopWhen: stepCountIs(10),
 *     prompt,
 *   });
 */
export function durableModel<M extends object>(ctx: WorkflowContext, model: M, options: DurableModelOptions = {}): M {
  const target = model as M & LanguageModelLike;
  const turnOptions = {
    retry: options.retry ?? DEFAULT_RETRY,
    ...(options.label === undefined ? {} : { label: options.label }),
    ...(options.costUsd ? { costUsd: options.costUsd } : {}),
  };

  const doGenerate = async (callOptions: Record<string, unknown>) => {
    throwIfFatal(ctx);
    const recorded = await modelTurn(
      ctx,
      async (info) => {
        const result = await target.doGenerate!({
          ...callOptions,
          abortSignal: combineSignals(callOptions?.abortSignal as AbortSignal | undefined, info.signal),
        });
        return recordGenerate(result);
      },
      { ...turnOptions, usage: (recorded: RecordedGenerate) => usageOf(recorded) },
    );
    return { ...recorded, content: recorded.content.map(restoredPart) };
  };

  const doStream = async (callOptions: Record<string, unknown>) => {
    throwIfFatal(ctx);
    let controller!: ReadableStreamDefaultController<unknown>;
    const stream = new ReadableStream<unknown>({
      start(c) {
        controller = c;
      },
    });
    let live = false;
    const text = options.stream === undefined ? undefined : ctx.stream(options.stream);
    // A stream that has already shown parts is not retried: the reader would see them twice.
    let forwarded = false;
    const retryIf = turnOptions.retry.retryIf;
    const retry: RetryOptions = { ...turnOptions.retry, retryIf: (error, n) => !forwarded && (retryIf ? retryIf(error, n) : true) };
    const turn = modelTurn(
      ctx,
      async (info) => {
        live = true;
        const result = await target.doStream!({
          ...callOptions,
          abortSignal: combineSignals(callOptions?.abortSignal as AbortSignal | undefined, info.signal),
        });
        const parts: Array<Record<string, unknown>> = [];
        const reader = result.stream.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          const part = value as Record<string, unknown>;
          if (part.type === "raw") {
            forwarded = true;
            controller.enqueue(part);
            continue;
          }
          if (part.type === "error") {
            await reader.cancel().catch(() => {});
            throw part.error instanceof Error ? part.error : new Error(String((part.error as { message?: unknown })?.message ?? part.error));
          }
          parts.push(recordablePart(part));
          if (text !== undefined && part.type === "text-delta") text.write(String(part.delta ?? part.textDelta ?? ""));
          if (!HELD.has(String(part.type))) {
            forwarded = true;
            controller.enqueue(part);
          }
        }
        return { parts } satisfies RecordedStream;
      },
      {
        ...turnOptions,
        retry,
        usage: (recorded: RecordedStream) => usageOf(recorded.parts.find((p) => p.type === "finish")),
      },
    );
    turn.then(
      (recorded) => {
        for (const part of recorded.parts) if (!live || HELD.has(String(part.type))) controller.enqueue(restoredPart(part));
        controller.close();
      },
      (error: unknown) => controller.error(error),
    );
    return { stream };
  };

  return new Proxy(target, {
    get(object, property) {
      if (property === "doGenerate" && typeof object.doGenerate === "function") return doGenerate;
      if (property === "doStream" && typeof object.doStream === "function") return doStream;
      const value = Reflect.get(object, property, object) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  }) as M;
}
