/**
 * durableClaudeQuery: a Claude Agent SDK session (`query()` of `@anthropic-ai/claude-agent-sdk`,
 * which runs Claude Code as the agent loop) as a durable step. The SDK is not imported: the
 * caller passes its `query`.
 *
 * - The session is the step `claude` (or `claude:<label>`); its value is the session's result
 *   (the result message's `structured_output` when there is one, else its `result` text).
 * - The session id is recorded (the step `<session>/session:<attempt>`) when the SDK reports it in its
 *   init message, before any tool call is let through. A continue after a crash resumes that
 *   session (`options.resume`, with `resumePrompt`) instead of starting a new one.
 * - Each tool call is an intent/outcome pair through the SDK's hooks (claude-tools.ts).
 * - Claude Code must not outlive its owner: on Linux it is spawned under `setpriv --pdeathsig
 *   KILL` (util-linux), so the kernel kills it when the owner dies; wherever it outlives the
 *   owner, its hooks cannot reach the owner and Claude Code refuses every further tool call.
 */

import { spawn } from "node:child_process";
import fs from "node:fs";
import { randomUUID } from "node:crypto";
import { InvalidOptionError, SteplogError } from "../base/errors.js";
import type { Effect, StepInfo, StepOptions, UnknownOutcomePolicy, Usage, WorkflowContext } from "../workflow/context.js";
import type { StandardSchemaV1 } from "../workflow/value-schemas.js";
import { RECORDED_STEPS, type RecordedStep } from "../steps/recorded-steps.js";
import { INSIDE_STEP } from "../steps/inside-step.js";
import { isMachineryError, markFatal, throwIfFatal } from "./run-state.js";
import { SessionTools } from "./claude-tools.js";
import type { ToolQuery } from "./tools.js";

/** A message the SDK's query yields, as far as steplog reads it. */
export interface ClaudeMessageLike {
  type: string;
  subtype?: string;
  session_id?: string;
  [field: string]: unknown;
}

/** The SDK's `query` function, by shape. */
export type ClaudeQueryLike = (params: { prompt: string; options?: Record<string, any> }) => AsyncIterable<ClaudeMessageLike>;

/** What the session is asked: the prompt and the SDK's options (steplog adds hooks, the session id, an abort controller). */
export interface ClaudeQueryParams {
  prompt: string;
  options?: Record<string, any>;
}

/** How the session's tool calls behave as steps, per tool name (`Bash`, `Write`, `mcp__server__tool`, …). */
export interface DurableClaudeQueryOptions<T = unknown> {
  /** Names the session's step `claude:<label>` instead of `claude` (one label per stage). */
  label?: string;
  /** What each tool does to the world. A tool not named here is "irreversible". */
  effects?: Partial<Record<string, Effect>>;
  /** Asks whether a call cut off by a crash happened (see docs/agents.md). */
  query?: Partial<Record<string, ToolQuery>>;
  /** Overrides the effect's default answer to a call cut off inside its effect. */
  onUnknown?: Partial<Record<string, UnknownOutcomePolicy>>;
  /** Schema of the session's result (the step's value), checked when recorded and when reused. */
  result?: StandardSchemaV1<unknown, T>;
  /** The prompt a continue sends to the resumed session. */
  resumePrompt?: string;
}

/** Thrown when a Claude Code session ended with an error (its step is recorded failed). */
export class ClaudeSessionFailedError extends SteplogError {
  override name = "ClaudeSessionFailedError";
  constructor(step: string, sessionId: string | undefined, detail: string, cause?: unknown) {
    super(
      "CLAUDE_SESSION_FAILED",
      `Claude Code session ${JSON.stringify(step)}${sessionId ? ` (session ${sessionId})` : ""} failed: ${detail}. ` +
        `Its tool calls so far are recorded; a continue resumes the session, and a call that already ran is not run again.`,
      cause === undefined ? { step } : { step, cause },
    );
  }
}

export const DEFAULT_RESUME_PROMPT =
  "Your session was interrupted (the process running it stopped) and has been resumed. Continue the task from where you left off; do not redo work that is done.";

const OWNED_OPTIONS = ["resume", "sessionId", "continue", "forkSession", "resumeSessionAt", "abortController"] as const;
const KNOWN = ["label", "effects", "query", "onUnknown", "result", "resumePrompt"];

function check(query: unknown, params: ClaudeQueryParams, settings: DurableClaudeQueryOptions<unknown>): void {
  if (typeof query !== "function")
    throw new InvalidOptionError(
      'durableClaudeQuery(ctx, query, …): query must be the SDK\'s query function (import { query } from "@anthropic-ai/claude-agent-sdk").',
    );
  if (typeof params !== "object" || params === null || typeof params.prompt !== "string") {
    throw new InvalidOptionError("durableClaudeQuery(ctx, query, { prompt, options }): prompt must be a string.");
  }
  for (const key of OWNED_OPTIONS) {
    if (params.options?.[key] !== undefined) {
      throw new InvalidOptionError(`durableClaudeQuery: options.${key} is steplog's to set (it starts, records and resumes the session); leave it out.`);
    }
  }
  for (const key of Object.keys(settings)) {
    if (!KNOWN.includes(key)) throw new InvalidOptionError(`durableClaudeQuery: ${key} is not an option; the options are ${KNOWN.join(", ")}.`);
  }
  if (settings.label !== undefined && (typeof settings.label !== "string" || settings.label === "" || /[#/]/.test(settings.label))) {
    throw new InvalidOptionError(`durableClaudeQuery: label must be a non-empty string without "#" or "/", got ${JSON.stringify(settings.label)}.`);
  }
}

const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"].find((p) => process.platform === "linux" && fs.existsSync(p));

/** Spawns Claude Code so that it dies with its owner (Linux, with util-linux's setpriv). */
function ownerBound(stderr: (data: string) => void) {
  return (o: { command: string; args: string[]; cwd?: string; env: Record<string, string | undefined>; signal?: AbortSignal }) => {
    const [command, args] = SETPRIV ? [SETPRIV, ["--pdeathsig", "KILL", "--", o.command, ...o.args]] : [o.command, o.args];
    const child = spawn(command, args, { cwd: o.cwd, env: o.env as NodeJS.ProcessEnv, signal: o.signal, stdio: ["pipe", "pipe", "pipe"] });
    child.stderr.setEncoding("utf8").on("data", stderr);
    child.on("error", () => undefined);
    return child;
  };
}

/** The session's usage from its result message: tokens, and the SDK's cost estimate. */
function usageOfResult(result: ClaudeMessageLike): Usage {
  const used = (result.usage ?? {}) as Record<string, unknown>;
  const out: Usage = {};
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
  const set = (field: string, v: number | undefined) => {
    if (v !== undefined) out[field] = v;
  };
  set("inputTokens", num(used.input_tokens));
  set("outputTokens", num(used.output_tokens));
  set("cachedInputTokens", num(used.cache_read_input_tokens));
  set("costUsd", num(result.total_cost_usd));
  return out;
}

const noConversation = (m: ClaudeMessageLike) =>
  m.type === "result" && Array.isArray(m.errors) && m.errors.some((e) => /no conversation found/i.test(String(e)));

/**
 * Run one Claude Agent SDK session as a durable step, and resolve with its result.
 *
 *   import { query } from "@anthropic-ai/claude-agent-sdk";
 *   const plan = await durableClaudeQuery(ctx, query, { prompt, options: { allowedTools: ["Read", "Bash"] } },
 *     { label: "planner", effects: { Read: "read", Bash: "irreversible" } });
 */
export async function durableClaudeQuery<T = unknown>(
  ctx: WorkflowContext,
  query: ClaudeQueryLike,
  params: ClaudeQueryParams,
  settings: DurableClaudeQueryOptions<T> = {},
): Promise<T> {
  throwIfFatal(ctx);
  check(query, params, settings as DurableClaudeQueryOptions<unknown>);
  const name = settings.label === undefined ? "claude" : `claude:${settings.label}`;
  const stepOptions: StepOptions<unknown> = { effect: "idempotent", onUnknown: "redrive" };
  if (settings.result) stepOptions.result = settings.result as StandardSchemaV1<unknown, unknown>;
  try {
    return (await ctx.step<unknown>(name, stepOptions, (info) => runSession(ctx, query, params, settings as DurableClaudeQueryOptions<unknown>, info))) as T;
  } catch (error) {
    if (isMachineryError(error, ctx.signal)) markFatal(ctx, error);
    throw error;
  }
}

async function runSession(
  ctx: WorkflowContext,
  query: ClaudeQueryLike,
  params: ClaudeQueryParams,
  settings: DurableClaudeQueryOptions<unknown>,
  info: StepInfo,
): Promise<unknown> {
  const prefix = `${info.step.replaceAll("#", "%23")}/`;
  const read = (ctx as unknown as Record<symbol, ((prefix: string) => RecordedStep[]) | undefined>)[RECORDED_STEPS];
  const own = read?.(info.step).find((row) => row.key === info.step);
  const sessionRow =
    own && own.status !== "succeeded"
      ? read?.(`${prefix}session:`)
          .filter((row) => row.status === "succeeded")
          .at(-1)
      : undefined;
  const recorded = sessionRow?.status === "succeeded" ? ((await sessionRow.value()) as { sessionId?: unknown } | undefined) : undefined;
  const resumeId = typeof recorded?.sessionId === "string" ? recorded.sessionId : undefined;

  const abort = new AbortController();
  const stop = () => abort.abort(info.signal.reason);
  if (info.signal.aborted) stop();
  else info.signal.addEventListener("abort", stop, { once: true });

  let sessionId: string | undefined;
  // Resolved once this query's session id is durable: the hooks let no call through before.
  let markReady!: (value: unknown) => void;
  let failReady!: (error: unknown) => void;
  let ready!: Promise<unknown>;
  const arm = () => {
    ready = new Promise<unknown>((resolve, reject) => ((markReady = resolve), (failReady = reject)));
    ready.catch(() => undefined);
  };
  arm();
  const tools = new SessionTools(
    ctx,
    info.step,
    prefix,
    settings,
    () => ready,
    () => abort.abort(),
  );
  const userOptions = params.options ?? {};
  let stderrTail = "";
  const keepStderr = (data: string) => {
    stderrTail = (stderrTail + data).slice(-2000);
    (userOptions.stderr as ((d: string) => void) | undefined)?.(data);
  };
  const hooks = { ...(userOptions.hooks as Record<string, unknown[]> | undefined) };
  const add = (event: string, hook: (input: any, id: string | undefined) => Promise<unknown>) => (hooks[event] = [...(hooks[event] ?? []), { hooks: [hook] }]);
  add("PreToolUse", tools.pre);
  add("PostToolUse", tools.post);
  add("PostToolUseFailure", tools.failed);

  /** One query: resuming `resume`, or a new session (its id recorded at init, as `<session>/session:<attempt>`). */
  const run = async (resume: string | undefined): Promise<ClaudeMessageLike | undefined> => {
    const options: Record<string, unknown> = { ...userOptions, hooks, abortController: abort };
    if (options.spawnClaudeCodeProcess === undefined) options.spawnClaudeCodeProcess = ownerBound(keepStderr);
    if (resume !== undefined) options.resume = resume;
    else options.sessionId = randomUUID();
    if (resume !== undefined) {
      sessionId = resume;
      markReady(sessionId);
    }
    const settled = told.length === 0 ? "" : `\n\nCalls of this session that steplog settled while it was interrupted:\n${told.join("\n")}`;
    const prompt = resume !== undefined ? `${settings.resumePrompt ?? DEFAULT_RESUME_PROMPT}${settled}` : `${params.prompt}${settled}`;
    let result: ClaudeMessageLike | undefined;
    try {
      for await (const message of query({ prompt, options })) {
        if (message.type === "system" && message.subtype === "init" && sessionId === undefined && typeof message.session_id === "string") {
          sessionId = message.session_id;
          // Recorded before any tool call is let through (the hooks wait for it), and committed
          // before the step returns (irreversible): a crash right after still finds it.
          const record: StepOptions<unknown> = { effect: "irreversible", onUnknown: "redrive" };
          (record as Record<symbol, unknown>)[INSIDE_STEP] = info.step;
          ctx
            .step(`${prefix}session:${info.attempt}`, record, () => ({ sessionId }))
            .then(markReady, (error: unknown) => {
              failReady(error);
              tools.fatal ??= { error };
              abort.abort();
            });
        }
        if (message.type === "result") result = message;
      }
    } catch (error) {
      if (result && noConversation(result)) return result;
      if (tools.fatal) return result;
      throw error;
    }
    return result;
  };

  let told: string[] = [];
  const tail = () => (stderrTail.trim() === "" ? "" : ` (Claude Code's stderr ends: ${stderrTail.trim().slice(-600)})`);
  try {
    // Calls earlier attempts cut off are settled before the session goes on (an escalation stops here).
    if (own !== undefined) told = await tools.resume();
    let result = await run(resumeId);
    // The transcript of the session to resume was never written (cut off before it was): start it anew.
    if (result && resumeId !== undefined && noConversation(result)) {
      sessionId = undefined;
      arm();
      result = await run(undefined);
    }
    await tools.settle();
    const fatal = tools.fatal as { error: unknown } | undefined;
    if (fatal) throw fatal.error;
    if (!result) throw new ClaudeSessionFailedError(info.step, sessionId, "the SDK ended without a result message");
    const used = usageOfResult(result);
    if (Object.keys(used).length > 0) info.usage(used);
    if (result.subtype !== "success" || result.is_error === true) {
      const errors = Array.isArray(result.errors) ? result.errors.join("; ") : String(result.result ?? result.subtype);
      throw new ClaudeSessionFailedError(info.step, sessionId, `${String(result.subtype)}: ${errors}${tail()}`);
    }
    return result.structured_output !== undefined ? result.structured_output : (result.result ?? null);
  } catch (error) {
    await tools.settle().catch(() => undefined);
    if (tools.fatal) throw tools.fatal.error;
    if (isMachineryError(error, info.signal) || error instanceof ClaudeSessionFailedError) throw error;
    throw new ClaudeSessionFailedError(info.step, sessionId, `${error instanceof Error ? error.message : String(error)}${tail()}`, error);
  } finally {
    info.signal.removeEventListener("abort", stop);
    abort.abort();
  }
}
