/**
 * ErrorInfo, the plain storable shape of any thrown value, and toErrorInfo, which makes it: a
 * bounded stack, an error's own plain fields and a cause chain a few levels deep (its messages
 * bounded too).
 */

import { SteplogError } from "./steplog-error.js";

/** The plain shape every stored or handed-back error has. */
export interface ErrorInfo {
  name: string;
  message: string;
  code?: string;
  step?: string;
  /** The error's class when its name says otherwise (`class CardDeclined extends Error` is named "Error"). */
  className?: string;
  /** Where a user's error was thrown (bounded; steplog's own errors leave it out). */
  stack?: string;
  /** The error's own enumerable fields that are plain data (`status`, `declineCode`, …), within a size bound. */
  fields?: Record<string, unknown>;
  /** What caused it (error.cause), kept a few levels deep; steplog's own errors keep only a CHILD_FAILED's. */
  cause?: ErrorInfo;
}

/** The plain, storable form of any thrown value. */
export function toErrorInfo(error: unknown, step?: string): ErrorInfo {
  return infoOf(error, step, 0, {
    stackChars: ERROR_LIMITS.stackChars,
    fieldsChars: ERROR_LIMITS.fieldsChars,
    causeMessageChars: ERROR_LIMITS.causeMessageChars,
  });
}

/** How far a cause chain is kept, and how much stack, own fields and (below the error) message text the whole chain keeps. */
const ERROR_LIMITS = { causeDepth: 4, stackChars: 4000, fieldsChars: 8000, causeMessageChars: 4000 } as const;

/** What is left of the chain's budget for stacks, fields and the causes' messages. */
interface Budget {
  stackChars: number;
  fieldsChars: number;
  causeMessageChars: number;
}

/**
 * steplog's errors whose cause is kept: a CHILD_FAILED's is the child's own error, which a
 * handler may branch on, so a continue that throws it again must throw it with its cause.
 */
const KEEPS_CAUSE: ReadonlySet<string> = new Set(["CHILD_FAILED"]);

/** Keys an error keeps in its own slots of ErrorInfo, never among its fields. */
const OWN_SLOTS = new Set(["name", "message", "stack", "cause", "code", "step"]);
/** A SteplogError's context fields are in its message already. */
const STEPLOG_CONTEXT = new Set(["runId", "attempt"]);

function infoOf(error: unknown, step: string | undefined, depth: number, budget: Budget): ErrorInfo {
  if (!(error instanceof Error)) {
    const info: ErrorInfo = { name: "Error", message: messageOf(typeof error === "string" ? error : safeString(error), depth, budget) };
    if (step !== undefined) info.step = step;
    return info;
  }
  const info: ErrorInfo = { name: error.name, message: messageOf(error.message, depth, budget) };
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") info.code = code;
  const ownStep = (error as { step?: unknown }).step;
  if (typeof ownStep === "string") info.step = ownStep;
  else if (step !== undefined) info.step = step;
  const className = error.constructor?.name;
  if (typeof className === "string" && className !== "" && className !== error.name) info.className = className;
  const ours = error instanceof SteplogError;
  // steplog's own stacks and causes say nothing its message does not; a user's error keeps where it came from.
  if (!ours && typeof error.stack === "string" && budget.stackChars > 0) {
    info.stack = bounded(error.stack, budget.stackChars);
    budget.stackChars -= Math.min(error.stack.length, budget.stackChars);
  }
  const fields = plainFields(error, ours, budget);
  if (fields) info.fields = fields;
  // A steplog error's message already says what caused it (and its record must stay small: it may be written to a full disk).
  const keepsCause = !ours || (typeof code === "string" && KEEPS_CAUSE.has(code));
  if (keepsCause && "cause" in error && error.cause !== undefined && depth < ERROR_LIMITS.causeDepth)
    info.cause = infoOf(error.cause, undefined, depth + 1, budget);
  return info;
}

/** The error's own message whole; a cause's within what is left of the chain's budget. */
function messageOf(message: string, depth: number, budget: Budget): string {
  if (depth === 0) return message;
  const kept = bounded(message, budget.causeMessageChars);
  budget.causeMessageChars -= Math.min(message.length, budget.causeMessageChars);
  return kept;
}

/** An error's own enumerable fields that are plain JSON data, within a size bound; the rest are left out. */
function plainFields(error: Error, ours: boolean, budget: Budget): Record<string, unknown> | undefined {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(error)) {
    if (OWN_SLOTS.has(key) || (ours && STEPLOG_CONTEXT.has(key))) continue;
    const text = plainJson((error as unknown as Record<string, unknown>)[key]);
    if (text === undefined || text.length > budget.fieldsChars) continue;
    budget.fieldsChars -= text.length;
    out ??= {};
    out[key] = JSON.parse(text);
  }
  return out;
}

/** The JSON text of a value that JSON carries exactly (no functions, instances, cycles, undefined, NaN); else undefined. */
function plainJson(value: unknown, depth = 0): string | undefined {
  const ok = (v: unknown, d: number): boolean => {
    if (v === null || typeof v === "string" || typeof v === "boolean") return true;
    if (typeof v === "number") return Number.isFinite(v);
    if (typeof v !== "object" || d > 16) return false;
    if (Array.isArray(v)) return v.every((item) => ok(item, d + 1));
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return false;
    return Object.values(v as Record<string, unknown>).every((item) => ok(item, d + 1));
  };
  return ok(value, depth) ? JSON.stringify(value) : undefined;
}

function bounded(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
