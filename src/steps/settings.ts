/** What an engine passes to each attempt: its store, clock, limits and listeners. */

import type { ErrorInfo, LeaseHolder } from "../base/errors.js";
import type { Payloads } from "../payloads/payloads.js";
import type { AttemptEnding, RunStatus, Store } from "../store/types.js";
import type { Clock } from "../base/clock.js";

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

export interface EngineSettings {
  store: Store;
  clock: Clock;
  leaseMs: number;
  maxValueBytes: number;
  /** Values, args, payloads and error details to stored text and back (with the engine's codec). */
  payloads: Payloads;
  onProgress: ((event: ProgressEvent) => void) | undefined;
  hooks: TestHooks | undefined;
}
