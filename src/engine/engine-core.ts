/**
 * What the engine's parts share: the store through its runtime wrapper, the settings, and what
 * is this engine's (its running attempts, child runs, first turns of queued runs). createEngine
 * (engine.ts) makes one; the start path (start-run.ts) and the methods on one run
 * (run-methods.ts) read from it what they use, by name.
 */

import type { Judge } from "../operations/views.js";
import type { RedactRule } from "../payloads/redact.js";
import type { RunResult } from "../steps/attempt.js";
import type { EngineSettings } from "../steps/attempt-settings.js";
import type { RuntimeStore } from "../store/runtime.js";
import type { Workflow } from "../workflow/define-workflow.js";
import type { ChildRuns } from "./child-runs.js";
import type { ClaimContext } from "./claim-and-run.js";
import type { RunningAttempts } from "./running-attempts.js";

export interface EngineCore {
  store: RuntimeStore;
  settings: EngineSettings;
  /** What the claim behind continue, compensate and a worker's pick needs of this engine. */
  claims: ClaimContext;
  running: RunningAttempts;
  children: ChildRuns;
  /** Queued runs whose start is claiming their first turn in this engine: an attach waits for it. */
  firstTurns: Map<string, Promise<RunResult>>;
  /** createEngine's `redact`, for get(id, { redact: true }). */
  redact: RedactRule | undefined;
  /** ENGINE_CLOSED once the engine is closed. */
  open(): void;
  /** The registered workflow of that name (WORKFLOW_NOT_REGISTERED if none). */
  workflow(name: string, runId: string | undefined): Workflow;
  /** Register a workflow (refused if another has its name). */
  register(workflow: Workflow): void;
  /**
   * The store's storage as this process's live attempts are keyed: the same for every store
   * object on it, however its path or server was spelled (Store.storageId; else its location).
   */
  where(): Promise<string>;
  /** How a run's status is judged now, from `where`. */
  judge(where: string): Judge;
  /** Wake this process's workers (a run may be due). */
  wake(): void;
}
