/**
 * Refusals of a call made wrongly: a step that is not recorded or not escalated, a name or an
 * option that is not allowed, an engine already closed. Nothing is recorded.
 */

import { SteplogError, type SteplogErrorDetails } from "./steplog-error.js";
import { q } from "./quote.js";

export class StepNotFoundError extends SteplogError {
  override name = "StepNotFoundError";
  constructor(runId: string, step: string, recorded: readonly string[], what: string) {
    super(
      "STEP_NOT_FOUND",
      `Run ${q(runId)} has no recorded step ${q(step)} (${what}). Recorded steps: ${recorded.length === 0 ? "none" : recorded.map(q).join(", ")}. ` +
        `Name one of those (a key such as "fetch#2", or a name for its first occurrence).`,
      { runId, step },
    );
  }
}

export class NotEscalatedError extends SteplogError {
  override name = "NotEscalatedError";
  constructor(runId: string, step: string, status: string) {
    super(
      "NOT_ESCALATED",
      `Run ${q(runId)}: step ${q(step)} is ${status}, not escalated, so there is nothing to resolve. See engine.escalations() for what waits for a person.`,
      { runId, step },
    );
  }
}

export class InvalidNameError extends SteplogError {
  override name = "InvalidNameError";
  constructor(kind: string, value: string, rule: string) {
    const shown = value.length > 60 ? `${JSON.stringify(value.slice(0, 60))}… (${value.length} characters)` : JSON.stringify(value);
    super("INVALID_NAME", `Invalid ${kind} ${shown}: ${rule}.`);
  }
}

export class InvalidOptionError extends SteplogError {
  override name = "InvalidOptionError";
  constructor(message: string, details: SteplogErrorDetails = {}) {
    super("INVALID_OPTION", message, details);
  }
}

export class EngineClosedError extends SteplogError {
  override name = "EngineClosedError";
  constructor() {
    super("ENGINE_CLOSED", `This engine was closed; create a new one with createEngine(...) to go on.`);
  }
}
