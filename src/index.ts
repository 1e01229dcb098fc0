/**
 * steplog: durable steps for Node.js apps. Wrap work in ctx.step(name, fn); a continue after
 * any ending reuses every succeeded step and resolves a cut-off one by its declared policy.
 */

export { defineWorkflow, DEFAULT_MAX_ATTEMPTS } from "./define-workflow.js";
export type { Workflow, WorkflowDefinition, WorkflowArgs, WorkflowResult } from "./define-workflow.js";
export { createEngine } from "./engine.js";
export type {
  Engine,
  EngineOptions,
  StartOptions,
  ContinueOptions,
  ListFilter,
  RunResult,
  RecoveredRun,
  Escalation,
  Resolution,
  SendOptions,
  WorkOptions,
  WorkSummary,
} from "./engine.js";
export type { WaitingFor } from "./waits.js";
export type {
  WorkflowContext,
  StepInfo,
  Usage,
  StepOptions,
  StepFunction,
  RetryOptions,
  QueryInfo,
  QueryAnswer,
  CompensateInfo,
  UnknownOutcomePolicy,
  Effect,
} from "./context.js";
export type { Clock, ProgressEvent } from "./engine-settings.js";
export type { RunView, RunSummary, StepView, AttemptView } from "./views.js";
// The store contract, for writing an adapter (see docs/stores.md and describeStore in steplog/testing).
export type {
  RunStatus,
  AttemptEnding,
  StepStatus,
  Store,
  StoredRun,
  RunRow,
  AttemptRow,
  OwnerRow,
  LeaseRow,
  StepRow,
  EventRow,
  Fence,
  Lease,
  RunPatch,
  ClaimDecision,
  ClaimResult,
  RunUpdate,
  StepOutcome,
  AttemptEnd,
  RunFilter,
  RunListing,
} from "./store/types.js";
export type { StandardSchemaV1 } from "./schema.js";
export * from "./errors.js";
export { encryptedCodec } from "./encrypted-codec.js";
export type { EncryptedCodecOptions } from "./encrypted-codec.js";
export type { Codec } from "./payloads.js";
export { redact, REDACTED } from "./redact.js";
export type { RedactRule } from "./redact.js";
