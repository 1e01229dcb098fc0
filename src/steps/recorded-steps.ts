/**
 * Internal: the step records a continue started from, for the agent adapters that must find a
 * call by what it did rather than by its key (durableClaudeQuery: a resumed Claude Code session
 * asks again, under a new tool use id, for a call a crash cut off). Read-only: each record's
 * latest row as the attempt loaded it, its value and input opened by the engine's codec.
 */

import { parseResolution } from "../workflow/step-resolution.js";
import type { Effect, StepStatus } from "../store/types.js";
import type { AttemptState } from "./state.js";

/** On a WorkflowContext: `(prefix) => RecordedStep[]`, the latest row of each key starting with prefix, in seq order. */
export const RECORDED_STEPS = Symbol("steplog.recordedSteps");

export interface RecordedStep {
  key: string;
  name: string;
  attempt: number;
  status: StepStatus;
  effect: Effect;
  /** Settled by a policy or a person rather than by its function (a query, an escalation resolved). */
  settledByPolicy: boolean;
  /** The recorded value (a success's), opened; undefined when there is none. */
  value(): Promise<unknown>;
  /** The recorded input, opened; undefined when the step had none. */
  input(): Promise<unknown>;
}

export function recordedSteps(state: AttemptState, prefix: string): RecordedStep[] {
  const latest = new Map<string, AttemptState["stored"]["steps"][number]>();
  // A row settled by a person (engine.resolve) does not repeat the input: the latest row that has one.
  const inputs = new Map<string, string>();
  for (const row of state.stored.steps) {
    if (!row.key.startsWith(prefix)) continue;
    latest.set(row.key, row);
    const input = parseResolution(row.resolution).input;
    if (input !== undefined) inputs.set(row.key, input);
  }
  const open = async (stored: string | null | undefined): Promise<unknown> =>
    stored === null || stored === undefined ? undefined : await state.payloads.decode(stored);
  return [...latest.values()]
    .sort((a, b) => a.seq - b.seq)
    .map((row) => ({
      key: row.key,
      name: row.name,
      attempt: row.attempt,
      status: row.status,
      effect: row.effect,
      settledByPolicy: parseResolution(row.resolution).policy !== undefined,
      value: () => open(row.value),
      input: () => open(inputs.get(row.key)),
    }));
}
