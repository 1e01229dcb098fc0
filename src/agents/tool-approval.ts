/**
 * Approvals of tool calls: a framework's approval flag (the AI SDK's `needsApproval`, ai 7's
 * `toolApproval` statuses, the OpenAI Agents SDK's `needsApproval`) or durableTools' own
 * `approval` option, turned into a step approval (`approval: true`): the run parks before the
 * call until engine.approve(id, step), and the step's input (the tool's arguments) is what is
 * approved. The framework's own approval flow is switched off for a wrapped tool, so it does not
 * also stop and ask: steplog's approval replaces it.
 */

/** What an approval rule may answer: a yes/no, or one of ai 7's `ToolApprovalStatus` forms. */
export type ToolApprovalAnswer =
  | boolean
  | undefined
  | "user-approval"
  | "approved"
  | "not-applicable"
  | "denied"
  | { type: "user-approval" | "approved" | "not-applicable" | "denied"; reason?: string };

/** What a rule is told about the call: its id and, where the framework gives them, its options (the AI SDK's `messages`, …). */
export interface ToolApprovalCall {
  toolCallId: string | undefined;
  [frameworkOption: string]: unknown;
}

/** One tool's rule: a fixed answer, or a function of the call's arguments. */
export type ToolApprovalRule = ToolApprovalAnswer | ((input: any, call: ToolApprovalCall) => ToolApprovalAnswer | PromiseLike<ToolApprovalAnswer>);

/** A rule for every tool at once, in the shape of ai 7's generic `toolApproval` function. */
export type GenericToolApproval = (options: {
  toolCall: { type: "tool-call"; toolName: string; toolCallId: string | undefined; input: unknown };
  messages: unknown[];
}) => ToolApprovalAnswer | PromiseLike<ToolApprovalAnswer>;

/**
 * Which calls need a person's yes before they run: a list of tool names (every call of those),
 * a record of tool name → rule (ai 7's `toolApproval` record fits as it is), or one function
 * for every tool (ai 7's generic `toolApproval` function).
 */
export type ToolApprovalOption<Names extends string = string> = readonly Names[] | Partial<Record<Names, ToolApprovalRule>> | GenericToolApproval;

/** What the call does about approval: run, park for a person's yes, or not run (denied: the model is told). */
export type ApprovalDecision = { kind: "run" } | { kind: "ask" } | { kind: "deny"; reason?: string };

const RUN: ApprovalDecision = { kind: "run" };
const ASK: ApprovalDecision = { kind: "ask" };

/** An answer as a decision. `true` and "user-approval" ask; "denied" denies; anything else runs. */
export function decisionOf(answer: ToolApprovalAnswer): ApprovalDecision {
  if (answer === true || answer === "user-approval") return ASK;
  if (answer === "denied") return { kind: "deny" };
  if (typeof answer === "object" && answer !== null) {
    if (answer.type === "user-approval") return ASK;
    if (answer.type === "denied") return answer.reason === undefined ? { kind: "deny" } : { kind: "deny", reason: answer.reason };
  }
  return RUN;
}

/** Something that decides, later (when the call is made), what one call does. */
export type ApprovalCheck = () => ApprovalDecision | Promise<ApprovalDecision>;

/** The rule the option gives one tool, or undefined when it says nothing of it. */
export function ruleFor(option: ToolApprovalOption | undefined, toolName: string): ToolApprovalRule | GenericToolApproval | undefined {
  if (option === undefined) return undefined;
  if (typeof option === "function") return option;
  if (Array.isArray(option)) return option.includes(toolName) ? true : undefined;
  const record = option as Partial<Record<string, ToolApprovalRule>>;
  return Object.hasOwn(record, toolName) ? record[toolName] : undefined;
}

/** The check for one call under a rule of durableTools' `approval` option. */
export function checkOfRule(
  rule: ToolApprovalRule | GenericToolApproval,
  generic: boolean,
  toolName: string,
  input: unknown,
  call: ToolApprovalCall,
): ApprovalCheck {
  if (typeof rule !== "function") {
    const decision = decisionOf(rule);
    return () => decision;
  }
  if (generic) {
    const messages = Array.isArray(call.messages) ? (call.messages as unknown[]) : [];
    return async () =>
      decisionOf(await (rule as GenericToolApproval)({ toolCall: { type: "tool-call", toolName, toolCallId: call.toolCallId, input }, messages }));
  }
  return async () => decisionOf(await (rule as (input: unknown, call: ToolApprovalCall) => ToolApprovalAnswer | PromiseLike<ToolApprovalAnswer>)(input, call));
}

/** Thrown by a denied call in place of the tool (recorded as the call's error: the model is told it was denied). */
export function deniedError(toolName: string, reason: string | undefined): Error {
  const error = new Error(`The call of tool ${JSON.stringify(toolName)} was denied${reason ? `: ${reason}` : ""}.`);
  error.name = "ToolCallDenied";
  return error;
}

/** Refuse an `approval` option that is neither a list of names, a record of rules nor a function. */
export function approvalOptionError(where: string, option: unknown, names: string[]): string | undefined {
  if (option === undefined || typeof option === "function") return undefined;
  const given = Array.isArray(option) ? option : typeof option === "object" && option !== null ? Object.keys(option) : undefined;
  if (given === undefined || (Array.isArray(option) && !option.every((n) => typeof n === "string" && n !== ""))) {
    return `${where}: options.approval must be a list of tool names, a record of tool name → rule, or a function; got ${JSON.stringify(option)}.`;
  }
  for (const name of given as string[]) {
    if (!names.includes(name)) return `${where}: options.approval names ${JSON.stringify(name)}, which is not one of the tools (${names.join(", ")}).`;
  }
  return undefined;
}
