/**
 * steplog: durable steps for Node.js apps. Wrap work in ctx.step(name, fn); a continue after
 * any ending reuses every succeeded step and resolves a cut-off one by its declared policy.
 */

export { defineWorkflow, DEFAULT_MAX_ATTEMPTS } from "../workflow/define-workflow.js";
export type { Workflow, WorkflowDefinition, WorkflowArgs, WorkflowResult } from "../public/types.js";
export type { Schedule, ScheduleDefinition, CatchUp } from "../public/types.js";
export { createEngine } from "../engine/engine.js";
export type {
  Engine,
  EngineOptions,
  StartOptions,
  ContinueOptions,
  ListFilter,
  RunCount,
  CancelOptions,
  TracerLike,
  RunResult,
  RecoveredRun,
  Escalation,
  Resolution,
  ApproveOptions,
  PendingApproval,
  ApprovalsFilter,
  StaleApproval,
  SendOptions,
  Delivery,
  WorkOptions,
  WorkSummary,
  ScheduleView,
  SchedulesOptions,
} from "../public/types.js";
export type { WaitingFor } from "../public/types.js";
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
  ChildWorkflow,
  ChildOptions,
  ChildHandle,
  StreamWriter,
} from "../public/types.js";
export type { Clock, ProgressEvent } from "../public/types.js";
export type { RunView, RunSummary, StepView, AttemptView } from "../public/types.js";
export type { RunExport, ExportedRun, ExportOptions, ImportResult } from "../public/types.js";
export type { StreamItem, ReadStreamOptions, StreamInfo } from "../public/types.js";
export type { PruneOptions, PruneResult, PruneStatus, RetentionOptions } from "../public/types.js";
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
  ClaimJudge,
  StoreCapabilities,
  ClaimResult,
  RunUpdate,
  StepOutcome,
  StreamRecord,
  AttemptEnd,
  RunFilter,
  RunCursor,
  RunListing,
  WorkflowCount,
  ImportedRun,
  PruneJudge,
  PrunedRows,
} from "../public/types.js";
export type { StandardSchemaV1 } from "../public/types.js";
export * from "../base/errors.js";
export { encryptedCodec } from "../payloads/encrypted-codec.js";
export type { EncryptedCodecOptions } from "../public/types.js";
export type { Codec } from "../public/types.js";
export { redact, REDACTED } from "../payloads/redact.js";
export type { RedactRule } from "../public/types.js";
