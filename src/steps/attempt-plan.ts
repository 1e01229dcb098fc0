/** What an attempt is asked to do: run the workflow or replay it for a saga, from where, with what consent and limits. */

import type { RunStatus } from "../store/types.js";

export interface AttemptPlan {
  /** "run": run the workflow; "compensate": replay it from records and compensate (the saga). */
  mode: "run" | "compensate";
  /** The step key to redo from, when given. */
  fromStep: string | undefined;
  values: Record<string, unknown> | undefined;
  /** Succeeded irreversible steps this attempt may run again, and those it hands back (continue's redo and reuse). */
  redo: ReadonlySet<string>;
  reuse: ReadonlySet<string>;
  /** The run's status before this attempt's claim (for a saga that fails). */
  statusBefore?: RunStatus;
  /** A run that was parked reuses its records whatever the version. */
  ignoreVersion: boolean;
  deadline: number | undefined;
  signal: AbortSignal | undefined;
}
