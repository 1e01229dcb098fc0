/**
 * OpenTelemetry spans for attempts and steps (docs/observability.md). `@opentelemetry/api` is an
 * optional peer: engine/tracing.ts loads it when an engine is created and hands it here; this
 * file imports only its types, which the build erases. Without it the engine has no Tracing, an
 * attempt has no AttemptTrace, and the step path pays one property read (`state.trace`).
 *
 * One span per attempt, a child span per step it enters, each parented explicitly (never by
 * whatever context is active when a step is entered: steps launched together with Promise.all
 * still hang from their attempt). A run records the W3C traceparent of the span its attempts
 * hang from (RunRow.traceContext); a later attempt, in any process, starts as its child, so the
 * whole run is one trace.
 */

import type * as Otel from "@opentelemetry/api";
import type { ErrorInfo } from "../base/errors.js";
import type { Effect, StepRow } from "../store/types.js";

/** The `@opentelemetry/api` module, as loaded. */
export type OtelApi = typeof Otel;

/** How a step entered in an attempt came out (`steplog.step.outcome`). */
export type StepOutcomeName = "ran" | "reused" | "resolved" | "supplied" | "escalated" | "stopped" | "compensated";

/** What an attempt span is named and labelled by, known when the attempt begins. */
export interface AttemptLabels {
  runId: string;
  workflow: string;
  version: string | undefined;
  attempt: number;
  /** "run", or "compensate" for a saga (its span is named `steplog.compensate <workflow>`). */
  mode: "run" | "compensate";
  fromStep: string | undefined;
}

/** How an attempt ended, as the span records it (a RunResult and the attempt's counts). */
export interface AttemptEnd {
  status: string;
  runStatus: string;
  error?: ErrorInfo;
  ran: number;
  reused: number;
  resolved: number;
}

/** Endings recorded as an error status; a stop, a park, an escalation or a completion are not errors. */
const ERROR_ENDINGS = new Set(["failed", "timed-out", "cancelled"]);
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A span context as a W3C traceparent. */
export function formatTraceparent(context: Otel.SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** A stored traceparent as a remote span context; undefined when it is not one (then it is ignored). */
export function parseTraceparent(api: OtelApi, text: string | null | undefined): Otel.SpanContext | undefined {
  const match = text ? TRACEPARENT.exec(text) : null;
  if (!match || match[1] === "ff") return undefined;
  const context: Otel.SpanContext = { traceId: match[2]!, spanId: match[3]!, traceFlags: parseInt(match[4]!, 16), isRemote: true };
  return api.isSpanContextValid(context) ? context : undefined;
}

/** Spans for one engine: the API as loaded and the tracer its spans come from. */
export class Tracing {
  constructor(
    readonly api: OtelApi,
    readonly tracer: Otel.Tracer,
  ) {}

  /** The caller's context now (an app's active span, if it has one). */
  active(): Otel.Context {
    return this.api.context.active();
  }

  /** The traceparent of the caller's active span, or null: what a run queued for its turn records (it has no attempt yet). */
  callerTraceparent(caller: Otel.Context): string | null {
    const context = this.api.trace.getSpanContext(caller);
    return context && this.api.isSpanContextValid(context) ? formatTraceparent(context) : null;
  }

  /**
   * Begin an attempt's span. A run that has a trace context (`stored`) is continued in its trace:
   * the span is a child of that context, linked to the caller's span if the caller has one of its
   * own. A run without one starts its span under the caller's context (an app's active span, or a
   * new trace). The span is exported only once ended: a begun attempt whose write then made no
   * attempt (an id already taken, a claim that failed) drops it unended.
   */
  beginAttempt(labels: AttemptLabels, stored: string | null | undefined, caller: Otel.Context): AttemptTrace {
    const api = this.api;
    const recorded = parseTraceparent(api, stored);
    let parent = caller;
    const links: Otel.Link[] = [];
    if (recorded) {
      const callers = api.trace.getSpanContext(caller);
      if (callers && api.isSpanContextValid(callers) && callers.spanId !== recorded.spanId) links.push({ context: callers });
      parent = api.trace.setSpanContext(caller, recorded);
    }
    const attributes: Otel.Attributes = {
      "steplog.run_id": labels.runId,
      "steplog.workflow": labels.workflow,
      "steplog.attempt": labels.attempt,
      "steplog.attempt.mode": labels.mode,
    };
    if (labels.version !== undefined) attributes["steplog.workflow.version"] = labels.version;
    if (labels.fromStep !== undefined) attributes["steplog.attempt.from_step"] = labels.fromStep;
    const name = `steplog.${labels.mode === "compensate" ? "compensate" : "attempt"} ${labels.workflow}`;
    const span = this.tracer.startSpan(name, { kind: api.SpanKind.INTERNAL, attributes, links }, parent);
    return new AttemptTrace(api, this.tracer, span, api.trace.setSpan(parent, span), labels);
  }
}

/** One attempt's span, and the step spans under it. */
export class AttemptTrace {
  /** This attempt's span context as a traceparent (null when it has none: no TracerProvider registered), for a run that has no trace context yet. */
  readonly traceparent: string | null;
  /** Whether the span is recorded (sampled, a provider registered): step spans are made only then. */
  readonly recording: boolean;

  constructor(
    private readonly api: OtelApi,
    private readonly tracer: Otel.Tracer,
    private readonly span: Otel.Span,
    private readonly context: Otel.Context,
    private readonly labels: AttemptLabels,
  ) {
    const own = span.spanContext();
    this.traceparent = api.isSpanContextValid(own) ? formatTraceparent(own) : null;
    this.recording = span.isRecording();
  }

  /** Run `fn` (the workflow's code) with the attempt's span active, so spans the app makes in it hang from the attempt. */
  activate<T>(fn: () => T): T {
    return this.api.context.with(this.context, fn);
  }

  /** A span for a step entered in this attempt, a child of the attempt's span; undefined when the attempt is not recorded. */
  step(key: string, name: string, effect: Effect | undefined, outcome: StepOutcomeName): StepSpan | undefined {
    if (!this.recording) return undefined;
    const api = this.api;
    const attributes: Otel.Attributes = {
      "steplog.run_id": this.labels.runId,
      "steplog.attempt": this.labels.attempt,
      "steplog.step.key": key,
      "steplog.step.name": name,
      "steplog.step.effect": effect ?? "idempotent",
    };
    // Parented explicitly: steps entered together (Promise.all) all hang from the attempt.
    const span = this.tracer.startSpan(`steplog.step ${name}`, { kind: api.SpanKind.INTERNAL, attributes }, this.context);
    return new StepSpan(api, span, api.trace.setSpan(this.context, span), this.labels.attempt, outcome);
  }

  /** End the span with how the attempt ended. */
  end(end: AttemptEnd): void {
    const span = this.span;
    span.setAttributes({
      "steplog.attempt.ending": end.status,
      "steplog.run.status": end.runStatus,
      "steplog.attempt.steps_ran": end.ran,
      "steplog.attempt.steps_reused": end.reused,
      "steplog.attempt.steps_resolved": end.resolved,
    });
    if (end.error) {
      if (end.error.code !== undefined) span.setAttribute("steplog.error.code", end.error.code);
      if (end.error.step !== undefined) span.setAttribute("steplog.error.step", end.error.step);
    }
    if (ERROR_ENDINGS.has(end.status)) {
      if (end.error)
        span.recordException({ name: end.error.name, message: end.error.message, ...(end.error.code === undefined ? {} : { code: end.error.code }) });
      span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: end.error?.message ?? end.status });
    }
    span.end();
  }

  /** End the span when the attempt itself threw (a bug, or a store that failed under it). */
  fail(error: unknown): void {
    recordError(this.api, this.span, error);
    this.span.end();
  }
}

/** One step's span: told how the step came out when its promise settles. */
export class StepSpan {
  constructor(
    private readonly api: OtelApi,
    private readonly span: Otel.Span,
    private readonly context: Otel.Context,
    private readonly attempt: number,
    /** How the step came out, as planned when it was entered; an unknown outcome's resolution refines it. */
    public outcome: StepOutcomeName,
  ) {}

  /** The unknown-outcome policy that settled a cut-off row of this step, when one did. */
  policy: string | undefined;

  /** The row this attempt wrote for the step, once it has one (a succeeded one leaves the attempt's `latest`, and a running one with no earlier record is not in it yet). */
  row: StepRow | undefined = undefined;

  /** Run `fn` (the step's function) with the step's span active, so spans the app makes in it hang from the step. */
  within<T>(fn: () => T): T {
    return this.api.context.with(this.context, fn);
  }

  /** A call of the step's function failed (a retry may follow): an event on the span. */
  callFailed(call: number, error: ErrorInfo): void {
    const attributes: Otel.Attributes = { "steplog.step.call": call, "exception.type": error.name, "exception.message": error.message };
    if (error.code !== undefined) attributes["steplog.error.code"] = error.code;
    this.span.addEvent("steplog.step.call_failed", attributes);
  }

  /**
   * The step's promise, ending the span when it settles: with the row this attempt wrote, or
   * else the one `latest` reads then. A new promise, the same value or error, so an unhandled
   * step rejection stays unhandled.
   */
  follow<T>(done: Promise<T>, latest: () => StepRow | undefined): Promise<T> {
    return done.then(
      (value) => {
        this.end(undefined, this.row ?? latest());
        return value;
      },
      (error: unknown) => {
        this.end(error ?? new Error(String(error)), this.row ?? latest());
        throw error;
      },
    );
  }

  /** End the span: the row the step left (its own, or the record it reused or settled) and what it threw. */
  end(error: unknown, row: StepRow | undefined): void {
    const span = this.span;
    const outcome = error !== undefined && this.outcome !== "stopped" && isEscalation(error) ? "escalated" : this.outcome;
    span.setAttribute("steplog.step.outcome", outcome);
    if (this.policy !== undefined) span.setAttribute("steplog.step.policy", this.policy);
    // A row written by another attempt describes this step only when it is the record reused or settled.
    const own = row !== undefined && (row.attempt === this.attempt || outcome === "reused" || outcome === "resolved" || outcome === "escalated");
    if (row && own) {
      span.setAttribute("steplog.step.status", row.status);
      span.setAttribute("steplog.step.idempotency_key", row.idempotencyKey);
      if (outcome === "reused") span.setAttribute("steplog.step.recorded_by", row.attempt);
      else {
        span.setAttribute("steplog.step.calls", row.calls);
        span.setAttribute("steplog.step.retries", Math.max(0, row.calls - 1));
      }
    }
    if (error !== undefined) {
      const code = codeOf(error);
      if (code !== undefined) span.setAttribute("steplog.error.code", code);
      // A stop (ctx.stop, or steplog stopping before the step), a park or an escalation is how the attempt goes on, not a failure.
      const stopped = outcome === "stopped" || outcome === "escalated" || (own && row?.status === "stopped") || isPark(error);
      if (!stopped) recordError(this.api, span, error);
    }
    span.end();
  }
}

function codeOf(error: unknown): string | undefined {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" ? code : undefined;
}

function isEscalation(error: unknown): boolean {
  return codeOf(error) === "RUN_ESCALATED";
}

/** The run parks (an approval, a wait) or stops: thrown through the workflow's code, not failures. */
function isPark(error: unknown): boolean {
  const name = error instanceof Error ? error.name : undefined;
  return name === "Parked" || name === "StopRequest";
}

function recordError(api: OtelApi, span: Otel.Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}
