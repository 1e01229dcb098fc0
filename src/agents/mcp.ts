/**
 * durableMcp: the tool calls an app makes through an MCP client (`Client` of
 * `@modelcontextprotocol/sdk`), each made a durable step. Works on the client's shape (its
 * `callTool` and `listTools`); the SDK is not imported.
 *
 * Each `callTool` is the step `tool:<tool name>:<call id>` (the id the caller gives as
 * `toolCallId`, else a counter per tool name in call order: 1, 2, …), as durableTools names its
 * calls. Its effect is what `effects` declares for the tool, else what the server's annotations
 * say (from `listTools`, listed once per client): `readOnlyHint` → read, `idempotentHint` →
 * idempotent, anything else irreversible (MCP's default: a tool may be destructive). The step's
 * idempotency key travels in the request's `_meta` under MCP_IDEMPOTENCY_KEY, so a server can
 * deduplicate a call that a continue sends again.
 */

import type { Effect } from "../workflow/context.js";
import type { WorkflowContext } from "../workflow/context.js";
import { InvalidOptionError } from "../base/errors.js";
import { markFatal, nextCallNumber, throwIfFatal } from "./run-state.js";
import { checkToolOptions, durableCall, type DurableToolsOptions } from "./tools.js";
import { unlessAnswerLost } from "./mcp-lost.js";

/**
 * The `_meta` key a durable call carries its idempotency key under (`${runId}:${step}`, the same
 * when a continue sends the call again). A prefix of reverse-DNS labels and a name, as MCP's
 * rules for `_meta` keys ask; `io.steplog/` is not one of the prefixes MCP reserves.
 */
export const MCP_IDEMPOTENCY_KEY = "io.steplog/idempotency-key";

/** What MCP's `ToolAnnotations` say about a tool, as far as steplog reads them. */
export interface McpToolAnnotationsLike {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** A tool as `listTools` lists it: its name and annotations (the rest is not read). */
export interface McpToolLike {
  name: string;
  annotations?: McpToolAnnotationsLike;
}

/** The parameters of a `tools/call` request, as `Client.callTool` takes them. */
export interface McpCallToolParamsLike {
  name: string;
  arguments?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

/** The structural minimum of an MCP `Client`: `callTool` and `listTools`. */
export interface McpClientLike {
  callTool(params: McpCallToolParamsLike, ...rest: any[]): Promise<unknown>;
  listTools(params?: { cursor?: string }, ...rest: any[]): Promise<{ tools: McpToolLike[]; nextCursor?: string }>;
}

/**
 * The structural minimum of an OpenAI Agents SDK `MCPServer` (`MCPServerStdio`,
 * `MCPServerStreamableHttp`, …): the SDK calls `callTool(name, args, meta, options)` (or
 * `callToolResult`) itself, inside its run, on the servers given as an agent's `mcpServers`.
 */
export interface AgentsMcpServerLike {
  readonly name: string;
  callTool(toolName: string, args: Record<string, unknown> | null, meta?: Record<string, unknown> | null, options?: { signal?: AbortSignal }): Promise<unknown>;
  callToolResult?(
    toolName: string,
    args: Record<string, unknown> | null,
    meta?: Record<string, unknown> | null,
    options?: { signal?: AbortSignal },
  ): Promise<unknown>;
  listTools(): Promise<McpToolLike[]>;
}

/** What a caller may add to `callTool`'s params: the call's id (not sent to the server). */
export interface DurableMcpCallFields {
  /** Keys the step `tool:<name>:<toolCallId>` (e.g. the model's call id) instead of a counter. */
  toolCallId?: string;
}

/** Per tool name: how calls through durableMcp behave as steps. */
export interface DurableMcpOptions<Names extends string = string> extends Omit<DurableToolsOptions<Names>, "approval"> {
  /**
   * Tools whose calls need a person's yes first: each call parks the run (waitingFor
   * `{ kind: "approval", step }`) until engine.approve(id, step). A list of tool names, or
   * "destructive": every tool the server's annotations call destructive (`readOnlyHint` not
   * true and `destructiveHint` not false, MCP's defaults), whatever `effects` says.
   */
  approval?: readonly Names[] | "destructive";
}

type CallToolOf<C> = C extends { callTool(params: infer P, ...rest: infer R): infer Out } ? { params: P; rest: R; out: Out } : never;

/**
 * The client durableMcp returns: the same client, whose `callTool` also takes `toolCallId` in
 * its params and records each call as a step.
 */
export type DurableMcpClient<C extends McpClientLike> = C & {
  callTool(params: CallToolOf<C>["params"] & DurableMcpCallFields, ...rest: CallToolOf<C>["rest"]): CallToolOf<C>["out"];
};

const EFFECTS: readonly Effect[] = ["read", "idempotent", "compensatable", "irreversible"];

/** The tools each client lists, listed once per client (a promise, so concurrent calls share it). */
const listings = new WeakMap<object, Promise<Map<string, McpToolLike>>>();

async function listAll(client: McpClientLike): Promise<Map<string, McpToolLike>> {
  const tools = new Map<string, McpToolLike>();
  let cursor: string | undefined;
  const seen = new Set<string>();
  do {
    const page = (await client.listTools(cursor === undefined ? undefined : { cursor })) as unknown as
      McpToolLike[] | { tools?: McpToolLike[]; nextCursor?: unknown };
    // An OpenAI Agents SDK server lists every page itself, as an array.
    if (Array.isArray(page)) {
      for (const tool of page) if (typeof tool?.name === "string") tools.set(tool.name, tool);
      break;
    }
    for (const tool of page?.tools ?? []) if (typeof tool?.name === "string") tools.set(tool.name, tool);
    cursor = typeof page?.nextCursor === "string" && page.nextCursor !== "" && !seen.has(page.nextCursor) ? page.nextCursor : undefined;
    if (cursor !== undefined) seen.add(cursor);
  } while (cursor !== undefined);
  return tools;
}

function listingOf(client: McpClientLike): Promise<Map<string, McpToolLike>> {
  let listing = listings.get(client);
  if (!listing) {
    listing = listAll(client);
    // A listing that failed is not kept: the next call lists again.
    listing.catch(() => listings.delete(client));
    listings.set(client, listing);
  }
  return listing;
}

/** The effect MCP's annotations give a tool: read-only → read, idempotent → idempotent, else irreversible. */
export function effectFromAnnotations(annotations: McpToolAnnotationsLike | undefined): Effect {
  if (annotations?.readOnlyHint === true) return "read";
  if (annotations?.idempotentHint === true) return "idempotent";
  return "irreversible";
}

/** Destructive as MCP means it: not read-only, and not said to be only additive. */
function isDestructive(annotations: McpToolAnnotationsLike | undefined): boolean {
  return annotations?.readOnlyHint !== true && annotations?.destructiveHint !== false;
}

const isSchema = (value: unknown): boolean =>
  typeof value === "object" && value !== null && (typeof (value as { parse?: unknown }).parse === "function" || "_def" in value || "_zod" in value);

/**
 * callTool's arguments after params, with `signal` (the step's) joined to the request options.
 * The SDK 1.x takes `(params, resultSchema?, options?)`; 2.x `(params, options?)`. Options
 * alone (an object that is not a schema) are 2.x's; anything else is taken as 1.x's, and with
 * no arguments the options go third, which 2.x ignores (its call then has no steplog signal).
 */
function withSignal(rest: unknown[], signal: AbortSignal): unknown[] {
  const join = (options: unknown) => {
    const given = typeof options === "object" && options !== null ? (options as { signal?: unknown }) : {};
    return { ...given, signal: given.signal instanceof AbortSignal ? AbortSignal.any([given.signal, signal]) : signal };
  };
  if (rest.length === 1 && typeof rest[0] === "object" && rest[0] !== null && !isSchema(rest[0])) return [join(rest[0])];
  return [rest[0], join(rest[1]), ...rest.slice(2)];
}

/** A recorded CallToolResult as an Agents SDK server's `callTool` gives it: the content, with the rest on it. */
function contentOf(result: unknown): unknown {
  const { content, structuredContent, isError, _meta } = (result ?? {}) as {
    content?: unknown[];
    structuredContent?: unknown;
    isError?: unknown;
    _meta?: unknown;
  };
  const out = Object.assign([...(content ?? [])], structuredContent === undefined ? {} : { structuredContent });
  if (isError !== undefined) Object.assign(out, { isError });
  if (_meta !== undefined) Object.assign(out, { _meta });
  return out;
}

const isClient = (client: unknown): client is McpClientLike =>
  typeof client === "object" && client !== null && typeof (client as McpClientLike).callTool === "function";

function checkOptions(options: DurableMcpOptions): void {
  if (typeof options !== "object" || options === null) throw new InvalidOptionError("durableMcp(ctx, client, options): options must be an object.");
  const known = ["effects", "query", "compensate", "onUnknown", "retry", "timeoutMs", "approval"];
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw new InvalidOptionError(`durableMcp: options.${key} is not an option; the options are ${known.join(", ")}.`);
  }
  for (const kind of ["effects", "query", "compensate", "onUnknown", "retry", "timeoutMs"] as const) {
    const value = options[kind];
    if (value !== undefined && (typeof value !== "object" || value === null || Array.isArray(value))) {
      throw new InvalidOptionError(`durableMcp: options.${kind} must be an object of tool name → setting.`);
    }
  }
  for (const [name, effect] of Object.entries(options.effects ?? {})) {
    if (!EFFECTS.includes(effect as Effect)) {
      throw new InvalidOptionError(`durableMcp: options.effects.${name} is ${JSON.stringify(effect)}; an effect is one of ${EFFECTS.join(", ")}.`);
    }
  }
  for (const kind of ["query", "compensate"] as const) {
    for (const [name, fn] of Object.entries(options[kind] ?? {})) {
      if (typeof fn !== "function") throw new InvalidOptionError(`durableMcp: options.${kind}.${name} must be a function.`);
    }
  }
  const approval = options.approval;
  if (approval !== undefined && approval !== "destructive" && !(Array.isArray(approval) && approval.every((n) => typeof n === "string" && n !== ""))) {
    throw new InvalidOptionError(`durableMcp: options.approval must be a list of tool names or "destructive", got ${JSON.stringify(approval)}.`);
  }
}

/** The tool names the options give settings for. */
function namedTools(options: DurableMcpOptions): string[] {
  const names = new Set<string>();
  for (const kind of ["effects", "query", "compensate", "onUnknown", "retry", "timeoutMs"] as const)
    for (const n of Object.keys(options[kind] ?? {})) names.add(n);
  if (Array.isArray(options.approval)) for (const n of options.approval) names.add(n);
  return [...names];
}

/**
 * An MCP client whose tool calls are durable steps. Returns the same client (a Proxy): every
 * method but `callTool` is the client's own.
 *
 *   const mcp = durableMcp(ctx, client, { effects: { create_issue: "irreversible" } });
 *   const result = await mcp.callTool({ name: "search_issues", arguments: { q } });
 *
 * A call's recorded value is the server's `CallToolResult` (an `isError` result included); an
 * error the client throws (the server answered with a JSON-RPC error, or the request failed) is
 * recorded as the call's error and thrown again, on this attempt and on every continue. The
 * step's signal (a `timeoutMs`, the run's deadline, a cancel) aborts the request. Options
 * that name a tool the server does not list are refused (INVALID_OPTION) at the first call.
 */
export function durableMcp<S extends AgentsMcpServerLike>(ctx: WorkflowContext, server: S, options?: DurableMcpOptions): S;
export function durableMcp<C extends McpClientLike>(ctx: WorkflowContext, client: C, options?: DurableMcpOptions): DurableMcpClient<C>;
export function durableMcp<C extends McpClientLike>(ctx: WorkflowContext, client: C, options: DurableMcpOptions = {}): DurableMcpClient<C> {
  if (!isClient(client)) throw new InvalidOptionError("durableMcp(ctx, client): client must be an MCP client (an object with callTool and listTools).");
  checkOptions(options);
  const { approval, ...toolOptions } = options;
  const named = namedTools(options);
  let checked = false;

  const needsListing = (name: string) => named.length > 0 || approval === "destructive" || toolOptions.effects?.[name] === undefined;

  const callTool = async (params: McpCallToolParamsLike & DurableMcpCallFields, ...rest: unknown[]): Promise<unknown> => {
    throwIfFatal(ctx);
    if (typeof params === "string") return serverCall(false, params, rest);
    if (typeof params !== "object" || params === null || typeof params.name !== "string" || params.name === "") {
      throw new InvalidOptionError(`durableMcp: callTool(params) needs params.name, the tool's name; got ${JSON.stringify(params)}.`);
    }
    const { toolCallId, ...sent } = params;
    if (toolCallId !== undefined && (typeof toolCallId !== "string" || toolCallId === "")) {
      throw new InvalidOptionError(`durableMcp: callTool's params.toolCallId must be a non-empty string, got ${JSON.stringify(toolCallId)}.`);
    }
    return stepFor(sent.name, sent.arguments, toolCallId, (key, signal) =>
      client.callTool({ ...sent, _meta: { ...sent._meta, [MCP_IDEMPOTENCY_KEY]: key } }, ...withSignal(rest, signal)),
    );
  };

  /**
   * A call by an OpenAI Agents SDK server's `callTool(name, args, meta, options)` (the content) or
   * `callToolResult` (the whole result). The whole result is what is recorded when the server has
   * `callToolResult`: a content array's `structuredContent` and `isError` would not survive it.
   */
  const serverCall = async (whole: boolean, name: string, [args, meta, options]: unknown[]): Promise<unknown> => {
    const server = client as unknown as AgentsMcpServerLike;
    const full = typeof server.callToolResult === "function";
    const given = (typeof options === "object" && options !== null ? options : {}) as { signal?: AbortSignal };
    const value = await stepFor(name, args ?? null, undefined, (key, signal) => {
      const sentMeta = { ...(meta as Record<string, unknown> | null | undefined), [MCP_IDEMPOTENCY_KEY]: key };
      const sentOptions = { ...given, signal: given.signal ? AbortSignal.any([given.signal, signal]) : signal };
      const sentArgs = (args ?? null) as Record<string, unknown> | null;
      return full ? server.callToolResult!(name, sentArgs, sentMeta, sentOptions) : server.callTool(name, sentArgs, sentMeta, sentOptions);
    });
    return whole || !full ? value : contentOf(value);
  };

  /** One tool call as the step `tool:<name>:<call id>`; `send` makes it, given the step's key and signal. */
  const stepFor = async (name: string, args: unknown, toolCallId: string | undefined, send: (key: string, signal: AbortSignal) => Promise<unknown>) => {
    // The call's number is taken now, in call order, before anything is awaited.
    const callId = toolCallId ?? String(nextCallNumber(ctx, name));

    let tool: McpToolLike | undefined;
    if (needsListing(name)) {
      if (typeof client.listTools !== "function") {
        throw new InvalidOptionError(
          `durableMcp: tool ${JSON.stringify(name)} has no effect in options.effects and the client has no listTools to read its annotations from; declare its effect.`,
        );
      }
      const listing = await listingOf(client);
      if (!checked) {
        try {
          checkToolOptions("durableMcp", toolOptions, [...listing.keys()]);
          for (const n of Array.isArray(approval) ? approval : []) {
            if (!listing.has(n)) {
              throw new InvalidOptionError(
                `durableMcp: options.approval names ${JSON.stringify(n)}, which is not one of the server's tools (${[...listing.keys()].join(", ")}).`,
              );
            }
          }
        } catch (error) {
          markFatal(ctx, error);
          throw error;
        }
        checked = true;
      }
      tool = listing.get(name);
    }
    const effect = toolOptions.effects?.[name] ?? effectFromAnnotations(tool?.annotations);
    const needsApproval = approval === "destructive" ? isDestructive(tool?.annotations) : (approval?.includes(name) ?? false);

    return durableCall(
      ctx,
      name,
      args,
      { toolCallId: callId },
      { ...toolOptions, effects: { ...toolOptions.effects, [name]: effect } },
      (_input, durable) => unlessAnswerLost(effect, durable.abortSignal, () => send(durable.idempotencyKey, durable.abortSignal)),
      { approval: needsApproval },
    );
  };
  const callToolResult = (name: string, ...rest: unknown[]) => (throwIfFatal(ctx), serverCall(true, name, rest));

  return new Proxy(client, {
    get(object, property) {
      if (property === "callTool") return callTool;
      if (property === "callToolResult" && typeof (object as { callToolResult?: unknown }).callToolResult === "function") return callToolResult;
      const value = Reflect.get(object, property, object) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  }) as DurableMcpClient<C>;
}
