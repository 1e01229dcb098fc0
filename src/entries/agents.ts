/**
 * steplog/agents: durable agents in the frameworks people already use. Tool calls and model
 * turns become steps; the conversation is derived from the step log. No framework is imported:
 * the helpers work on the shapes (tools with `execute(input, { toolCallId })`, plain functions,
 * AI SDK language models, the OpenAI Agents SDK's agents and models, Anthropic clients,
 * LangChain tools and chat models, MCP clients, the Claude Agent SDK's query, OpenAI/Anthropic
 * answers). See docs/agents.md.
 */

export { durableTools, isRecordedToolError } from "../agents/tools.js";
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
  ToolApprovalOption,
  ToolApprovalRule,
  ToolApprovalAnswer,
  ToolApprovalCall,
  GenericToolApproval,
} from "../public/types.js";
export { modelTurn, usageOf, ModelTurnFailedError } from "../agents/model-turn.js";
export type { ModelTurnOptions, TurnUsage } from "../public/types.js";
export { durableModel } from "../agents/model.js";
export type { DurableModelOptions, LanguageModelLike, RecordedGenerate, RecordedStream } from "../public/types.js";
export { messagesFromSteps, pendingToolCalls, readTurn, ToolCallPendingError } from "../agents/messages.js";
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
} from "../public/types.js";
export { toolStepName, parseToolStepName, modelStepName } from "../agents/step-names.js";
export { durableAgent, durableAgentModel, durableModelProvider } from "../agents/openai-agents.js";
export type {
  DurableAgentOptions,
  DurableAgentModelOptions,
  DurableAgentToolDetails,
  AgentLike,
  AgentModelLike,
  AgentModelProviderLike,
  RecordedAgentStream,
} from "../public/types.js";
export { durableAnthropic } from "../agents/anthropic.js";
export type { DurableAnthropicOptions } from "../public/types.js";
export { durableLangChainTools, durableChatModel } from "../agents/langchain.js";
export type { DurableChatModelOptions, LangChainToolLike, RecordedAIMessage } from "../public/types.js";
export { durableMcp, MCP_IDEMPOTENCY_KEY } from "../agents/mcp.js";
export type {
  DurableMcpOptions,
  DurableMcpClient,
  DurableMcpCallFields,
  McpClientLike,
  AgentsMcpServerLike,
  McpCallToolParamsLike,
  McpToolLike,
  McpToolAnnotationsLike,
} from "../public/types.js";
export { durableClaudeQuery, ClaudeSessionFailedError } from "../agents/claude.js";
export type { DurableClaudeQueryOptions, ClaudeQueryLike, ClaudeQueryParams, ClaudeMessageLike } from "../public/types.js";
