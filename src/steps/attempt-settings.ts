/** What an engine passes to each attempt: its store, clock, limits and listeners. */

import type { ErrorInfo, LeaseHolder } from "../base/errors.js";
import type { Payloads } from "../payloads/payloads.js";
import type { AttemptEnding, RunStatus } from "../store/types.js";
import type { RuntimeStore } from "../store/runtime.js";
import type { Clock } from "../base/clock.js";
import type { Workflow } from "../workflow/define-workflow.js";
import type { Tracing } from "./step-spans.js";

export type { Clock };

/** What a run reports as it goes, for progress views and logs. */
export type ProgressEvent =
  | { type: "attempt-started"; runId: string; workflow: string; attempt: number; fromStep: string | undefined }
  | { type: "step-reused"; runId: string; step: string; recordedBy: number; recordedAt: number }
  | { type: "step-started"; runId: string; step: string; retry: number }
  | { type: "step-succeeded"; runId: string; step: string; durationMs: number }
  | { type: "step-failed"; runId: string; step: string; error: ErrorInfo }
  | { type: "step-resolved"; runId: string; step: string; policy: string; found: string }
  | { type: "attempt-ended"; runId: string; attempt: number; status: AttemptEnding; runStatus: RunStatus; error?: ErrorInfo }
  /** A continue found the run held by an owner it can judge only by its lease, and waits to see whether it is renewed. */
  | { type: "claim-waiting"; runId: string; holder: LeaseHolder | undefined; waitMs: number };

/** Test hooks used by steplog/testing: replace a step's function, count calls. */
export interface TestHooks {
  override?: (key: string, name: string) => ((info: unknown) => unknown) | undefined;
  onCall?: (key: string, kind: "function" | "query" | "compensate") => void;
  /** A step or wait was entered (its key given), whatever then became of it. */
  onEnter?: (key: string, name: string) => void;
}

/** What a parent's child step asks of the engine (engine/children.ts). */
export interface ChildRequest {
  /** The parent run and its step that starts or waits for the child. */
  parent: string;
  step: string;
  /** The child run's id, as recorded in the parent's step row. */
  id: string;
  workflow: Workflow;
  args: unknown;
  /** Recorded as the child's source: the parent's (its file exports the child's workflow, or imports it). */
  source: string | null;
  /** The child's budget as stored (RunRow.costBudget) when it draws on the parent's; else its workflow's own. */
  budget?: string | undefined;
  /**
   * true: run the child's attempt here and resolve when it ends (ctx.child, handle.result());
   * false: resolve once the child run exists, its attempt going on in the background (ctx.startChild).
   */
  wait: boolean;
  /** Whether a child that ended with this status is continued (once) rather than taken as the answer. */
  continueIf: (status: RunStatus) => boolean;
  /**
   * The parent's attempt's signal: once it aborts (a cancel, its deadline), a waiting request
   * stops waiting for the child's attempt here (the child goes on) and starts none.
   */
  signal: AbortSignal;
}

/** Where a child run stands. */
export type ChildState =
  | { ended: true; status: "completed"; workflow: string; value: unknown }
  | { ended: true; status: RunStatus; workflow: string; error: ErrorInfo | undefined }
  | { ended: false; status: RunStatus; workflow: string };

export interface ChildHost {
  /**
   * Bring the child run to where it stands now: start it, recording its parent, if it does not
   * exist; continue it here if it can go on and nobody runs it; then say where it is.
   */
  run(request: ChildRequest): Promise<ChildState>;
  /** A run that has a parent ended (its status is final): wake the parent if it waits for it. */
  ended(parent: string, child: string): Promise<void>;
  /** A run parked waiting for a child: if the child ended meanwhile, wake the run at once. */
  parked(runId: string, child: string): Promise<void>;
}

export interface EngineSettings {
  /** The store as the engine wraps it (store/runtime.ts): every optional member is there. */
  store: RuntimeStore;
  clock: Clock;
  leaseMs: number;
  maxValueBytes: number;
  /** Values, args, payloads and error details to stored text and back (with the engine's codec). */
  payloads: Payloads;
  onProgress: ((event: ProgressEvent) => void) | undefined;
  hooks: TestHooks | undefined;
  /** Child runs (ctx.child, ctx.startChild): the engine's, absent where there is none. */
  children?: ChildHost;
  /** OpenTelemetry spans (tracing.ts): absent when tracing is off or `@opentelemetry/api` is not installed. Read where an attempt begins, never on a step's path. */
  tracing?: Tracing;
}
