/**
 * durableTools: the tools an agent already has, each call made a durable step.
 *
 * Works on the shapes agent frameworks use, by structure only (no framework is imported):
 * - an object with `execute(input, options)`, where `options.toolCallId` names the call (the
 *   Vercel AI SDK's `tool({...})`, and most others); every other field is kept as it is;
 * - a plain function `(input, options?) => result` (a hand-written loop's tool table).
 *
 * Each call is `ctx.step("tool:<name>:<call id>", …)` with the tool's declared effect. Without a
 * call id (a plain function called with one argument) the id is a counter per tool name, in
 * call order: 1, 2, … — deterministic, since a continue replays the code in the same order.
 */

import type {
  CompensateInfo,
  Effect,
  QueryAnswer,
  QueryInfo,
  RetryOptions,
  StepInfo,
  StepOptions,
  UnknownOutcomePolicy,
  WorkflowContext,
} from "../workflow/context.js";
import { IN_SIBLING_WINDOW, LAUNCHED_BESIDE_START } from "../steps/launched-beside.js";
import { InvalidOptionError } from "../base/errors.js";
import { inTurn, isMachineryError, markFatal, nextCallNumber, throwIfFatal } from "./run-state.js";
import { toolStepName } from "./step-names.js";
import {
  approvalOptionError,
  checkOfRule,
  deniedError,
  ruleFor,
  type ApprovalCheck,
  type ApprovalDecision,
  type ToolApprovalCall,
  type ToolApprovalOption,
} from "./tool-approval.js";

/** Which call of which tool a query or compensation is about. */
export interface ToolCallInfo {
  toolName: string;
  /** The framework's or the model's call id; undefined when the tool was called without one. */
  toolCallId: string | undefined;
  /** The input the tool was called with (in this attempt: the same as in the cut-off one on a continue). */
  input: unknown;
}

export type ToolQuery = (info: QueryInfo & ToolCallInfo) => QueryAnswer<unknown> | Promise<QueryAnswer<unknown>>;
export type ToolCompensate = (value: unknown, info: CompensateInfo & ToolCallInfo) => unknown;

/** Per tool name: how its calls behave as steps. */
export interface DurableToolsOptions<Names extends string = string> {
  /** What each tool does to the world. Default "idempotent". */
  effects?: Partial<Record<Names, Effect>>;
  /** Asks the service whether a call cut off by a crash happened, by idempotency key. */
  query?: Partial<Record<Names, ToolQuery>>;
  /** The forward action that undoes a call; must tolerate a call that never happened. */
  compensate?: Partial<Record<Names, ToolCompensate>>;
  /** Overrides the effect's default answer to an unknown outcome. */
  onUnknown?: Partial<Record<Names, UnknownOutcomePolicy>>;
  /**
   * Retries inside the step, before the error is recorded as the call's outcome (default: none).
   * An error that remains is recorded and handed to the framework as the tool's error, on this
   * attempt and on every continue alike.
   */
  retry?: Partial<Record<Names, RetryOptions>>;
  /** Abort the tool's signal after this many ms. */
  timeoutMs?: Partial<Record<Names, number>>;
  /**
   * Calls that need a person's yes first: each parks the run (waitingFor `{ kind: "approval",
   * step }`) until engine.approve(id, step), the step's input being the call's arguments. A list
   * of tool names; a record of tool name → `true`, a status of ai 7's `toolApproval`, or a
   * function of the call's arguments answering one; or one function for every tool (ai 7's
   * generic `toolApproval`). It overrides a tool's own `needsApproval` (AI SDK).
   */
  approval?: ToolApprovalOption<Names>;
}

/**
 * What a durable tool passes its tool, besides the framework's own options. See
 * DurableToolCallFields for declaring these fields on a framework's own options type.
 */
export interface DurableToolCallOptions {
  /** The call id the framework gave, or the counter used in its place. */
  toolCallId: string;
  /** `${runId}:${step}`: the same when the call is re-driven after a crash. Send it to the service. */
  idempotencyKey: string;
  /** The call's step key, e.g. `tool:sendEmail:call_3`. */
  step: string;
  /** Set when this call is re-driven after a crash cut it off: check whether it landed. */
  previous?: StepInfo["previous"];
  /** Aborted when the attempt ends or the framework aborts the call. */
  abortSignal: AbortSignal;
}

/**
 * The fields durableTools adds to a tool's options, all optional (a tool may also be called
 * without steplog), for typing a framework's own options with them. With the Vercel AI SDK,
 * annotate a tool's options, or declare them once on the SDK's type (docs/agents.md):
 *
 *   execute: async (input, options: ToolExecutionOptions & DurableToolCallFields) => send(input, options.idempotencyKey)
 *
 *   declare module "ai" {
 *     interface ToolExecutionOptions extends DurableToolCallFields {}
 *   }
 */
export type DurableToolCallFields = Partial<Pick<DurableToolCallOptions, "idempotencyKey" | "step" | "previous">>;

type ToolFunction = (input: any, ...rest: any[]) => unknown;
interface ExecutableTool {
  execute: (input: any, options: any) => unknown;
}

/** The outcome recorded for a call whose tool threw: the framework saw an error, so does the replay. */
export interface RecordedToolError {
  "steplog.toolError": { name: string; message: string };
}

export const TOOL_ERROR_KEY = "steplog.toolError";

export function isRecordedToolError(value: unknown): value is RecordedToolError {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    TOOL_ERROR_KEY in value &&
    typeof (value as RecordedToolError)[TOOL_ERROR_KEY]?.message === "string"
  );
}

function recordError(error: unknown): RecordedToolError {
  const name = error instanceof Error ? error.name : "Error";
  const message = error instanceof Error ? error.message : String(error);
  return { [TOOL_ERROR_KEY]: { name, message } };
}

function rebuildError(recorded: RecordedToolError): Error {
  const { name, message } = recorded[TOOL_ERROR_KEY];
  const error = new Error(message);
  error.name = name;
  return error;
}

/** The tool's retryIf, awaited (it may be async); one that throws wants no retry (the error goes to the model). */
async function retryWanted(retry: NonNullable<StepOptions["retry"]>, error: unknown, attempt: number): Promise<boolean> {
  try {
    return retry.retryIf === undefined ? true : Boolean(await retry.retryIf(error, attempt));
  } catch {
    return false;
  }
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === "object" && value !== null && typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function";
}

const RUN: ApprovalDecision = { kind: "run" };
const ASK: ApprovalDecision = { kind: "ask" };

function combineSignals(...signals: Array<AbortSignal | undefined>): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => s instanceof AbortSignal);
  return present.length === 1 ? present[0]! : AbortSignal.any(present);
}

/** What a plain function's caller may pass as the second argument: the call's id, if it has one. */
export interface ToolCallOptionsIn {
  toolCallId?: string;
  abortSignal?: AbortSignal;
  [other: string]: unknown;
}

/**
 * The shape durableTools returns: the same record, except that a plain function now returns a
 * promise (its call is a step). Objects keep their type, so the record still fits the framework.
 */
export type DurableToolSet<T> = {
  [K in keyof T]: T[K] extends (input: infer I, ...rest: any[]) => infer R ? (input: I, options?: ToolCallOptionsIn) => Promise<Awaited<R>> : T[K];
};

/**
 * Wrap a record of tools so that each call is a durable step keyed `tool:<name>:<toolCallId>`.
 * Returns the same shape: objects keep every field but `execute`; functions stay functions;
 * tools without `execute` (answered by the client) are returned as they are.
 *
 * What a call records: the tool's return value (it must be JSON-like: steplog refuses the rest),
 * or, when the tool throws, the error's name and message; both are handed back on every continue
 * without calling the tool, so the model sees the same results. Errors from steplog itself (the
 * attempt ended, a step refused) are not recorded as the tool's outcome: they end the agent's
 * part of the attempt at the next model turn, rather than being answered by the model.
 */
export function durableTools<T extends Record<string, unknown>>(
  ctx: WorkflowContext,
  tools: T,
  options: DurableToolsOptions<Extract<keyof T, string>> = {},
): DurableToolSet<T> {
  if (typeof tools !== "object" || tools === null) throw new InvalidOptionError("durableTools(ctx, tools): tools must be an object of name → tool.");
  checkToolOptions("durableTools", options, Object.keys(tools));
  const out: Record<string, unknown> = {};
  for (const [name, tool] of Object.entries(tools)) {
    if (typeof tool === "function") {
      const fn = tool as ToolFunction;
      out[name] = (input: unknown, callOptions?: unknown) =>
        durableCall(ctx, name, input, callOptions, options, (i, o) => fn(i, o), { approval: approvalCheck(options, name, input, callOptions) });
    } else if (typeof tool === "object" && tool !== null && typeof (tool as Partial<ExecutableTool>).execute === "function") {
      const original = tool as ExecutableTool & { needsApproval?: unknown };
      const wrapped = Object.assign(Object.create(Object.getPrototypeOf(tool) as object | null) as object, tool) as ExecutableTool & {
        needsApproval?: unknown;
      };
      // The AI SDK's own approval flow would stop before execute and never run the tool: steplog's approval replaces it.
      const needsApproval = original.needsApproval;
      delete wrapped.needsApproval;
      wrapped.execute = (input: unknown, callOptions: unknown) =>
        durableCall(ctx, name, input, callOptions, options, (i, o) => original.execute.call(original, i, o), {
          approval: approvalCheck(options, name, input, callOptions, needsApproval),
        });
      out[name] = wrapped;
    } else {
      out[name] = tool;
    }
  }
  return out as DurableToolSet<T>;
}

/**
 * What decides one call's approval: the `approval` option's rule for the tool, else the tool's
 * own `needsApproval` (a boolean, or a function of the arguments and the framework's options).
 */
export function approvalCheck(
  options: DurableToolsOptions,
  toolName: string,
  input: unknown,
  callOptions: unknown,
  needsApproval?: unknown,
): ApprovalCheck | undefined {
  const given = typeof callOptions === "object" && callOptions !== null ? { ...(callOptions as Record<string, unknown>) } : {};
  delete given.abortSignal;
  const call: ToolApprovalCall = { ...given, toolCallId: typeof given.toolCallId === "string" ? given.toolCallId : undefined };
  const rule = ruleFor(options.approval, toolName);
  if (rule !== undefined) return checkOfRule(rule, typeof options.approval === "function", toolName, input, call);
  if (needsApproval === undefined || needsApproval === null) return undefined;
  return checkOfRule(needsApproval as boolean, false, toolName, input, call);
}

/** Refuse options that name a tool that is not there: a typo would leave a sending tool at the default. */
export function checkToolOptions(where: string, options: DurableToolsOptions, names: string[]): void {
  const approvalError = approvalOptionError(where, options.approval, names);
  if (approvalError) throw new InvalidOptionError(approvalError);
  for (const kind of ["effects", "query", "compensate", "onUnknown", "retry", "timeoutMs"] as const) {
    for (const name of Object.keys(options[kind] ?? {})) {
      if (!names.includes(name)) {
        throw new InvalidOptionError(`${where}: options.${kind} names ${JSON.stringify(name)}, which is not one of the tools (${names.join(", ")}).`);
      }
    }
  }
}

/**
 * One call of one tool as the step `tool:<name>:<call id>`, for durableTools and the framework
 * adapters. `callOptions.toolCallId` names the call (else a counter per tool name) and
 * `callOptions.abortSignal` is combined with the step's; `run` gets the caller's options plus
 * the DurableToolCallOptions. A tool's own error is the call's recorded outcome, thrown again.
 * The step's input is the call's arguments (`input`): a continue that reaches the call's record
 * with other arguments stops (STEP_INPUT_CHANGED). `step.approval` (true, or a check made when
 * the call's turn comes) parks the run before the call until a person approves it.
 */
export async function durableCall(
  ctx: WorkflowContext,
  toolName: string,
  input: unknown,
  callOptions: unknown,
  options: DurableToolsOptions,
  run: (input: unknown, options: Record<string, unknown> & DurableToolCallOptions) => unknown,
  step: { approval?: boolean | ApprovalCheck | undefined } = {},
): Promise<unknown> {
  throwIfFatal(ctx);
  const given = typeof callOptions === "object" && callOptions !== null ? (callOptions as Record<string, unknown>) : {};
  const frameworkId = typeof given.toolCallId === "string" && given.toolCallId !== "" ? given.toolCallId : undefined;
  const effect = options.effects?.[toolName] ?? "idempotent";
  const call: ToolCallInfo = { toolName, toolCallId: frameworkId, input };
  let stepName: string;
  let callId: string;
  try {
    callId = frameworkId ?? String(nextCallNumber(ctx, toolName));
    stepName = toolStepName(toolName, callId);
  } catch (error) {
    markFatal(ctx, error);
    throw error;
  }

  const stepOptions: StepOptions<unknown> = { effect };
  // What the call acts on: a record made for other arguments is not handed back silently.
  if (input !== undefined) stepOptions.input = input;
  // Launched beside a continue's start point: said now, while it is true, though the call may
  // wait its turn (an irreversible one waits for the others) until after the start point settled.
  const beside = (ctx as unknown as Record<symbol, (() => number | undefined) | undefined>)[IN_SIBLING_WINDOW]?.();
  if (beside !== undefined) (stepOptions as Record<symbol, unknown>)[LAUNCHED_BESIDE_START] = beside;
  const query = options.query?.[toolName];
  if (query) stepOptions.query = (info) => query({ ...info, ...call });
  const compensate = options.compensate?.[toolName];
  if (compensate) stepOptions.compensate = (value, info) => compensate(value, { ...info, ...call });
  const onUnknown = options.onUnknown?.[toolName];
  if (onUnknown) stepOptions.onUnknown = onUnknown;
  const retry = options.retry?.[toolName];
  if (retry) stepOptions.retry = retry;
  const timeoutMs = options.timeoutMs?.[toolName];
  if (timeoutMs !== undefined) stepOptions.timeoutMs = timeoutMs;

  const fn = async (info: StepInfo): Promise<unknown> => {
    const toolOptions: Record<string, unknown> & DurableToolCallOptions = {
      ...given,
      toolCallId: callId,
      idempotencyKey: info.idempotencyKey,
      step: info.step,
      abortSignal: combineSignals(given.abortSignal as AbortSignal | undefined, info.signal),
    };
    if (info.previous) toolOptions.previous = info.previous;
    try {
      let output = await run(input, toolOptions);
      // A tool may stream preliminary results (an async iterable); the last one is its result.
      if (isAsyncIterable(output)) {
        let last: unknown;
        for await (const part of output) last = part;
        output = last;
      }
      return output;
    } catch (error) {
      if (isMachineryError(error, info.signal)) throw error;
      // Retries left: let steplog retry inside the step.
      if (retry && info.retry + 1 < (retry.maxAttempts ?? 1) && (await retryWanted(retry, error, info.retry))) throw error;
      return recordError(error);
    }
  };

  let value: unknown;
  try {
    value = await inTurn(ctx, effect === "irreversible", () => {
      const decided = typeof step.approval === "function" ? step.approval() : step.approval ? ASK : RUN;
      const go = (decision: ApprovalDecision) => {
        if (decision.kind === "ask") stepOptions.approval = true;
        if (decision.kind !== "deny") return ctx.step(stepName, stepOptions, fn);
        // Denied by the rule: not run; the model is told, as the framework would tell it.
        return ctx.step(stepName, stepOptions, () => recordError(deniedError(toolName, decision.reason)));
      };
      return decided instanceof Promise ? decided.then(go) : go(decided);
    });
  } catch (error) {
    // Not the tool's own error (those are recorded as values): steplog's. Keep it for the next turn.
    markFatal(ctx, error);
    throw error;
  }
  if (isRecordedToolError(value)) throw rebuildError(value);
  return value;
}
