/**
 * Every type the package exports, in one place: the entries (src/entries/) re-export their types
 * from here and their values from a few public modules, so no entry reaches into the code behind
 * them. A type that moves inside src/ changes one line here and nothing a user sees.
 * test/package/exports.test.ts and the build's .d.ts files keep the exported names unchanged.
 */

// steplog: workflows, the engine, runs, the context a workflow is given.
export type { Workflow, WorkflowDefinition, WorkflowArgs, WorkflowResult } from "../workflow/define-workflow.js";
export type { Schedule, ScheduleDefinition, CatchUp } from "../workflow/schedule.js";
export type { Engine, EngineOptions, StartOptions, ContinueOptions, ListFilter, RunCount, CancelOptions, TracerLike, ApproveOptions } from "../engine/api.js";
export type { PendingApproval, ApprovalsFilter } from "../operations/approvals.js";
export type { StaleApproval } from "../workflow/step-resolution.js";
export type { RunResult } from "../steps/attempt.js";
export type { RecoveredRun } from "../operations/recover.js";
export type { Escalation, Resolution } from "../operations/escalations.js";
export type { SendOptions, Delivery } from "../operations/events.js";
export type { WorkOptions, WorkSummary } from "../engine/worker.js";
export type { ScheduleView, SchedulesOptions } from "../engine/schedules.js";
export type { WaitingFor } from "../steps/waits.js";
export type { Budget } from "../workflow/budgets.js";
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
} from "../workflow/context.js";
export type { Clock } from "../base/clock.js";
export type { ProgressEvent } from "../steps/attempt-settings.js";
export type { RunView, RunSummary, StepView, AttemptView } from "../operations/views.js";
export type { RunExport, ExportedRun, ExportOptions, ImportResult } from "../operations/export.js";
export type { StreamItem, ReadStreamOptions } from "../operations/read-stream.js";
export type { StreamInfo } from "../operations/stream-list.js";
export type { PruneOptions, PruneResult, PruneStatus } from "../engine/prune-options.js";
export type { RetentionOptions } from "../engine/retention-options.js";
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
} from "../store/types.js";
export type { StandardSchemaV1 } from "../workflow/value-schemas.js";
export type { EncryptedCodecOptions } from "../payloads/encrypted-codec.js";
export type { Codec } from "../payloads/payloads.js";
export type { RedactRule } from "../payloads/redact.js";

// steplog/sqlite, steplog/postgres, steplog/jsonl, steplog/memory: the stores' options and handles.
export type { SqliteStoreOptions, SqliteStore } from "../store/sqlite/store.js";
export type { SqliteDriverChoice, SqliteDriverName } from "../store/sqlite/drivers/connection.js";
export type { PostgresStoreOptions, PostgresStore } from "../store/postgres/store.js";
export type { PgPoolLike, PgClient, PgResult } from "../store/postgres/connection.js";
export type { JsonlStoreOptions, JsonlStore } from "../store/jsonl/store.js";
export type { MemoryStoreOptions } from "../store/memory.js";

// steplog/testing.
export type { StoreConformanceOptions, TestFunctions, AdditionalTests } from "../testing/store-conformance.js";
export type { FakeClock } from "../testing/fake-clock.js";
export type { TestWorkflowOptions, TestWorkflowResult, EarlierAttempt, CallKind } from "../testing/test-workflow.js";

// steplog/agents.
export type {
  DurableToolSet,
  ToolCallOptionsIn,
  DurableToolsOptions,
  DurableToolCallOptions,
  DurableToolCallFields,
  ToolCallInfo,
  ToolQuery,
  ToolCompensate,
  RecordedToolError,
} from "../agents/tools.js";
export type { ToolApprovalOption, ToolApprovalRule, ToolApprovalAnswer, ToolApprovalCall, GenericToolApproval } from "../agents/tool-approval.js";
export type { ModelTurnOptions, TurnUsage } from "../agents/model-turn.js";
export type { DurableClaudeQueryOptions, ClaudeQueryLike, ClaudeQueryParams, ClaudeMessageLike } from "../agents/claude.js";
export type { DurableModelOptions, LanguageModelLike, RecordedGenerate, RecordedStream } from "../agents/model.js";
export type {
  MessagesFromStepsOptions,
  OpenAIMessage,
  OpenAIToolCall,
  ModelMessage,
  ToolResultOutput,
  PendingToolCall,
  StepRowLike,
  Turn,
  TurnToolCall,
} from "../agents/messages.js";
export type {
  DurableAgentOptions,
  DurableAgentModelOptions,
  DurableAgentToolDetails,
  AgentLike,
  AgentModelLike,
  AgentModelProviderLike,
  RecordedAgentStream,
} from "../agents/openai-agents.js";
export type { DurableAnthropicOptions } from "../agents/anthropic.js";
export type { DurableChatModelOptions, LangChainToolLike, RecordedAIMessage } from "../agents/langchain.js";
export type {
  DurableMcpOptions,
  DurableMcpClient,
  DurableMcpCallFields,
  McpClientLike,
  AgentsMcpServerLike,
  McpCallToolParamsLike,
  McpToolLike,
  McpToolAnnotationsLike,
} from "../agents/mcp.js";
