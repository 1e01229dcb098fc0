/**
 * The Anthropic SDK's tool-use loop, made durable: durableAnthropic(ctx, client) is the same
 * client, except that `messages.create` (and `beta.messages.create`) is a model turn. The loop
 * the app wrote stays as it is; its tool handlers go through durableTools, keyed by the
 * `tool_use` block's id. Works on the SDK's shape; the SDK is not imported.
 */

import type { RetryOptions, WorkflowContext } from "../workflow/context.js";
import { InvalidOptionError } from "../base/errors.js";
import { modelTurn, usageOf, type TurnUsage } from "./model-turn.js";
import { markFatal, throwIfFatal } from "./run-state.js";

export interface DurableAnthropicOptions {
  /** Names the turns `model:<label>` instead of `model`. */
  label?: string;
  /** The turn's cost in US dollars from its token counts. */
  costUsd?: (usage: TurnUsage) => number | undefined;
  /** Retries of a failed call inside the turn's step (default: none; the client retries on its own, `maxRetries`). */
  retry?: RetryOptions;
}

type Create = (body: Record<string, unknown>, requestOptions?: Record<string, unknown>) => PromiseLike<unknown>;

/** Methods that would make a model call steplog does not record: refused, not silently passed through. */
const UNRECORDED = new Set(["stream", "toolRunner"]);

function combineSignals(...signals: Array<AbortSignal | null | undefined>): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => s instanceof AbortSignal);
  return present.length === 1 ? present[0]! : AbortSignal.any(present);
}

function refuse(ctx: WorkflowContext, what: string): never {
  const error = new InvalidOptionError(
    `durableAnthropic: ${what} is not recorded as a model turn, so a continue would ask the model again and get other tool_use ids. ` +
      `Call messages.create without stream (a continue hands the whole message back), in the app's own tool-use loop (docs/agents.md, "Anthropic SDK").`,
  );
  markFatal(ctx, error);
  throw error;
}

function durableMessages(ctx: WorkflowContext, messages: object, options: DurableAnthropicOptions): object {
  const target = messages as Record<string, unknown>;
  const turnOptions = {
    ...(options.retry ? { retry: options.retry } : {}),
    ...(options.label === undefined ? {} : { label: options.label }),
    ...(options.costUsd ? { costUsd: options.costUsd } : {}),
  };
  const create = async (body: Record<string, unknown>, requestOptions?: Record<string, unknown>) => {
    if (body?.stream === true) refuse(ctx, "messages.create({ stream: true })");
    throwIfFatal(ctx);
    return modelTurn(
      ctx,
      async (info) => {
        const message = await (target.create as Create).call(target, body, {
          ...requestOptions,
          signal: combineSignals(requestOptions?.signal as AbortSignal | undefined, info.signal),
        });
        // The message as JSON data (the SDK's response object also carries a request id and methods).
        return JSON.parse(JSON.stringify(message)) as unknown;
      },
      { ...turnOptions, usage: (recorded: unknown) => usageOf(recorded) },
    );
  };
  return new Proxy(target, {
    get(object, property) {
      if (property === "create" && typeof object.create === "function") return create;
      if (typeof property === "string" && UNRECORDED.has(property) && typeof object[property] === "function") {
        return () => refuse(ctx, `messages.${property}()`);
      }
      const value = Reflect.get(object, property, object) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  });
}

/**
 * Wrap an Anthropic client (`new Anthropic()`) so that each `messages.create` (and
 * `beta.messages.create`) is a model turn, `model`, `model#2`, …: the message the model answered
 * is recorded, with its tokens, and a continue hands it back without asking again, so its
 * `tool_use` blocks come out with the same ids. Everything else is the client as it is; a
 * streaming call (`stream: true`, `messages.stream`, the beta `toolRunner`) is refused
 * (INVALID_OPTION). A turn returns a promise of the message (not the SDK's APIPromise).
 *
 *   const claude = durableAnthropic(ctx, anthropic);
 *   const tools = durableTools(ctx, handlers, { effects: { sendEmail: "irreversible" } });
 *   const message = await claude.messages.create({ model, max_tokens, tools: SCHEMAS, messages });
 *   for (const block of message.content) if (block.type === "tool_use")
 *     await tools[block.name](block.input, { toolCallId: block.id });
 */
export function durableAnthropic<C extends object>(ctx: WorkflowContext, client: C, options: DurableAnthropicOptions = {}): C {
  const target = client as C & { messages?: unknown; beta?: unknown };
  if (typeof target.messages !== "object" || target.messages === null || typeof (target.messages as { create?: unknown }).create !== "function") {
    throw new InvalidOptionError("durableAnthropic(ctx, client): client must be an Anthropic client (with messages.create).");
  }
  const messages = durableMessages(ctx, target.messages, options);
  const betaOf = (beta: object): object =>
    new Proxy(beta as Record<string, unknown>, {
      get(object, property) {
        const value = Reflect.get(object, property, object) as unknown;
        if (property === "messages" && typeof value === "object" && value !== null) return durableMessages(ctx, value, options);
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(object) : value;
      },
    });
  return new Proxy(target, {
    get(object, property) {
      if (property === "messages") return messages;
      const value = Reflect.get(object, property, object) as unknown;
      if (property === "beta" && typeof value === "object" && value !== null) return betaOf(value);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  }) as C;
}
