/**
 * The tool calls inside a Claude Code session (durableClaudeQuery), each an intent/outcome pair
 * through the SDK's hooks: PreToolUse records the call's intent (the step
 * `<session>/tool:<tool name>:<tool use id>`, its input the tool's input) and answers only once
 * it is durable; PostToolUse (or PostToolUseFailure) records its outcome. A hook that cannot
 * reach its owner is refused by Claude Code, so no call runs without its intent recorded.
 *
 * A resumed session may ask again, under a new tool use id, for a call the crash cut off (its
 * transcript may or may not hold the call): the call is matched by tool name and input against
 * the session's records from earlier attempts and answered from them. A call with a recorded
 * result is refused with that result (the model reads it); a call cut off inside its effect is
 * settled by its step's policy first (query, re-drive, or escalate): never run twice on its own.
 */

import type { Effect, StepOptions, UnknownOutcomePolicy, WorkflowContext } from "../workflow/context.js";
import { RECORDED_STEPS, type RecordedStep } from "../steps/recorded-steps.js";
import { INSIDE_STEP } from "../steps/inside-step.js";
import { inTurn } from "./run-state.js";
import { toolStepName } from "./step-names.js";
import { TOOL_ERROR_KEY, type ToolQuery } from "./tools.js";

/** What the hooks answer: nothing said (Claude Code's own permission rules decide), or a refusal the model reads. */
export type HookAnswer = Record<string, unknown>;

export interface SessionToolOptions {
  effects?: Partial<Record<string, Effect>> | undefined;
  query?: Partial<Record<string, ToolQuery>> | undefined;
  onUnknown?: Partial<Record<string, UnknownOutcomePolicy>> | undefined;
}

/** The value recorded for a call whose result Claude Code never reported (the session ended first). */
export const NO_RESULT_KEY = "steplog.noResult";

const REASON_CHARS = 4000;

/** JSON with sorted keys: a tool's input compared by content. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === "object" && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** JSON data (a tool's response may hold undefined fields, class instances). */
function plain(value: unknown): unknown {
  if (value === undefined) return null;
  try {
    return JSON.parse(JSON.stringify(value)) as unknown;
  } catch {
    return String(value);
  }
}

const deny = (reason: string): HookAnswer => ({
  hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: reason },
});

function shown(value: unknown): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  return text.length > REASON_CHARS ? `${text.slice(0, REASON_CHARS)}…` : text;
}

export const alreadyRan = (key: string, value: unknown): string =>
  `steplog: this call already ran before the session was interrupted (step ${key}); it is not run again. Its recorded result: ${shown(value)}`;

interface Pending {
  finish: (value: unknown) => void;
  step: Promise<unknown>;
}

/** A call of an earlier attempt, for a resumed session that asks for it again (same tool, same input). */
type Earlier = { tool: string; digest: string; key: string } & ({ kind: "done"; value: unknown } | { kind: "waiting"; pending: Pending });

/**
 * The hooks of one session run: `pre`, `post`, `failed`; `resume` (before a resumed session
 * starts: settles the calls earlier attempts cut off) and `settle` (at the session's end: records
 * a call Claude Code never reported on). `fatal` is set when steplog refused a call (an
 * escalation, the attempt ending): the session must stop, and the error is thrown.
 */
export class SessionTools {
  fatal: { error: unknown } | undefined;
  readonly #ctx: WorkflowContext;
  readonly #session: string;
  readonly #prefix: string;
  readonly #options: SessionToolOptions;
  readonly #ready: () => Promise<unknown>;
  readonly #onFatal: () => void;
  readonly #earlier: Earlier[] = [];
  readonly #pending = new Map<string, Pending>();

  /** `ready` resolves once the session id is durable: no call is let through before. */
  constructor(ctx: WorkflowContext, session: string, prefix: string, options: SessionToolOptions, ready: () => Promise<unknown>, onFatal: () => void) {
    this.#ctx = ctx;
    this.#session = session;
    this.#prefix = prefix;
    this.#options = options;
    this.#ready = ready;
    this.#onFatal = onFatal;
  }

  /**
   * Before the session runs again: the calls of earlier attempts, kept to answer a repeat; each
   * call cut off inside its effect is settled now by its step's policy (a query, an escalation
   * that stops the attempt here, before any model turn; a re-drive lets the repeat run). Returns
   * what the resumed session is told: the calls settled with a result.
   */
  async resume(): Promise<string[]> {
    const read = (this.#ctx as unknown as Record<symbol, ((prefix: string) => RecordedStep[]) | undefined>)[RECORDED_STEPS];
    const told: string[] = [];
    for (const row of read ? read(`${this.#prefix}tool:`) : []) {
      const tool = toolNameOf(row.name, this.#prefix);
      const input = await row.input();
      const base = { tool, digest: canonical(input), key: row.key };
      if (row.status === "succeeded") {
        const value = await row.value();
        this.#earlier.push({ ...base, kind: "done", value });
        // Settled by a query or a person: the session's transcript cannot hold that result.
        if (row.settledByPolicy) told.push(`- ${tool} ${shown(input)}: ${alreadyRan(row.key, value)}`);
        continue;
      }
      let finish!: (value: unknown) => void;
      const outcome = new Promise<unknown>((resolve) => (finish = resolve));
      let started!: () => void;
      const begun = new Promise<"waiting">((resolve) => (started = () => resolve("waiting")));
      const step = this.#ctx.step<unknown>(row.name, this.#stepOptions(tool, input), () => {
        started();
        return outcome;
      });
      step.catch(() => undefined);
      // Settled without its function (a query found it done, a person resolved it), or re-driven: waits for the repeat.
      const first = await Promise.race([begun, step.then((value) => ({ value }))]);
      if (first === "waiting") {
        this.#earlier.push({ ...base, kind: "waiting", pending: { finish, step } });
      } else {
        this.#earlier.push({ ...base, kind: "done", value: first.value });
        told.push(`- ${tool} ${shown(input)}: ${alreadyRan(row.key, first.value)}`);
      }
    }
    return told;
  }

  /** The earlier attempts' record of this call (same tool, same input), taken once. */
  #match(tool: string, input: unknown): Earlier | undefined {
    const wanted = canonical(input);
    const at = this.#earlier.findIndex((row) => row.tool === tool && row.digest === wanted);
    return at === -1 ? undefined : this.#earlier.splice(at, 1)[0];
  }

  #stepOptions(tool: string, input: unknown): StepOptions<unknown> {
    const options: StepOptions<unknown> = { effect: this.#options.effects?.[tool] ?? "irreversible", input };
    // The session's step is in flight throughout: an irreversible call inside it is not refused for that.
    (options as Record<symbol, unknown>)[INSIDE_STEP] = this.#session;
    const query = this.#options.query?.[tool];
    if (query) options.query = (info) => query({ ...info, toolName: tool, toolCallId: undefined, input });
    const onUnknown = this.#options.onUnknown?.[tool];
    if (onUnknown) options.onUnknown = onUnknown;
    return options;
  }

  #fail(error: unknown): void {
    if (!this.fatal) this.fatal = { error };
    this.#onFatal();
  }

  readonly pre = async (hookInput: Record<string, unknown>, toolUseId: string | undefined): Promise<HookAnswer> => {
    const tool = String(hookInput.tool_name);
    const input = plain(hookInput.tool_input);
    const id = typeof hookInput.tool_use_id === "string" ? hookInput.tool_use_id : (toolUseId ?? "");
    if (this.fatal) return deny("steplog: this session is stopping; no more tool calls are run in it.");
    try {
      await this.#ready();
      const match = this.#match(tool, input);
      if (match?.kind === "done") return deny(alreadyRan(match.key, match.value));
      if (match?.kind === "waiting") {
        // Re-driven by its policy: this repeat is the call, recorded under the cut-off call's step.
        this.#pending.set(id, match.pending);
        return {};
      }
      const name = `${this.#prefix}${toolStepName(tool, id)}`;
      let started!: () => void;
      const begun = new Promise<"run">((resolve) => (started = () => resolve("run")));
      let finish!: (value: unknown) => void;
      const outcome = new Promise<unknown>((resolve) => (finish = resolve));
      const options = this.#stepOptions(tool, input);
      // An irreversible call waits for the calls before it (Claude Code runs some concurrently).
      const step = inTurn(this.#ctx, options.effect === "irreversible", () =>
        this.#ctx.step<unknown>(name, options, () => {
          started();
          return outcome;
        }),
      );
      step.catch(() => undefined);
      const first = await Promise.race([begun, step.then((value) => ({ value }))]);
      if (first === "run") {
        this.#pending.set(id, { finish, step });
        return {};
      }
      return deny(alreadyRan(name, first.value));
    } catch (error) {
      this.#fail(error);
      const message = error instanceof Error ? error.message : String(error);
      return deny(`steplog: this call is not run: ${message}`);
    }
  };

  /** PostToolUse: the call's result is its step's value; answered once it is recorded. */
  readonly post = async (hookInput: Record<string, unknown>, toolUseId: string | undefined): Promise<HookAnswer> =>
    this.#finish(hookInput, toolUseId, plain(hookInput.tool_response));

  /** PostToolUseFailure: the tool's error is its step's value, as durableTools records one. */
  readonly failed = async (hookInput: Record<string, unknown>, toolUseId: string | undefined): Promise<HookAnswer> =>
    this.#finish(hookInput, toolUseId, { [TOOL_ERROR_KEY]: { name: "ToolError", message: String(hookInput.error ?? "the tool failed") } });

  async #finish(hookInput: Record<string, unknown>, toolUseId: string | undefined, value: unknown): Promise<HookAnswer> {
    const id = typeof hookInput.tool_use_id === "string" ? hookInput.tool_use_id : (toolUseId ?? "");
    const pending = this.#pending.get(id);
    if (!pending) return {};
    this.#pending.delete(id);
    pending.finish(value);
    try {
      await pending.step;
    } catch (error) {
      this.#fail(error);
    }
    return {};
  }

  /** At the session's end: a call let through (or re-driven) whose result never came is recorded as such. */
  async settle(): Promise<void> {
    const left = [...this.#pending.values(), ...this.#earlier.flatMap((row) => (row.kind === "waiting" ? [row.pending] : []))];
    this.#pending.clear();
    this.#earlier.length = 0;
    for (const pending of left) pending.finish({ [NO_RESULT_KEY]: "the session ended before Claude Code reported this call's result" });
    for (const pending of left) {
      try {
        await pending.step;
      } catch (error) {
        this.#fail(error);
      }
    }
  }
}

/** The tool name of a step `<prefix>tool:<name>:<id>`. */
function toolNameOf(stepName: string, prefix: string): string {
  const rest = stepName.slice(`${prefix}tool:`.length);
  const colon = rest.indexOf(":");
  try {
    return decodeURIComponent(colon === -1 ? rest : rest.slice(0, colon));
  } catch {
    return rest;
  }
}
