/**
 * createEngine's `tracing` option: whether attempts and steps are OpenTelemetry spans, and the
 * load of `@opentelemetry/api` (an optional peer, never imported statically). It is required when
 * an engine is created, synchronously, so an attempt never waits for it; an app without it pays
 * one failed lookup per process. The spans themselves are steps/tracing.ts.
 */

import { createRequire } from "node:module";
import type { Tracer } from "@opentelemetry/api";
import { InvalidOptionError } from "../base/errors.js";
import { Tracing, type AttemptLabels, type OtelApi } from "../steps/step-spans.js";
import type { Workflow } from "../workflow/define-workflow.js";
import type { EngineOptions } from "./api.js";

/** The name the engine's spans are made under (their instrumentation scope). */
export const TRACER_NAME = "steplog";

/**
 * Check the option and load the API: the engine's Tracing, or undefined when tracing is off
 * (`false`) or the API cannot be loaded. By default spans go to the globally registered
 * TracerProvider, asked as each span starts (a provider registered after createEngine counts);
 * with none registered nothing is recorded.
 */
export function loadTracing(option: EngineOptions["tracing"]): Tracing | undefined {
  if (option === false) return undefined;
  const given = typeof option === "object" && option !== null ? (option.tracer as Tracer | undefined) : undefined;
  if (!(option === undefined || option === true || typeof given?.startSpan === "function")) {
    throw new InvalidOptionError(
      `createEngine: tracing must be true, false or { tracer } (an OpenTelemetry Tracer, from trace.getTracer(...)), got ${describe(option)}.`,
    );
  }
  const loaded = loadApi();
  if ("api" in loaded) return new Tracing(loaded.api, given ?? loaded.api.trace.getTracer(TRACER_NAME));
  // Asked for by name, its absence is worth a word; by default it is how tracing stays off.
  if (option !== undefined) {
    process.emitWarning(
      `steplog: tracing was asked for, but @opentelemetry/api could not be loaded (${loaded.why}); no spans are made. Install it: npm install @opentelemetry/api`,
      { code: "STEPLOG_TRACING_UNAVAILABLE" },
    );
  }
  return undefined;
}

/** The API, loaded once per process (each engine asks), or why it could not be. */
let api: { api: OtelApi } | { why: string } | undefined;

function loadApi(): { api: OtelApi } | { why: string } {
  if (api) return api;
  try {
    // Resolved from steplog's own location, as an import of it would be. In Node an import and a
    // require of the package both load its CommonJS build, so this is the app's copy; and every
    // copy of the API shares one global registry of providers anyway.
    api = { api: createRequire(import.meta.url)("@opentelemetry/api") as OtelApi };
  } catch (error) {
    api = { why: error instanceof Error ? error.message.split("\n")[0]! : String(error) };
  }
  return api;
}

function describe(value: unknown): string {
  if (typeof value === "object" && value !== null) return "an object without a tracer";
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

/** What an attempt's span is labelled with. */
export function attemptLabels(workflow: Workflow, runId: string, attempt: number, mode: "run" | "compensate", fromStep: string | undefined): AttemptLabels {
  return { runId, workflow: workflow.name, version: workflow.version, attempt, mode, fromStep };
}
