/**
 * testWorkflow: run one attempt of a workflow against seeded earlier records, and see
 * exactly what a second attempt runs. Attempt 1 is the seed; the attempt under test is 2.
 */

import type { RunResult } from "../steps/attempt.js";
import type { Workflow, WorkflowArgs } from "../workflow/define-workflow.js";
import { createEngine, TEST_HOOKS, type ContinueOptions } from "../engine/engine.js";
import { InvalidOptionError, type ErrorInfo } from "../base/errors.js";
import { checkKnownKeys, nearest, type KnownKeys } from "../base/options.js";
import { memoryStore } from "../store/memory.js";
import { runtimeStore } from "../store/runtime.js";
import { importedRuns, type RunExport } from "../operations/export.js";
import { checkDocument } from "../operations/export-check.js";
import { Payloads, type Codec } from "../payloads/payloads.js";
import { formatResolution } from "../workflow/step-resolution.js";
import { EFFECTS, type Effect, type Store, type StepRow } from "../store/types.js";
import { encodeValue } from "../payloads/values.js";
import type { RunView, StepView } from "../operations/views.js";
import type { StepInfo } from "../workflow/context.js";

export interface EarlierAttempt {
  /** Succeeded records of attempt 1, by step key ("plan", "fetch#2"), in execution order. */
  steps?: Record<string, unknown>;
  /** Steps attempt 1 entered and never finished (intent, no outcome): it then ended interrupted. */
  intended?: string[];
  /** The workflow version that wrote the seeded records. Default: the workflow's own. */
  version?: string;
  /**
   * The effect each seeded step was declared with, by step key (default "idempotent"). A real
   * run stores it with the record, and the saga's pivot rule reads it from there: seed an
   * irreversible step that succeeded as irreversible, or a compensation will reach past it.
   */
  effects?: Record<string, Effect>;
  /**
   * The input each seeded step was recorded with (ctx.step(name, { input }, fn)), by step key:
   * a continue compares the call's input with it (STEP_INPUT_CHANGED when they differ).
   */
  inputs?: Record<string, unknown>;
}

/**
 * testWorkflow's options: the run to test is seeded either from `args` and `earlier` (what attempt
 * 1 recorded, written by hand), or `from` an exported run (engine.export, steplog export): every
 * record of it, args included, so an incident becomes a test of the next attempt.
 */
export type TestWorkflowOptions<W extends Workflow<any, any>> = TestWorkflowSeed &
  (
    | { args: WorkflowArgs<W>; from?: undefined }
    | {
        /**
         * An exported run (engine.export, steplog export) of this workflow: its records are the
         * seed (succeeded steps handed back, intended ones cut off, failed ones run again), its
         * args the args. Not with `args`, `earlier` or `runId` (the run keeps its id).
         */
        from: RunExport;
        args?: undefined;
      }
  );

/** The options of testWorkflow other than where its seed comes from. */
export interface TestWorkflowSeed {
  /** Not with `from`. */
  earlier?: EarlierAttempt;
  /** Replace a step's function, by key or name. A step neither seeded nor mocked runs its real function. */
  mocks?: Record<string, (info: StepInfo) => unknown>;
  fromStep?: string;
  values?: Record<string, unknown>;
  /** As continue's: succeeded irreversible steps to run again, or to hand back. */
  redo?: string[];
  reuse?: string[];
  /** Default: a fresh memory store. */
  store?: Store;
  /** Default "test-run" (with `from`, the exported run's id). */
  runId?: string;
  /** The codec the run's values were sealed with (a `from` document of an encrypted store): the test's engine reads them with it. */
  codec?: Codec;
}

export type CallKind = "function" | "query" | "compensate";

export interface TestWorkflowResult {
  status: RunResult["status"];
  runStatus: RunResult["runStatus"];
  value: unknown;
  error: ErrorInfo | undefined;
  /** Steps whose function was called, in order. */
  ran: string[];
  /** Steps handed back from records; their function was not called. */
  reused: string[];
  /** Steps settled by a query, a compensation or a given value rather than by their function. */
  resolved: string[];
  /** How many times a step's function (or its query, or its compensation) was called. */
  calls(step: string, kind?: CallKind): number;
  /** The whole step log after the attempt, seeded rows included. */
  steps: StepView[];
  run: RunView;
}

const SEED_OWNER = { host: "steplog-testing-seed", bootId: null, pid: 0, processStart: null };

const OPTION_KEYS: KnownKeys<TestWorkflowSeed & { args?: unknown; from?: unknown }> = {
  args: true,
  from: true,
  codec: true,
  earlier: true,
  mocks: true,
  fromStep: true,
  values: true,
  redo: true,
  reuse: true,
  store: true,
  runId: true,
};
const EARLIER_KEYS: KnownKeys<EarlierAttempt> = { steps: true, intended: true, version: true, effects: true, inputs: true };

export async function testWorkflow<W extends Workflow<any, any>>(workflow: W, options: TestWorkflowOptions<W>): Promise<TestWorkflowResult> {
  checkKnownKeys("testWorkflow", options, OPTION_KEYS);
  checkKnownKeys("testWorkflow: earlier", options.earlier, EARLIER_KEYS);
  const ownStore = options.store === undefined;
  const store = options.store ?? memoryStore({ name: "testWorkflow memory store" });
  let runId: string;
  if (options.from === undefined) {
    runId = options.runId ?? "test-run";
    await seed(store, workflow, runId, options);
  } else runId = await seedFrom(store, workflow, options);

  const counts = new Map<string, number>();
  const ran: string[] = [];
  const reused: string[] = [];
  const resolved: string[] = [];
  const mocks = options.mocks ?? {};
  const entered = new Map<string, string>();
  const engine = createEngine({
    store,
    workflows: [workflow],
    ...(options.codec === undefined ? {} : { codec: options.codec }),
    onProgress: (event) => {
      if (event.type === "step-reused") reused.push(event.step);
      // Settled without its function: found by a query, or given as a value.
      const settled = event.type === "step-resolved" && ((event.policy === "query" && event.found === "done") || event.policy === "supplied");
      if (settled && !resolved.includes(event.step)) resolved.push(event.step);
    },
    [TEST_HOOKS]: {
      onEnter: (key, name) => entered.set(key, name),
      override: (key, name) => (mocks[key] ?? mocks[name]) as ((info: unknown) => unknown) | undefined,
      onCall: (key, kind) => {
        if (kind === "function" && !ran.includes(key)) ran.push(key);
        counts.set(`${kind}\u0000${key}`, (counts.get(`${kind}\u0000${key}`) ?? 0) + 1);
      },
    },
  });
  try {
    const continueOptions: ContinueOptions = {};
    if (options.fromStep !== undefined) continueOptions.fromStep = options.fromStep;
    if (options.values !== undefined) continueOptions.values = options.values;
    if (options.redo !== undefined) continueOptions.redo = options.redo;
    if (options.reuse !== undefined) continueOptions.reuse = options.reuse;
    const result = await engine.continue(runId, continueOptions);
    refuseUnmatched(options, entered, ran, result.status);
    const run = await engine.get(runId);
    return {
      status: result.status,
      runStatus: result.runStatus,
      value: result.value,
      error: result.error,
      ran,
      reused,
      resolved,
      calls: (step, kind = "function") => counts.get(`${kind}\u0000${step}`) ?? 0,
      steps: run.steps,
      run,
    };
  } finally {
    if (ownStore) await engine.close();
  }
}

/**
 * A seeded step or a mock that matches no step the workflow entered is a typo (the real function
 * ran instead) or a step the code no longer has: refused, naming every such key in one message.
 * Where the attempt ended before its end (escalated, stopped, waiting, failed), a key may lie
 * beyond where it stopped: it is refused only when a look-alike step (another name) ran its real
 * function.
 */
function refuseUnmatched(options: TestWorkflowOptions<Workflow<any, any>>, entered: Map<string, string>, ran: string[], status: string): void {
  const keys = [...entered.keys()];
  const names = [...new Set(entered.values())];
  const unmatched: Array<{ what: string; given: string; near: string | undefined; nearRan: boolean }> = [];
  const check = (what: string, given: string, matches: boolean) => {
    if (matches) return;
    const near = nearest(given, [...keys, ...names]);
    // An attempt that ended early may not have reached the step: let a seed be unless a look-alike
    // step ran its real function in its place (a later occurrence of an entered name may lie past the stop).
    const nameOf = (key: string) => key.replace(/#\d+$/, "");
    if (status !== "completed" && (near === undefined || !ran.includes(near) || nameOf(near) === nameOf(given))) return;
    unmatched.push({ what, given, near, nearRan: near !== undefined && ran.includes(near) });
  };
  for (const key of Object.keys(options.earlier?.steps ?? {})) check("earlier.steps", key, entered.has(key));
  for (const key of options.earlier?.intended ?? []) check("earlier.intended", key, entered.has(key));
  for (const key of Object.keys(options.mocks ?? {})) check("mocks", key, entered.has(key) || names.includes(key));
  if (unmatched.length === 0) return;
  const q = (text: string) => JSON.stringify(text);
  const [one] = unmatched;
  const what =
    unmatched.length === 1
      ? `${one!.what} names ${q(one!.given)}, which the workflow never entered` +
        (one!.near === undefined ? "." : `; did you mean ${q(one!.near)}${one!.nearRan ? " (its real function ran)" : ""}?`)
      : `${unmatched.length} keys match no step the workflow entered: ` +
        unmatched
          .map((u) => `${u.what} ${q(u.given)}` + (u.near === undefined ? "" : ` (did you mean ${q(u.near)}?${u.nearRan ? " Its real function ran." : ""})`))
          .join(", ") +
        ".";
  throw new InvalidOptionError(
    `testWorkflow: ${what} Steps entered: ${keys.length === 0 ? "none" : keys.map(q).join(", ")}. ` +
      `A seed or a mock that matches no step is not used, so the test would check something other than it says.`,
  );
}

/**
 * The exported run's records, written as engine.import writes them (owned by nobody). As with
 * `earlier`, the seed uses up none of the workflow's attempt budget: the attempt under test is
 * judged alone (a dead-lettered run is seeded failed).
 */
async function seedFrom(store: Store, workflow: Workflow, options: TestWorkflowOptions<Workflow<any, any>>): Promise<string> {
  const given = (["args", "earlier", "runId"] as const).filter((key) => options[key] !== undefined);
  if (given.length > 0) {
    throw new InvalidOptionError(
      `testWorkflow: ${given.join(", ")} ${given.length === 1 ? "is" : "are"} not given with from: the exported run's records are the seed, its args the args, its id the run's id.`,
    );
  }
  const doc = checkDocument(options.from);
  const id = doc.run.id;
  if (doc.run.workflow !== workflow.name) {
    throw new InvalidOptionError(
      `testWorkflow: from holds run ${JSON.stringify(id)} of workflow ${JSON.stringify(doc.run.workflow)}, not of ${JSON.stringify(workflow.name)}; test it with that workflow.`,
      { runId: id },
    );
  }
  const [first, ...children] = importedRuns(doc, Date.now());
  const run = { ...first!.run, budgetUsed: 0, status: first!.run.status === "dead-lettered" ? ("failed" as const) : first!.run.status };
  const written = await runtimeStore(store).importRuns([{ ...first!, run }, ...children]);
  if ("exists" in written) throw new Error(`testWorkflow: the store already holds a run ${JSON.stringify(written.exists.id)}; pass a fresh store.`);
  return id;
}

/** Write attempt 1 through the store contract, as a real first attempt would have. */
async function seed(store: Store, workflow: Workflow, runId: string, options: TestWorkflowOptions<Workflow<any, any>>): Promise<void> {
  const now = Date.now() - 60_000;
  const earlier = options.earlier ?? {};
  const version = earlier.version ?? workflow.version ?? null;
  const seeded = new Set([...Object.keys(earlier.steps ?? {}), ...(earlier.intended ?? [])]);
  for (const [field, keys] of [
    ["effects", Object.keys(earlier.effects ?? {})],
    ["inputs", Object.keys(earlier.inputs ?? {})],
  ] as const) {
    for (const key of keys) {
      if (!seeded.has(key)) {
        throw new InvalidOptionError(
          `testWorkflow: earlier.${field} names ${JSON.stringify(key)}, which is neither in earlier.steps nor in earlier.intended; ${field === "effects" ? "an effect" : "an input"} is declared for a seeded step.`,
        );
      }
    }
  }
  // Seeded inputs are written plain, with the digest the test's engine makes (keyed by its codec's, when it has one).
  const digests = new Payloads(Number.MAX_SAFE_INTEGER, options.codec);
  const inputOf = (key: string): string | null => {
    if (!Object.hasOwn(earlier.inputs ?? {}, key)) return null;
    const input = encodeValue(earlier.inputs![key], `The seeded input of step ${JSON.stringify(key)}`, { maxBytes: Number.MAX_SAFE_INTEGER });
    const inputDigest = digests.digest(input);
    return formatResolution(inputDigest === undefined ? { input } : { input, inputDigest });
  };
  const lease = await store.createRun(
    {
      id: runId,
      workflow: workflow.name,
      version,
      args: encodeValue(options.args, "The test's args", { maxBytes: Number.MAX_SAFE_INTEGER }),
      status: "running",
      attempts: 1,
      // The seed does not use up the workflow's attempt budget: the attempt under test is judged alone.
      budgetUsed: 0,
      source: null,
      deadline: null,
      value: null,
      error: null,
      waitingFor: null,
      wakeAt: null,
      parent: null,
      createdAt: now,
      updatedAt: now,
    },
    { runId, number: 1, ...SEED_OWNER, startedAt: now, endedAt: null, ending: null, fromStep: null, forced: false, error: null },
    // Already expired: the seeded attempt's owner is gone.
    { expiresAt: 0, now },
  );
  if ("exists" in lease) throw new Error(`testWorkflow: the store already holds a run ${JSON.stringify(runId)}; pass another runId or a fresh store.`);
  const effectOf = (key: string): Effect => {
    const effect = earlier.effects?.[key] ?? "idempotent";
    if (!EFFECTS.includes(effect))
      throw new InvalidOptionError(
        `testWorkflow: earlier.effects[${JSON.stringify(key)}] must be one of ${EFFECTS.join(", ")}, got ${JSON.stringify(effect)}.`,
      );
    return effect;
  };
  let seq = 0;
  const row = (key: string, status: StepRow["status"], value: string | null): StepRow => ({
    runId,
    seq: ++seq,
    attempt: 1,
    key,
    name: key.replace(/#\d+$/, ""),
    status,
    effect: effectOf(key),
    idempotencyKey: `${runId}:${key}`,
    value,
    error: null,
    version,
    intendedAt: now + seq,
    endedAt: status === "intended" ? null : now + seq,
    calls: status === "intended" ? 0 : 1,
    resolution: inputOf(key),
    usage: null,
    position: seq - 1,
  });
  for (const [key, value] of Object.entries(earlier.steps ?? {})) {
    await store.writeIntent(
      lease,
      row(key, "succeeded", encodeValue(value, `The seeded value of step ${JSON.stringify(key)}`, { maxBytes: Number.MAX_SAFE_INTEGER })),
    );
  }
  for (const key of earlier.intended ?? []) await store.writeIntent(lease, row(key, "intended", null));
  if ((earlier.intended ?? []).length === 0) {
    const error = JSON.stringify({ name: "Error", message: "attempt 1 (seeded) failed" });
    await store.endAttempt(lease, { attempt: 1, ending: "failed", endedAt: now + seq + 1, error, run: { status: "failed", error, updatedAt: now + seq + 1 } });
  }
}
