// OpenTelemetry: with @opentelemetry/api present and a TracerProvider registered, attempts and
// steps are spans, and the run records the trace context its attempts hang from, so a continue
// (by another engine, or in another process) joins the same trace. Off, or without the API: no
// spans, nothing recorded. Checked with the SDK's in-memory exporter, on every store.
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { context, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, type Engine } from "../../src/entries/index.js";
import { jsonlStore } from "../../src/entries/jsonl.js";
import { postgresStore } from "../../src/entries/postgres.js";
import { testWorkflow } from "../../src/entries/testing.js";
import { sqliteStore } from "../../src/store/sqlite/store.js";
import type { Store } from "../../src/store/types.js";
import { spawnNode } from "../helpers/child.js";
import { PG_URL } from "../helpers/pg.js";
import { EVERY_STORE } from "../helpers/stores.js";
import { tmpDb } from "../helpers/tmp.js";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const app = trace.getTracer("the-app");

beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});
afterEach(() => exporter.reset());

const schemas: string[] = [];
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
  if (!PG_URL || schemas.length === 0) return;
  const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
  try {
    for (const schema of schemas.splice(0)) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await admin.end();
  }
});

/** Where a store keeps its data, for a store object in another process. */
type Spec = { kind: "sqlite" | "jsonl"; path: string } | { kind: "postgres"; connectionString: string; schema: string };

/** Store objects on the same data: a new object each time where the store can share its data (memory: the same one, whose close waits for the last). */
function sameData(name: string, make: () => Store): { open: () => Store; spec: Spec | undefined } {
  if (name === "sqlite" || name === "jsonl") {
    const path = tmpDb(name === "sqlite" ? "steplog.db" : "steplog.jsonl");
    return { open: () => (name === "sqlite" ? sqliteStore({ path }) : jsonlStore({ path })), spec: { kind: name, path } };
  }
  if (name === "postgres") {
    const schema = `steplog_trace_${process.pid}_${crypto.randomBytes(3).toString("hex")}`;
    schemas.push(schema);
    return { open: () => postgresStore({ connectionString: PG_URL!, schema }), spec: { kind: "postgres", connectionString: PG_URL!, schema } };
  }
  const one = make();
  const open = () =>
    new Proxy(one, {
      get: (target, key) => {
        if (key === "close") return async () => {};
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  return { open, spec: undefined };
}

/** "charge" fails in attempt 1 only (the child process fixture defines the same workflow). */
const traced = defineWorkflow({
  name: "traced",
  async run(ctx) {
    const plan = await ctx.step("plan", async () => "p");
    const charged = await ctx.step("charge", { effect: "idempotent" }, async ({ attempt }) => {
      if (attempt === 1) throw new Error("card declined");
      return "ok";
    });
    return { plan, charged };
  },
});

const spans = () => exporter.getFinishedSpans();
const attemptSpans = (runId: string) => spans().filter((s) => s.name.startsWith("steplog.attempt ") && s.attributes["steplog.run_id"] === runId);
const stepSpans = (runId: string, attempt: number) =>
  spans().filter((s) => s.name.startsWith("steplog.step ") && s.attributes["steplog.run_id"] === runId && s.attributes["steplog.attempt"] === attempt);
const stepSpan = (runId: string, attempt: number, key: string) => stepSpans(runId, attempt).find((s) => s.attributes["steplog.step.key"] === key)!;
const traceparentOf = (span: Pick<ReadableSpan, "spanContext">) => `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;
const storedTraceContext = async (engine: Engine, id: string) => (await engine.store.loadRun(id))!.run.traceContext ?? null;

describe.each(EVERY_STORE)("tracing on the %s store", (name, make) => {
  it("a run is an attempt span with a child span per step (steps run together included), and records its trace context", async () => {
    const engine = createEngine({ store: make() });
    try {
      const wf = defineWorkflow({
        name: "together",
        version: "1.2.0",
        async run(ctx) {
          const first = await ctx.step("first", { effect: "read" }, async () => 1);
          const all = await Promise.all(["a", "b", "c"].map((item) => ctx.step(`fetch:${item}`, async () => `${item}!`)));
          return { first, all };
        },
      });
      const result = await engine.start(wf, {}, { id: "t1" });
      expect(result.status).toBe("completed");

      const [attempt] = attemptSpans("t1");
      expect(attemptSpans("t1")).toHaveLength(1);
      expect(attempt!.name).toBe("steplog.attempt together");
      expect(attempt!.parentSpanContext).toBeUndefined();
      expect(attempt!.attributes).toMatchObject({
        "steplog.run_id": "t1",
        "steplog.workflow": "together",
        "steplog.workflow.version": "1.2.0",
        "steplog.attempt": 1,
        "steplog.attempt.mode": "run",
        "steplog.attempt.ending": "completed",
        "steplog.run.status": "completed",
        "steplog.attempt.steps_ran": 4,
        "steplog.attempt.steps_reused": 0,
      });
      expect(attempt!.status.code).toBe(SpanStatusCode.UNSET);

      const steps = stepSpans("t1", 1);
      expect(steps.map((s) => s.attributes["steplog.step.key"]).sort()).toEqual(["fetch:a", "fetch:b", "fetch:c", "first"]);
      for (const step of steps) {
        // Each hangs from the attempt, however they were entered.
        expect(step.parentSpanContext?.spanId).toBe(attempt!.spanContext().spanId);
        expect(step.spanContext().traceId).toBe(attempt!.spanContext().traceId);
        expect(step.attributes).toMatchObject({
          "steplog.step.outcome": "ran",
          "steplog.step.status": "succeeded",
          "steplog.step.calls": 1,
          "steplog.step.retries": 0,
        });
      }
      expect(stepSpan("t1", 1, "first").name).toBe("steplog.step first");
      expect(stepSpan("t1", 1, "first").attributes).toMatchObject({ "steplog.step.effect": "read", "steplog.step.idempotency_key": "t1:first" });
      expect(stepSpan("t1", 1, "fetch:b").attributes["steplog.step.effect"]).toBe("idempotent");

      expect(await storedTraceContext(engine, "t1")).toBe(traceparentOf(attempt!));
    } finally {
      await engine.close();
    }
  });

  it("a failed step, then a continue by a new engine on the same data: reused and ran step spans, in the same trace", async () => {
    const { open } = sameData(name, make);
    const first = createEngine({ store: open(), workflows: [traced] });
    const failed = await first.start(traced, {}, { id: "t2" });
    await first.close();
    expect(failed.status).toBe("failed");

    const [one] = attemptSpans("t2");
    expect(one!.status.code).toBe(SpanStatusCode.ERROR);
    expect(one!.attributes).toMatchObject({ "steplog.attempt.ending": "failed", "steplog.run.status": "failed", "steplog.error.step": "charge" });
    const charge1 = stepSpan("t2", 1, "charge");
    expect(charge1.status).toMatchObject({ code: SpanStatusCode.ERROR, message: "card declined" });
    expect(charge1.attributes).toMatchObject({ "steplog.step.outcome": "ran", "steplog.step.status": "failed", "steplog.step.calls": 1 });
    expect(charge1.events.map((e) => e.name)).toContain("exception");
    expect(stepSpan("t2", 1, "plan").status.code).toBe(SpanStatusCode.UNSET);

    const second = createEngine({ store: open(), workflows: [traced] });
    try {
      const continued = await second.continue("t2");
      expect(continued.status).toBe("completed");
      const two = attemptSpans("t2").find((s) => s.attributes["steplog.attempt"] === 2)!;
      expect(two.spanContext().traceId).toBe(one!.spanContext().traceId);
      expect(two.parentSpanContext?.spanId).toBe(one!.spanContext().spanId);
      expect(two.attributes).toMatchObject({ "steplog.attempt.ending": "completed", "steplog.attempt.steps_ran": 1, "steplog.attempt.steps_reused": 1 });
      expect(stepSpan("t2", 2, "plan").attributes).toMatchObject({
        "steplog.step.outcome": "reused",
        "steplog.step.status": "succeeded",
        "steplog.step.recorded_by": 1,
      });
      expect(stepSpan("t2", 2, "charge").attributes).toMatchObject({
        "steplog.step.outcome": "ran",
        "steplog.step.status": "succeeded",
        "steplog.step.calls": 1,
      });
      for (const step of stepSpans("t2", 2)) expect(step.parentSpanContext?.spanId).toBe(two.spanContext().spanId);
      // The run keeps its first attempt's context.
      expect(await storedTraceContext(second, "t2")).toBe(traceparentOf(one!));
    } finally {
      await second.close();
    }
  });

  it("a retried step is one span: its calls, its retries, an event per failed call", async () => {
    const engine = createEngine({ store: make() });
    try {
      let calls = 0;
      const wf = defineWorkflow({
        name: "flaky",
        async run(ctx) {
          return ctx.step("fetch", { retry: { maxAttempts: 3, backoffMs: 1 } }, async () => {
            if (++calls < 3) throw Object.assign(new Error(`try ${calls} failed`), { code: "ECONNRESET" });
            return "got it";
          });
        },
      });
      expect((await engine.start(wf, {}, { id: "t3" })).status).toBe("completed");
      const fetch = stepSpan("t3", 1, "fetch");
      expect(fetch.attributes).toMatchObject({
        "steplog.step.outcome": "ran",
        "steplog.step.status": "succeeded",
        "steplog.step.calls": 3,
        "steplog.step.retries": 2,
      });
      expect(fetch.status.code).toBe(SpanStatusCode.UNSET);
      const failedCalls = fetch.events.filter((e) => e.name === "steplog.step.call_failed");
      expect(failedCalls.map((e) => e.attributes)).toEqual([
        { "steplog.step.call": 1, "exception.type": "Error", "exception.message": "try 1 failed", "steplog.error.code": "ECONNRESET" },
        { "steplog.step.call": 2, "exception.type": "Error", "exception.message": "try 2 failed", "steplog.error.code": "ECONNRESET" },
      ]);
    } finally {
      await engine.close();
    }
  });

  it("a run queued for its turn records its first attempt's context when the turn comes (in the claim's own write)", async () => {
    const engine = createEngine({ store: make() });
    try {
      const limited = defineWorkflow({ name: "limited", concurrency: { limit: 1 }, run: async (ctx) => ctx.step("only", async () => "done") });
      expect((await engine.start(limited, {}, { id: "t4" })).status).toBe("completed");
      const [attempt] = attemptSpans("t4");
      expect(attempt!.parentSpanContext).toBeUndefined();
      expect(stepSpan("t4", 1, "only").parentSpanContext?.spanId).toBe(attempt!.spanContext().spanId);
      expect(await storedTraceContext(engine, "t4")).toBe(traceparentOf(attempt!));

      // Queued inside the app's span: the run records that span, and its first attempt is its child.
      const request = await app.startActiveSpan("POST /limited", async (span) => {
        try {
          expect((await engine.start(limited, {}, { id: "t4b" })).status).toBe("completed");
          return span;
        } finally {
          span.end();
        }
      });
      const [queued] = attemptSpans("t4b");
      expect(queued!.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
      expect(queued!.links).toEqual([]);
      expect(await storedTraceContext(engine, "t4b")).toBe(traceparentOf(request));
    } finally {
      await engine.close();
    }
  });

  it("a start inside the app's span is its child; a continue inside another app span stays in the run's trace, linked to it", async () => {
    const { open } = sameData(name, make);
    const engine = createEngine({ store: open(), workflows: [traced] });
    try {
      const request = await app.startActiveSpan("POST /charge", async (span) => {
        try {
          await engine.start(traced, {}, { id: "t5" });
          return span;
        } finally {
          span.end();
        }
      });
      const [one] = attemptSpans("t5");
      expect(one!.spanContext().traceId).toBe(request.spanContext().traceId);
      expect(one!.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
      expect(await storedTraceContext(engine, "t5")).toBe(traceparentOf(one!));

      const retry = await app.startActiveSpan("POST /retry", async (span) => {
        try {
          expect((await engine.continue("t5")).status).toBe("completed");
          return span;
        } finally {
          span.end();
        }
      });
      const two = attemptSpans("t5").find((s) => s.attributes["steplog.attempt"] === 2)!;
      expect(two.spanContext().traceId).toBe(one!.spanContext().traceId);
      expect(two.parentSpanContext?.spanId).toBe(one!.spanContext().spanId);
      expect(two.links.map((l) => l.context.spanId)).toEqual([retry.spanContext().spanId]);
    } finally {
      await engine.close();
    }
  });

  it("with tracing off, no span is made and the run records no trace context", async () => {
    const engine = createEngine({ store: make(), workflows: [traced], tracing: false });
    try {
      await engine.start(traced, {}, { id: "t6" });
      expect((await engine.continue("t6")).status).toBe("completed");
      expect(spans()).toEqual([]);
      expect(await storedTraceContext(engine, "t6")).toBeNull();
    } finally {
      await engine.close();
    }
  });
});

describe("tracing", () => {
  it("spans of the workflow's code and of a step's function hang from the attempt and the step", async () => {
    const engine = createEngine({ store: EVERY_STORE[0]![1]() });
    try {
      const wf = defineWorkflow({
        name: "nested",
        async run(ctx) {
          app.startSpan("between steps").end();
          return ctx.step("call", async () => {
            app.startSpan("http GET").end();
            return 1;
          });
        },
      });
      await engine.start(wf, {}, { id: "n1" });
      const [attempt] = attemptSpans("n1");
      const between = spans().find((s) => s.name === "between steps")!;
      const get = spans().find((s) => s.name === "http GET")!;
      expect(between.parentSpanContext?.spanId).toBe(attempt!.spanContext().spanId);
      expect(get.parentSpanContext?.spanId).toBe(stepSpan("n1", 1, "call").spanContext().spanId);
    } finally {
      await engine.close();
    }
  });

  it("a child run started by a traced attempt is in its parent's trace, its first attempt under the parent's attempt", async () => {
    const engine = createEngine({ store: EVERY_STORE[0]![1]() });
    try {
      const review = defineWorkflow({ name: "review", run: async (ctx) => ctx.step("lint", async () => "clean") });
      const release = defineWorkflow({ name: "release", run: async (ctx) => ctx.child("review", review, {}, { id: "r1-review" }) });
      expect((await engine.start(release, {}, { id: "r1" })).status).toBe("completed");
      const [parent] = attemptSpans("r1");
      const [child] = attemptSpans("r1-review");
      expect(child!.spanContext().traceId).toBe(parent!.spanContext().traceId);
      expect(child!.parentSpanContext?.spanId).toBe(parent!.spanContext().spanId);
      expect(await storedTraceContext(engine, "r1-review")).toBe(traceparentOf(child!));
    } finally {
      await engine.close();
    }
  });

  it("a step cut off in an earlier attempt: resolved by its query, re-driven, or escalated", async () => {
    const wf = defineWorkflow({
      name: "cut-off",
      async run(ctx) {
        await ctx.step("charge", { effect: "irreversible", query: async () => ({ done: true, value: "ch_1" }) }, async () => "ch_2");
        await ctx.step("mail", async () => "sent");
        await ctx.step("ship", { effect: "irreversible" }, async () => "shipped");
      },
    });
    const run = await testWorkflow(wf, { args: {}, runId: "c1", earlier: { intended: ["charge", "mail", "ship"] } });
    expect(run.status).toBe("escalated");
    expect(stepSpan("c1", 2, "charge").attributes).toMatchObject({
      "steplog.step.outcome": "resolved",
      "steplog.step.policy": "query",
      "steplog.step.status": "succeeded",
      "steplog.step.idempotency_key": "c1:charge",
    });
    expect(stepSpan("c1", 2, "mail").attributes).toMatchObject({
      "steplog.step.outcome": "ran",
      "steplog.step.policy": "redrive",
      "steplog.step.status": "succeeded",
    });
    const ship = stepSpan("c1", 2, "ship");
    expect(ship.attributes).toMatchObject({
      "steplog.step.outcome": "escalated",
      "steplog.step.policy": "escalate",
      "steplog.step.status": "escalated",
      "steplog.error.code": "RUN_ESCALATED",
    });
    expect(ship.status.code).toBe(SpanStatusCode.UNSET);
    expect(attemptSpans("c1").find((s) => s.attributes["steplog.attempt"] === 2)!.attributes).toMatchObject({
      "steplog.attempt.ending": "escalated",
      "steplog.attempt.steps_resolved": 1,
    });
  });

  it("a saga is a compensate span with a span per compensation", async () => {
    const engine = createEngine({ store: EVERY_STORE[0]![1]() });
    try {
      const undone: string[] = [];
      const wf = defineWorkflow({
        name: "booking",
        async run(ctx) {
          await ctx.step("hold", { effect: "compensatable", compensate: async () => void undone.push("hold") }, async () => "held");
          await ctx.step("pay", async () => {
            throw new Error("no funds");
          });
        },
      });
      await engine.start(wf, {}, { id: "s1" });
      exporter.reset();
      expect((await engine.compensate("s1")).status).toBe("compensated");
      const saga = spans().find((s) => s.name === "steplog.compensate booking")!;
      expect(saga.attributes).toMatchObject({ "steplog.attempt.mode": "compensate", "steplog.attempt.ending": "compensated" });
      const hold = spans().filter((s) => s.name === "steplog.step hold");
      expect(hold).toHaveLength(1);
      expect(hold[0]!.attributes).toMatchObject({ "steplog.step.outcome": "compensated", "steplog.step.status": "compensated" });
      expect(hold[0]!.parentSpanContext?.spanId).toBe(saga.spanContext().spanId);
      expect(undone).toEqual(["hold"]);
    } finally {
      await engine.close();
    }
  });

  it("{ tracer } sends the spans to that tracer instead of the global provider's", async () => {
    const own = new InMemorySpanExporter();
    const mine = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(own)] });
    const engine = createEngine({ store: EVERY_STORE[0]![1](), tracing: { tracer: mine.getTracer("mine") } });
    try {
      await engine.start(traced, {}, { id: "m1" });
      expect(spans()).toEqual([]);
      expect(own.getFinishedSpans().map((s) => s.name)).toEqual(["steplog.step plan", "steplog.step charge", "steplog.attempt traced"]);
      expect(await storedTraceContext(engine, "m1")).toBe(traceparentOf(own.getFinishedSpans().at(-1)!));
    } finally {
      await engine.close();
      await mine.shutdown();
    }
  });

  it("a tracing option that is none of true, false, { tracer } is refused", () => {
    expect(() => createEngine({ store: EVERY_STORE[0]![1](), tracing: "on" as never })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    expect(() => createEngine({ store: EVERY_STORE[0]![1](), tracing: {} as never })).toThrow(/tracing must be true, false or \{ tracer \}/);
  });
});

const FIXTURE = fileURLToPath(new URL("./fixtures/tracing-continue.mjs", import.meta.url));
const DIST = fileURLToPath(new URL("../../dist/", import.meta.url));
const DURABLE = EVERY_STORE.filter(([name]) => name !== "memory");

describe.each(DURABLE)("a continue in another process (%s store)", (name, make) => {
  it("joins the run's trace: its attempt span is a child of the first attempt's", async () => {
    const { open, spec } = sameData(name, make);
    const engine = createEngine({ store: open(), workflows: [traced] });
    try {
      expect((await engine.start(traced, {}, { id: "x1" })).status).toBe("failed");
    } finally {
      await engine.close();
    }
    const [one] = attemptSpans("x1");
    const out = await spawnNode(FIXTURE, [JSON.stringify({ ...spec, runId: "x1" })]).done;
    expect(out.code, out.stderr).toBe(0);
    const report = out.report as {
      status: string;
      spans: Array<{ name: string; traceId: string; spanId: string; parentSpanId?: string; attributes: Record<string, unknown> }>;
    };
    expect(report.status).toBe("completed");
    const two = report.spans.find((s) => s.name === "steplog.attempt traced")!;
    expect(two.attributes["steplog.attempt"]).toBe(2);
    expect(two.traceId).toBe(one!.spanContext().traceId);
    expect(two.parentSpanId).toBe(one!.spanContext().spanId);
    const steps = report.spans.filter((s) => s.name.startsWith("steplog.step "));
    expect(steps.map((s) => [s.attributes["steplog.step.key"], s.attributes["steplog.step.outcome"]])).toEqual([
      ["plan", "reused"],
      ["charge", "ran"],
    ]);
    for (const step of steps) expect(step.parentSpanId).toBe(two.spanId);
  });
});

describe("without @opentelemetry/api", () => {
  it("steplog loads and runs, makes no span and records no trace context (tracing: true warns)", () => {
    const db = tmpDb();
    // The package made impossible to resolve, by require (how steplog loads it) and by import, as in an app that does not install it.
    const preload = path.join(path.dirname(db), "no-otel.cjs");
    fs.writeFileSync(
      preload,
      `const Module = require("node:module");
      const resolve = Module._resolveFilename;
      Module._resolveFilename = function (request, ...rest) {
        if (request.startsWith("@opentelemetry/")) throw Object.assign(new Error("Cannot find module '" + request + "'"), { code: "MODULE_NOT_FOUND" });
        return resolve.call(this, request, ...rest);
      };`,
    );
    const hook = `export async function resolve(s, c, next) { if (s.startsWith("@opentelemetry/")) { const e = new Error("Cannot find package '" + s + "'"); e.code = "ERR_MODULE_NOT_FOUND"; throw e; } return next(s, c); }`;
    const script = `
      import { register } from "node:module";
      register("data:text/javascript,${encodeURIComponent(hook)}");
      const { createEngine, defineWorkflow } = await import(${JSON.stringify(DIST + "index.js")});
      const { sqliteStore } = await import(${JSON.stringify(DIST + "sqlite.js")});
      const warnings = [];
      process.on("warning", (w) => warnings.push(w.code));
      const wf = defineWorkflow({ name: "plain", run: async (ctx) => ctx.step("s", async () => 1) });
      const quiet = createEngine({ store: sqliteStore({ path: ${JSON.stringify(db)} }) });
      const a = await quiet.start(wf, {}, { id: "a" });
      const traceContext = (await quiet.store.loadRun("a")).run.traceContext;
      await quiet.close();
      const asked = createEngine({ store: sqliteStore({ path: ${JSON.stringify(db)} }), tracing: true });
      const b = await asked.start(wf, {}, { id: "b" });
      await asked.close();
      await new Promise((resolve) => setImmediate(resolve));
      let otel = "loadable";
      try { await import("@opentelemetry/api"); } catch { otel = "missing"; }
      console.log(JSON.stringify({ a: a.status, b: b.status, traceContext, warnings, otel }));`;
    const out = spawnSync(process.execPath, ["--require", preload, "--input-type=module", "-e", script], { encoding: "utf8", cwd: path.dirname(DIST) });
    const report = JSON.parse(out.stdout.trim().split("\n").at(-1) ?? "{}");
    expect(report, out.stderr).toMatchObject({ a: "completed", b: "completed", traceContext: null, otel: "missing" });
    expect(report.warnings.filter((w: string) => w === "STEPLOG_TRACING_UNAVAILABLE")).toEqual(["STEPLOG_TRACING_UNAVAILABLE"]);
  });
});

/**
 * The attribute tables of docs/observability.md's "Spans": each row names attributes (a name
 * without the `steplog.` prefix takes the previous one's) and, where the attribute takes a set
 * of values, lists them in backticks; backticks inside parentheses are examples or explanations.
 */
function documentedAttributes(): Array<{ span: "attempt" | "step"; name: string; values: string[] }> {
  const doc = fs.readFileSync(fileURLToPath(new URL("../../docs/observability.md", import.meta.url)), "utf8");
  const section = doc.slice(doc.indexOf("### Spans"), doc.indexOf("### One trace per run"));
  const tables = [...section.matchAll(/\| attribute \| value \|\n\|---\|---\|\n((?:\|.*\|\n)+)/g)].map((m) => m[1]!);
  expect(tables).toHaveLength(2);
  const ticked = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  return tables.flatMap((table, i) =>
    table
      .trim()
      .split("\n")
      .flatMap((row) => {
        const [names, value] = row.slice(1, -1).split("|") as [string, string];
        let outside = value;
        while (/\([^()]*\)/.test(outside)) outside = outside.replace(/\([^()]*\)/g, "");
        let prefix = "";
        return ticked(names).map((given) => {
          const name = given.startsWith("steplog.") ? given : `${prefix}${given}`;
          prefix = name.slice(0, name.lastIndexOf(".") + 1);
          return { span: i === 0 ? ("attempt" as const) : ("step" as const), name, values: ticked(outside) };
        });
      }),
  );
}

/** Resolves when the signal aborts: a step function that honours its signal and never returns otherwise. */
const untilAborted = (signal: AbortSignal) => new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));

describe("docs/observability.md's span attributes", () => {
  it("every attribute and every value the docs list is produced by some real run", async () => {
    const documented = documentedAttributes();
    // The parse reads the lists of values (a reworded row would otherwise check nothing).
    expect(documented.length).toBeGreaterThan(20);
    expect(documented.find((a) => a.name === "steplog.step.outcome")!.values).toHaveLength(7);
    expect(documented.find((a) => a.name === "steplog.step.policy")!.values).toEqual(["query", "redrive", "compensate", "escalate"]);
    const engine = createEngine({ store: EVERY_STORE[0]![1]() });
    try {
      // Every effect, a retried call, a handled refund: completed; then redone from a step, stopped before the irreversible one.
      let declined = true;
      const shop = defineWorkflow({
        name: "doc-shop",
        version: "1.0.0",
        async run(ctx) {
          await ctx.step("look", { effect: "read" }, async () => "item");
          await ctx.step("save", { retry: { maxAttempts: 2, backoffMs: 0 } }, async () => {
            if (declined) {
              declined = false;
              throw new Error("busy");
            }
            return "saved";
          });
          await ctx.step("hold", { effect: "compensatable", compensate: async () => {} }, async () => "held");
          await ctx.step("send", { effect: "irreversible" }, async () => "sent");
        },
      });
      expect((await engine.start(shop, {}, { id: "d-shop" })).status).toBe("completed");
      expect(await engine.continue("d-shop", { fromStep: "save" })).toMatchObject({ status: "stopped", error: { code: "REDO_IRREVERSIBLE" } });

      // A step's own timeout (a code on the step and the attempt), then a saga undoing the hold.
      const slow = defineWorkflow({
        name: "doc-slow",
        async run(ctx) {
          await ctx.step("hold", { effect: "compensatable", compensate: async () => {} }, async () => "held");
          await ctx.step("wait", { timeoutMs: 5 }, async ({ signal }) => untilAborted(signal));
        },
      });
      expect(await engine.start(slow, {}, { id: "d-failed" })).toMatchObject({ status: "failed", error: { code: "STEP_TIMED_OUT", step: "wait" } });
      expect((await engine.compensate("d-failed")).status).toBe("compensated");

      // The run's deadline, a cancel, a wait, ctx.stop inside a step.
      const hang = defineWorkflow({ name: "doc-hang", run: (ctx) => ctx.step("hang", async ({ signal }) => untilAborted(signal)) });
      expect((await engine.start(hang, {}, { id: "d-deadline", timeoutMs: 20 })).status).toBe("timed-out");
      const abort = new AbortController();
      setTimeout(() => abort.abort(), 20);
      expect((await engine.start(hang, {}, { id: "d-cancel", signal: abort.signal })).status).toBe("cancelled");
      const wait = defineWorkflow({ name: "doc-wait", run: (ctx) => ctx.waitForEvent("go") });
      expect((await engine.start(wait, {}, { id: "d-wait" })).status).toBe("waiting");
      const stop = defineWorkflow({ name: "doc-stop", run: (ctx) => ctx.step("review", async () => ctx.stop("not good enough")) });
      expect((await engine.start(stop, {}, { id: "d-stop" })).status).toBe("stopped");

      // A step added since the run, given a value with fromStep.
      let grown = false;
      const grows = defineWorkflow({
        name: "doc-grows",
        async run(ctx) {
          await ctx.step("a", async () => "a");
          if (grown) await ctx.step("b", async () => "b");
          return ctx.step("c", async () => "c");
        },
      });
      await engine.start(grows, {}, { id: "d-grows" });
      grown = true;
      expect((await engine.continue("d-grows", { fromStep: "c", values: { b: "given" } })).status).toBe("completed");
    } finally {
      await engine.close();
    }
    // Calls cut off in an earlier attempt, each settled by its policy; the last escalated.
    const cut = defineWorkflow({
      name: "doc-cut",
      async run(ctx) {
        await ctx.step("charge", { effect: "irreversible", query: async () => ({ done: true, value: "ch_1" }) }, async () => "ch_2");
        await ctx.step("mail", async () => "sent");
        await ctx.step("book", { effect: "compensatable", compensate: async () => {} }, async () => "booked");
        await ctx.step("ship", { effect: "irreversible" }, async () => "shipped");
      },
    });
    expect((await testWorkflow(cut, { args: {}, runId: "d-cut", earlier: { intended: ["charge", "mail", "book", "ship"] } })).status).toBe("escalated");

    const produced = { attempt: new Map<string, Set<unknown>>(), step: new Map<string, Set<unknown>>() };
    for (const span of spans()) {
      const kind = span.name.startsWith("steplog.step ") ? "step" : /^steplog\.(attempt|compensate) /.test(span.name) ? "attempt" : undefined;
      if (!kind) continue;
      for (const [name, value] of Object.entries(span.attributes)) {
        if (!produced[kind].has(name)) produced[kind].set(name, new Set());
        produced[kind].get(name)!.add(value);
      }
    }
    const missing = documented.flatMap(({ span, name, values }) => {
      const seen = produced[span].get(name);
      if (!seen) return [`${span} span: ${name}`];
      return values.filter((v) => !seen.has(v)).map((v) => `${span} span: ${name} = ${v}`);
    });
    expect(missing).toEqual([]);

    // The event each failed call is, with the attributes the docs list for it.
    const doc = fs.readFileSync(fileURLToPath(new URL("../../docs/observability.md", import.meta.url)), "utf8");
    const [, eventName, listed] = /an event `([^`]+)` on the step's span\s+\(([^)]*)\)/.exec(doc)!;
    const eventAttributes = [...listed!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    expect(eventAttributes).toContain("exception.message");
    const events = spans().flatMap((span) => span.events.filter((e) => e.name === eventName));
    expect(eventAttributes.filter((name) => !events.some((e) => e.attributes?.[name] !== undefined))).toEqual([]);
  });
});
