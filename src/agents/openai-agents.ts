/**
 * The OpenAI Agents SDK (`@openai/agents`), made durable without changing how the app runs it:
 * durableAgent(ctx, agent) gives an agent whose function tools' calls are steps (keyed by the
 * model's call id) and whose Model's calls are model turns; durableModelProvider wraps the
 * provider the Runner resolves model names with. The SDK's own loop (`run`, `Runner`) is used
 * as it is. Works on the SDK's shapes by structure; the SDK is not imported.
 */

import type { RetryOptions, WorkflowContext } from "../workflow/context.js";
import { InvalidOptionError } from "../base/errors.js";
import { modelTurn, usageOf, type TurnUsage } from "./model-turn.js";
import { readTurn, type TurnToolCall } from "./messages.js";
import { Channel } from "./channel.js";
import { markFatal, throwIfFatal } from "./run-state.js";
import { approvalCheck, checkToolOptions, durableCall, type DurableToolCallFields, type DurableToolsOptions } from "./tools.js";

/** The structural minimum of an Agents SDK `Model`. */
export interface AgentModelLike {
  getResponse(request: any): Promise<any>;
  getStreamedResponse(request: any): AsyncIterable<any>;
}

/** The structural minimum of an Agents SDK `ModelProvider`. */
export interface AgentModelProviderLike {
  getModel(modelName?: string): AgentModelLike | Promise<AgentModelLike>;
}

/** The structural minimum of an Agents SDK `Agent`: its tools, model, handoffs and `clone`. */
export interface AgentLike {
  name: string;
  tools: unknown[];
  model?: unknown;
  handoffs?: unknown[];
  clone(config: Record<string, unknown>): AgentLike;
  /** The handoffs the Runner offers the model, as `Handoff` objects (an agent given in `handoffs` made into one). */
  getEnabledHandoffs?(runContext: unknown): Promise<HandoffLike[]>;
}

/**
 * The third argument of a function tool's `execute(input, runContext, details)` as durableAgent
 * calls it: the SDK's details plus the step's idempotency key, key and, when re-driven after a
 * crash, `previous`. For typing a tool's `details` parameter (the SDK does not export its type).
 */
export interface DurableAgentToolDetails extends DurableToolCallFields {
  toolCall?: { callId: string; name: string; arguments: string };
  /** Aborted when the SDK cancels the call or the attempt ends. */
  signal?: AbortSignal;
  resumeState?: string;
}

interface FunctionToolLike {
  type: "function";
  name: string;
  invoke: (runContext: unknown, input: string, details?: Record<PropertyKey, unknown>) => Promise<unknown>;
  /** The SDK makes every function tool's flag a function `(runContext, input, callId) => Promise<boolean>`. */
  needsApproval?: unknown;
}

/** The SDK's answer for a tool without approval: steplog's approval replaces the SDK's interruption. */
const noApproval = async () => false;

interface HandoffLike {
  agent: AgentLike;
  toolName: string;
  onInvokeHandoff(runContext: unknown, input: string): Promise<AgentLike>;
  clone(overrides: { agent?: AgentLike; onInvokeHandoff?: (runContext: unknown, input: string) => Promise<AgentLike> }): HandoffLike;
}

export interface DurableAgentModelOptions {
  /** Names the turns `model:<label>` instead of `model`. */
  label?: string;
  /** The turn's cost in US dollars from its token counts. */
  costUsd?: (usage: TurnUsage) => number | undefined;
  /** Retries of a failed model call inside the turn's step (default: none; the SDK has its own). */
  retry?: RetryOptions;
}

/** Per tool name (across the agent and the agents it hands off to): how its calls behave as steps. */
export interface DurableAgentOptions<Names extends string = string> extends DurableToolsOptions<Names> {
  /** For the agent's Model object, and those of the agents it hands off to. */
  model?: DurableAgentModelOptions;
}

/** What a streamed turn records: the SDK's stream events (raw provider events left out), in order. */
export interface RecordedAgentStream {
  events: Array<Record<string, unknown>>;
}

/** Models and agents these helpers made, so that wrapping one again does not nest a turn in a turn. */
const made = new WeakSet<object>();

/** Turns of durable Agents SDK models answered (run or handed back) per attempt's context. */
const answeredTurns = new WeakMap<object, number>();
/**
 * The tool calls the latest answered turn asked for, per attempt's context. The SDK hands a
 * handoff no call id, and runs it right after the turn that asked for it: its id is there.
 */
const latestCalls = new WeakMap<object, TurnToolCall[]>();
const noteTurn = (ctx: WorkflowContext, recorded: unknown) => {
  answeredTurns.set(ctx, (answeredTurns.get(ctx) ?? 0) + 1);
  latestCalls.set(ctx, readTurn(recorded)?.toolCalls ?? []);
};

/** The id of the call to `toolName` the latest turn asked for, taken once; undefined (a counter keys the step) if none. */
function takeCallId(ctx: WorkflowContext, toolName: string): string | undefined {
  const calls = latestCalls.get(ctx) ?? [];
  const index = calls.findIndex((c) => c.name === toolName);
  return index === -1 ? undefined : calls.splice(index, 1)[0]!.id;
}

/** The recorded form of the SDK's answers: JSON data (the SDK reads `usage` by field, not by class). */
function plain<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

function combineSignals(...signals: Array<AbortSignal | null | undefined>): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => s instanceof AbortSignal);
  return present.length === 1 ? present[0]! : AbortSignal.any(present);
}

const isFunctionTool = (tool: unknown): tool is FunctionToolLike =>
  typeof tool === "object" &&
  tool !== null &&
  (tool as FunctionToolLike).type === "function" &&
  typeof (tool as FunctionToolLike).name === "string" &&
  typeof (tool as FunctionToolLike).invoke === "function";

const isAgentModel = (model: unknown): model is AgentModelLike =>
  typeof model === "object" && model !== null && typeof (model as AgentModelLike).getResponse === "function";

const isAgent = (value: unknown): value is AgentLike =>
  typeof value === "object" && value !== null && Array.isArray((value as AgentLike).tools) && typeof (value as AgentLike).clone === "function";

const isHandoff = (value: unknown): value is HandoffLike =>
  typeof value === "object" && value !== null && isAgent((value as HandoffLike).agent) && typeof (value as HandoffLike).clone === "function";

/**
 * Wrap an Agents SDK Model so each call is a model turn: `getResponse` records the response
 * (output items with their call ids, usage, response id); `getStreamedResponse` hands the
 * events on as they come and records them, releasing `response_done` (which the Runner acts on)
 * only once the turn is recorded. On a continue, recorded turns are answered from the log.
 */
export function durableAgentModel<M extends object>(ctx: WorkflowContext, model: M, options: DurableAgentModelOptions = {}): M {
  if (!isAgentModel(model)) throw new InvalidOptionError("durableAgentModel(ctx, model): model must be an Agents SDK Model (an object with getResponse).");
  if (made.has(model)) return model;
  const target = model as M & AgentModelLike;
  const turnOptions = {
    ...(options.retry ? { retry: options.retry } : {}),
    ...(options.label === undefined ? {} : { label: options.label }),
    ...(options.costUsd ? { costUsd: options.costUsd } : {}),
  };

  const getResponse = async (request: Record<string, unknown>) => {
    throwIfFatal(ctx);
    const response = await modelTurn(
      ctx,
      async (info) => plain(await target.getResponse({ ...request, signal: combineSignals(request?.signal as AbortSignal, info.signal) })),
      { ...turnOptions, usage: (recorded: Record<string, unknown>) => usageOf(recorded) },
    );
    noteTurn(ctx, response);
    return response;
  };

  const getStreamedResponse = (request: Record<string, unknown>): AsyncIterable<unknown> => {
    throwIfFatal(ctx);
    const channel = new Channel<unknown>();
    let live = false;
    // A stream that has shown events is not retried: the reader would see them twice.
    let forwarded = false;
    const retry: RetryOptions | undefined = turnOptions.retry && {
      ...turnOptions.retry,
      retryIf: (error, n) => !forwarded && (turnOptions.retry!.retryIf ? turnOptions.retry!.retryIf(error, n) : true),
    };
    const turn = modelTurn(
      ctx,
      async (info): Promise<RecordedAgentStream> => {
        live = true;
        const events: Array<Record<string, unknown>> = [];
        for await (const event of target.getStreamedResponse({ ...request, signal: combineSignals(request?.signal as AbortSignal, info.signal) })) {
          const type = (event as { type?: unknown })?.type;
          // Raw provider events are passed on, not recorded (as the AI SDK's raw chunks are).
          if (type !== "model") events.push(plain(event as Record<string, unknown>));
          if (type !== "response_done") {
            forwarded = true;
            channel.push(event);
          }
        }
        return { events };
      },
      {
        ...turnOptions,
        ...(retry ? { retry } : {}),
        usage: (recorded: RecordedAgentStream) => usageOf(recorded.events.find((e) => e.type === "response_done")?.response),
      },
    );
    turn.then(
      (recorded) => {
        noteTurn(ctx, recorded);
        for (const event of recorded.events) if (!live || event.type === "response_done") channel.push(event);
        channel.end();
      },
      (error: unknown) => channel.end(error),
    );
    return channel;
  };

  const durable = new Proxy(target, {
    get(object, property) {
      if (property === "getResponse") return getResponse;
      if (property === "getStreamedResponse" && typeof object.getStreamedResponse === "function") return getStreamedResponse;
      const value = Reflect.get(object, property, object) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  }) as M;
  made.add(durable);
  return durable;
}

/**
 * Wrap a ModelProvider (e.g. `new OpenAIProvider()`) so every model the Runner resolves by name
 * is wrapped by durableAgentModel. For agents that name their model by a string:
 *
 *   const runner = new Runner({ modelProvider: durableModelProvider(ctx, new OpenAIProvider()) });
 *   const result = await runner.run(durableAgent(ctx, agent, { effects }), input);
 */
export function durableModelProvider<P extends object>(ctx: WorkflowContext, provider: P, options: DurableAgentModelOptions = {}): P {
  const target = provider as P & AgentModelProviderLike;
  if (typeof target.getModel !== "function") {
    throw new InvalidOptionError("durableModelProvider(ctx, provider): provider must be an Agents SDK ModelProvider (an object with getModel).");
  }
  const getModel = async (name?: string) => durableAgentModel(ctx, await target.getModel(name), options);
  return new Proxy(target, {
    get(object, property) {
      if (property === "getModel") return getModel;
      const value = Reflect.get(object, property, object) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  }) as P;
}

/** The call's input for a query or compensation: the model's JSON arguments, parsed when they parse. */
function argumentsOf(input: string): unknown {
  try {
    return JSON.parse(input);
  } catch {
    return input;
  }
}

/**
 * A call's id comes from the model's answer; if steplog did not record that answer, a continue
 * would get other ids and could not find this call again. Refuse before any effect.
 */
function refuseAfterUnrecordedTurn(ctx: WorkflowContext, agentName: string, toolName: string): void {
  if (answeredTurns.get(ctx)) return;
  const error = new InvalidOptionError(
    `steplog/agents: agent ${JSON.stringify(agentName)} called tool ${JSON.stringify(toolName)} after a model turn steplog did not record, ` +
      `so a continue could not find this call again. Give the agent a Model object (durableAgent wraps it), ` +
      `or run it with new Runner({ modelProvider: durableModelProvider(ctx, provider) }) (docs/agents.md, "OpenAI Agents SDK").`,
  );
  markFatal(ctx, error);
  throw error;
}

function wrapFunctionTool(ctx: WorkflowContext, tool: FunctionToolLike, options: DurableToolsOptions, agentName: string): FunctionToolLike {
  const wrapped = Object.create(Object.getPrototypeOf(tool) as object | null, Object.getOwnPropertyDescriptors(tool)) as FunctionToolLike;
  // The SDK's own approval (an interruption the app must resolve and resume) is off: the call
  // itself asks, as a step approval, when the tool's needsApproval (or options.approval) says so.
  const needsApproval = tool.needsApproval;
  wrapped.needsApproval = noApproval;
  wrapped.invoke = async (runContext, input, details) => {
    refuseAfterUnrecordedTurn(ctx, agentName, tool.name);
    const toolCall = details?.toolCall as { callId?: unknown } | undefined;
    const callId = typeof toolCall?.callId === "string" ? toolCall.callId : undefined;
    const callOptions = { toolCallId: callId, abortSignal: details?.signal };
    const args = argumentsOf(input);
    const sdkRule =
      typeof needsApproval === "function"
        ? (parsed: unknown) => (needsApproval as (runContext: unknown, input: unknown, callId?: string) => Promise<boolean>)(runContext, parsed, callId)
        : needsApproval;
    const approval = approvalCheck(options, tool.name, args, callOptions, sdkRule);
    return durableCall(
      ctx,
      tool.name,
      args,
      callOptions,
      options,
      (_input, durable) => {
        // The SDK's details, with its hidden fields, plus the step's: execute(input, runContext, details) reads them.
        const extra: Record<string, unknown> = { idempotencyKey: durable.idempotencyKey, step: durable.step, signal: durable.abortSignal };
        if (durable.previous) extra.previous = durable.previous;
        const descriptors = details ? Object.getOwnPropertyDescriptors(details) : {};
        const withStep = Object.assign(
          Object.create(details ? (Object.getPrototypeOf(details) as object | null) : Object.prototype, descriptors) as object,
          extra,
        );
        return tool.invoke(runContext, input, withStep as Record<PropertyKey, unknown>);
      },
      { approval },
    );
  };
  return wrapped;
}

/**
 * A handoff whose call is a step `tool:<handoff tool name>:<call id>`, like a function tool's:
 * its recorded value is what the SDK hands the model (`{ assistant: <agent name> }`), so the
 * conversation has the call's result, and a continue hands the step back without running the
 * handoff's own `onHandoff` again. The agent handed to is the handoff's (already durable) agent.
 */
function durableHandoff(ctx: WorkflowContext, handoff: HandoffLike, options: DurableToolsOptions, agentName: string): HandoffLike {
  return handoff.clone({
    onInvokeHandoff: async (runContext, input) => {
      refuseAfterUnrecordedTurn(ctx, agentName, handoff.toolName);
      let target = handoff.agent;
      await durableCall(ctx, handoff.toolName, argumentsOf(input), { toolCallId: takeCallId(ctx, handoff.toolName) }, options, async () => {
        target = await handoff.onInvokeHandoff(runContext, input);
        return { assistant: target.name };
      });
      return target;
    },
  });
}

/** The names options may give settings for: function tools, and handoffs given as `handoff(...)` objects (those may run `onHandoff`). */
function toolNames(agent: AgentLike, seen = new Set<AgentLike>()): string[] {
  if (seen.has(agent)) return [];
  seen.add(agent);
  const names = agent.tools.filter(isFunctionTool).map((t) => t.name);
  for (const h of agent.handoffs ?? []) {
    if (isAgent(h)) names.push(...toolNames(h, seen));
    else if (isHandoff(h)) names.push(...(typeof h.toolName === "string" ? [h.toolName] : []), ...toolNames(h.agent, seen));
  }
  return names;
}

/**
 * An Agents SDK agent made durable: a clone whose function tools' calls are steps
 * `tool:<name>:<call id>` with the effect, query, compensation, retry and timeout you give per
 * tool name, and whose Model object (if it has one) is wrapped by durableAgentModel. The agents
 * it hands off to are made durable the same way, and each handoff's call is a step
 * `tool:transfer_to_<agent>:<call id>`. Run it with the SDK as before:
 *
 *   const result = await run(durableAgent(ctx, agent, {
 *     effects: { lookupOrder: "read", sendEmail: "irreversible" },
 *   }), ticket);
 *
 * A tool's `needsApproval` (or `options.approval`) makes its calls step approvals: the call parks
 * the run until engine.approve(id, step); the SDK's own interruption is switched off for it.
 * An agent that names its model by a string gets it from the Runner's model provider: wrap that
 * one with durableModelProvider. A tool call that follows a model turn steplog did not record is
 * refused (INVALID_OPTION) before the tool runs. Hosted tools run on OpenAI's side and MCP
 * servers' tools are not wrapped; an agent used as a tool (`asTool`) is one call, one step.
 */
export function durableAgent<A extends object>(ctx: WorkflowContext, agent: A, options: DurableAgentOptions = {}): A {
  if (!isAgent(agent)) throw new InvalidOptionError("durableAgent(ctx, agent): agent must be an Agents SDK Agent (with tools and clone).");
  if (made.has(agent)) return agent;
  const { model: modelOptions, ...toolOptions } = options;
  checkToolOptions("durableAgent", toolOptions, [...new Set(toolNames(agent))]);
  const clones = new Map<AgentLike, AgentLike>();
  const wrapAgent = (original: AgentLike): AgentLike => {
    const known = clones.get(original);
    if (known) return known;
    if (made.has(original)) return original;
    const config: Record<string, unknown> = {
      tools: original.tools.map((t) => (isFunctionTool(t) ? wrapFunctionTool(ctx, t, toolOptions, original.name) : t)),
    };
    if (isAgentModel(original.model)) config.model = durableAgentModel(ctx, original.model, modelOptions);
    const clone = original.clone(config);
    clones.set(original, clone);
    made.add(clone);
    // Handoffs after the clone is known, so agents that hand off to each other end up wrapped once.
    if (Array.isArray(original.handoffs) && original.handoffs.length > 0) {
      clone.handoffs = original.handoffs.map((h) => (isAgent(h) ? wrapAgent(h) : isHandoff(h) ? h.clone({ agent: wrapAgent(h.agent) }) : h));
      // The Runner takes the handoffs from here (an agent in `handoffs` becomes a Handoff only there): each call a step.
      const enabledHandoffs = clone.getEnabledHandoffs;
      if (typeof enabledHandoffs === "function") {
        clone.getEnabledHandoffs = async (runContext) =>
          (await enabledHandoffs.call(clone, runContext)).map((h) => (isHandoff(h) ? durableHandoff(ctx, h, toolOptions, clone.name) : h));
      }
    }
    return clone;
  };
  return wrapAgent(agent) as A;
}
