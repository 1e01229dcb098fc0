// The planner as a table: every rule of what a continue does with a step it enters, read from
// the attempt's state and the step's record alone, without a store or a workflow.
import { describe, expect, it } from "vitest";
import { isSettled, planStep, type PlanState, type PlanStep } from "../../src/steps/plan.js";
import type { Effect, StepRow, StepStatus } from "../../src/store/types.js";

const ATTEMPT = 3;

function row(key: string, status: StepStatus, over: Partial<StepRow> = {}): StepRow {
  return {
    runId: "run-1",
    seq: 1,
    attempt: 1,
    key,
    name: key,
    status,
    effect: "idempotent",
    idempotencyKey: `run-1:${key}`,
    value: status === "succeeded" ? "1" : null,
    error: status === "failed" ? '{"message":"no"}' : null,
    version: null,
    intendedAt: 1,
    endedAt: status === "intended" ? null : 2,
    calls: 1,
    resolution: null,
    usage: null,
    position: 0,
    ...over,
  };
}

function state(over: Partial<PlanState> = {}): PlanState {
  return {
    runId: "run-1",
    mode: "run",
    attempt: ATTEMPT,
    started: false,
    siblingsOf: undefined,
    newestReused: 0,
    fromStep: undefined,
    redo: new Set(),
    reuse: new Set(),
    carriedStart: undefined,
    handled: new Set(),
    values: undefined,
    notReached: () => ["later"],
    ...over,
  };
}

function step(key: string, record: StepRow | undefined, over: Partial<PlanStep> = {}): PlanStep {
  return { kind: "step", key, record, effect: record?.effect, launchedBeside: undefined, ...over };
}

type Expected = { kind: string; code?: string; ending?: string; started: boolean; siblings: "open" | "close" | "keep" };

function plan(s: PlanState, p: PlanStep): Expected {
  const { decision, started, siblings } = planStep(s, p);
  const out: Expected = { kind: decision.kind, started, siblings };
  if (decision.kind === "stop") {
    out.code = decision.error.code;
    out.ending = decision.ending;
  }
  return out;
}

const irreversible = (status: StepStatus, over: Partial<StepRow> = {}) => row("charge", status, { effect: "irreversible" as Effect, ...over });

describe("planStep: before the start point", () => {
  const cases: Array<[string, PlanState, PlanStep, Expected]> = [
    ["a success is handed back", state(), step("a", row("a", "succeeded")), { kind: "hand-back", started: false, siblings: "keep" }],
    [
      "a handled failure is handed back (thrown again)",
      state({ handled: new Set(["a"]) }),
      step("a", row("a", "failed")),
      { kind: "hand-back", started: false, siblings: "keep" },
    ],
    ["an unhandled failure is the start point and runs", state(), step("a", row("a", "failed")), { kind: "run", started: true, siblings: "open" }],
    ["a step with no record is the start point and runs", state(), step("a", undefined), { kind: "run", started: true, siblings: "open" }],
    [
      "a cut-off row of an earlier attempt is the start point, resolved by policy",
      state(),
      step("a", row("a", "intended")),
      { kind: "resolve", started: true, siblings: "open" },
    ],
    [
      "a step named in redo is the start point even though it succeeded",
      state({ redo: new Set(["a"]) }),
      step("a", row("a", "succeeded")),
      { kind: "run", started: true, siblings: "open" },
    ],
    [
      "the step the last attempt stopped before (REDO_IRREVERSIBLE) is the start point",
      state({ carriedStart: "a" }),
      step("a", row("a", "succeeded")),
      { kind: "run", started: true, siblings: "open" },
    ],
    [
      "with fromStep, a success before it is handed back",
      state({ fromStep: "b" }),
      step("a", row("a", "succeeded")),
      { kind: "hand-back", started: false, siblings: "keep" },
    ],
    [
      "with fromStep, a step before it with no record and no value stops the attempt: VALUE_MISSING",
      state({ fromStep: "b" }),
      step("a", undefined),
      { kind: "stop", code: "VALUE_MISSING", ending: "stopped", started: false, siblings: "keep" },
    ],
    [
      "with fromStep, a failed step before it stops the attempt too",
      state({ fromStep: "b" }),
      step("a", row("a", "failed")),
      { kind: "stop", code: "VALUE_MISSING", ending: "stopped", started: false, siblings: "keep" },
    ],
    [
      "with fromStep, a value given on the continue is supplied",
      state({ fromStep: "b", values: { a: 7 } }),
      step("a", undefined),
      { kind: "supply", started: false, siblings: "keep" },
    ],
    [
      "with fromStep, a recorded success wins over a value given for it",
      state({ fromStep: "b", values: { a: 7 } }),
      step("a", row("a", "succeeded")),
      { kind: "hand-back", started: false, siblings: "keep" },
    ],
    [
      "fromStep's step starts there and runs, but does not open the sibling window",
      state({ fromStep: "a" }),
      step("a", row("a", "succeeded")),
      { kind: "run", started: true, siblings: "keep" },
    ],
  ];
  it.each(cases)("%s", (_name, s, p, expected) => {
    expect(plan(s, p)).toEqual(expected);
  });
});

describe("planStep: from the start point", () => {
  const started = (over: Partial<PlanState> = {}) => state({ started: true, ...over });
  const cases: Array<[string, PlanState, PlanStep, Expected]> = [
    ["a success after the start point runs again", started(), step("a", row("a", "succeeded")), { kind: "run", started: true, siblings: "keep" }],
    ["a step with no record runs", started(), step("a", undefined), { kind: "run", started: true, siblings: "keep" }],
    [
      "a succeeded irreversible step stops the attempt: REDO_IRREVERSIBLE",
      started(),
      step("charge", irreversible("succeeded")),
      { kind: "stop", code: "REDO_IRREVERSIBLE", ending: "stopped", started: true, siblings: "keep" },
    ],
    [
      "a step declared irreversible now, recorded as idempotent, also needs consent",
      started(),
      step("a", row("a", "succeeded"), { effect: "irreversible" }),
      { kind: "stop", code: "REDO_IRREVERSIBLE", ending: "stopped", started: true, siblings: "keep" },
    ],
    [
      "reuse hands a succeeded irreversible step back",
      started({ reuse: new Set(["charge"]) }),
      step("charge", irreversible("succeeded")),
      { kind: "hand-back", started: true, siblings: "keep" },
    ],
    [
      "redo runs a succeeded irreversible step",
      started({ redo: new Set(["charge"]) }),
      step("charge", irreversible("succeeded")),
      { kind: "run", started: true, siblings: "keep" },
    ],
    [
      "fromStep naming the irreversible step itself is consent",
      state({ fromStep: "charge" }),
      step("charge", irreversible("succeeded")),
      { kind: "run", started: true, siblings: "keep" },
    ],
    [
      "a failed irreversible step runs (it has no effect to protect)",
      started(),
      step("charge", irreversible("failed")),
      { kind: "run", started: true, siblings: "keep" },
    ],
    [
      "an unresolved escalation stays in force",
      started(),
      step("a", row("a", "escalated")),
      { kind: "stop", code: "RUN_ESCALATED", ending: "escalated", started: true, siblings: "keep" },
    ],
    [
      "a cut-off row of another attempt is resolved by policy",
      started(),
      step("a", row("a", "intended")),
      { kind: "resolve", started: true, siblings: "keep" },
    ],
    [
      "this attempt's own open intent is run (a retry within the attempt)",
      started(),
      step("a", row("a", "intended", { attempt: ATTEMPT })),
      { kind: "run", started: true, siblings: "keep" },
    ],
  ];
  it.each(cases)("%s", (_name, s, p, expected) => {
    expect(plan(s, p)).toEqual(expected);
  });
});

describe("planStep: steps launched beside the start point", () => {
  const window = (over: Partial<PlanState> = {}) => state({ started: true, siblingsOf: "start", newestReused: 2, ...over });
  const cases: Array<[string, PlanState, PlanStep, Expected]> = [
    [
      "a success no older than what was handed back before is handed back",
      window(),
      step("b", row("b", "succeeded", { attempt: 2 })),
      { kind: "hand-back", started: true, siblings: "keep" },
    ],
    [
      "a success older than what was handed back runs, and closes the window",
      window(),
      step("b", row("b", "succeeded", { attempt: 1 })),
      { kind: "run", started: true, siblings: "close" },
    ],
    ["a step with no record runs and closes the window", window(), step("b", undefined), { kind: "run", started: true, siblings: "close" }],
    [
      "a cut-off row in the window is resolved, and closes it",
      window(),
      step("b", row("b", "intended", { attempt: 2 })),
      { kind: "resolve", started: true, siblings: "close" },
    ],
    [
      "a handled failure in the window is handed back",
      window({ handled: new Set(["b"]) }),
      step("b", row("b", "failed", { attempt: 2 })),
      { kind: "hand-back", started: true, siblings: "keep" },
    ],
    [
      "an agent's tool call launched beside, run later, uses the bound of its launch",
      started({ newestReused: 5 }),
      step("b", row("b", "succeeded", { attempt: 2 }), { launchedBeside: 2 }),
      { kind: "hand-back", started: true, siblings: "keep" },
    ],
    [
      "an irreversible success in the window is handed back without consent (it was not redone)",
      window(),
      step("charge", irreversible("succeeded", { attempt: 2 })),
      { kind: "hand-back", started: true, siblings: "keep" },
    ],
  ];
  it.each(cases)("%s", (_name, s, p, expected) => {
    expect(plan(s, p)).toEqual(expected);
  });

  function started(over: Partial<PlanState> = {}) {
    return state({ started: true, ...over });
  }
});

describe("planStep: waits, sleeps and child runs", () => {
  const wait = (key: string, status: StepStatus, over: Partial<StepRow> = {}) =>
    row(key, status, {
      effect: "read",
      resolution: status === "intended" ? JSON.stringify({ wait: { kind: "event", step: key, event: key } }) : null,
      ...over,
    });
  const event = (key: string, record: StepRow | undefined) => step(key, record, { kind: "event" });
  const sleep = (key: string, record: StepRow | undefined) => step(key, record, { kind: "sleep" });
  const child = (key: string, record: StepRow | undefined) => step(key, record, { kind: "child" });
  const started = (over: Partial<PlanState> = {}) => state({ started: true, ...over });
  const cases: Array<[string, PlanState, PlanStep, Expected]> = [
    [
      "before the start point, a received event is handed back",
      state(),
      event("e", wait("e", "succeeded")),
      { kind: "hand-back", started: false, siblings: "keep" },
    ],
    [
      "before the start point, a handled timeout is handed back (thrown again)",
      state({ handled: new Set(["e"]) }),
      event("e", wait("e", "failed")),
      { kind: "hand-back", started: false, siblings: "keep" },
    ],
    [
      "WAITS_IGNORE_REDO: a wait named in redo is handed back, not a start point",
      state({ redo: new Set(["e"]) }),
      event("e", wait("e", "succeeded")),
      { kind: "hand-back", started: false, siblings: "keep" },
    ],
    [
      "the same record of a step named in redo is the start point (the rule the waits do not follow)",
      state({ redo: new Set(["e"]) }),
      step("e", wait("e", "succeeded")),
      { kind: "run", started: true, siblings: "open" },
    ],
    [
      "a wait with no record is the start point: a new wait, and it opens no sibling window",
      state(),
      event("e", undefined),
      { kind: "run", started: true, siblings: "close" },
    ],
    [
      "a wait still open from an earlier attempt is the start point and is reopened",
      state(),
      event("e", wait("e", "intended")),
      { kind: "reopen", started: true, siblings: "close" },
    ],
    [
      "a sleep still open is reopened after the start point",
      started(),
      sleep("s", wait("s", "intended")),
      { kind: "reopen", started: true, siblings: "close" },
    ],
    [
      "a child's open row is reopened (the same child is waited for)",
      started(),
      child("c", wait("c", "intended", { resolution: JSON.stringify({ wait: { kind: "child", step: "c", child: "run-1/c" } }) })),
      { kind: "reopen", started: true, siblings: "close" },
    ],
    [
      "an intended row that is no wait (the code changed a step into a wait) begins a new wait",
      started(),
      event("e", row("e", "intended")),
      { kind: "run", started: true, siblings: "close" },
    ],
    [
      "a received event after the start point is waited for again",
      started(),
      event("e", wait("e", "succeeded")),
      { kind: "run", started: true, siblings: "close" },
    ],
    [
      "an escalated row under a wait's key does not stop a wait (no policy applies to it)",
      started(),
      child("c", wait("c", "escalated")),
      { kind: "run", started: true, siblings: "close" },
    ],
    [
      "a wait in the sibling window runs anew and closes it (a step there would be handed back)",
      started({ siblingsOf: "start", newestReused: 1 }),
      event("e", wait("e", "succeeded", { attempt: 2 })),
      { kind: "run", started: true, siblings: "close" },
    ],
    [
      "with fromStep, a wait before it with no record stops the attempt: VALUE_MISSING",
      state({ fromStep: "b" }),
      sleep("s", undefined),
      { kind: "stop", code: "VALUE_MISSING", ending: "stopped", started: false, siblings: "keep" },
    ],
    [
      "with fromStep, a value given for a wait before it is supplied",
      state({ fromStep: "b", values: { e: { ok: true } } }),
      event("e", undefined),
      { kind: "supply", started: false, siblings: "keep" },
    ],
    [
      "fromStep naming a received event waits again",
      state({ fromStep: "e" }),
      event("e", wait("e", "succeeded")),
      { kind: "run", started: true, siblings: "close" },
    ],
    [
      "the step the last attempt stopped before is a start point for a wait's key too",
      state({ carriedStart: "c" }),
      child("c", wait("c", "succeeded")),
      { kind: "run", started: true, siblings: "close" },
    ],
  ];
  it.each(cases)("%s", (_name, s, p, expected) => {
    expect(plan(s, p)).toEqual(expected);
  });
});

describe("planStep: a saga's replay", () => {
  const saga = (over: Partial<PlanState> = {}) => state({ mode: "compensate", ...over });
  const cases: Array<[string, PlanState, PlanStep, Expected]> = [
    ["a step is replayed from its records", saga(), step("a", row("a", "succeeded")), { kind: "replay", started: false, siblings: "keep" }],
    ["a step with no record is replayed too (the replay ends there)", saga(), step("a", undefined), { kind: "replay", started: false, siblings: "keep" }],
    ["a wait is replayed", saga(), step("e", row("e", "succeeded"), { kind: "event" }), { kind: "replay", started: false, siblings: "keep" }],
    ["a sleep is replayed", saga(), step("s", undefined, { kind: "sleep" }), { kind: "replay", started: false, siblings: "keep" }],
    ["a child is replayed", saga(), step("c", row("c", "succeeded"), { kind: "child" }), { kind: "replay", started: false, siblings: "keep" }],
    [
      "a succeeded irreversible step is replayed, never stopped for consent",
      saga({ started: true }),
      step("charge", irreversible("succeeded")),
      { kind: "replay", started: true, siblings: "keep" },
    ],
  ];
  it.each(cases)("%s", (_name, s, p, expected) => {
    expect(plan(s, p)).toEqual(expected);
  });
});

describe("planStep is pure", () => {
  it("gives the same plan for the same input and changes nothing it is given", () => {
    const s = state({ redo: new Set(["a"]), values: { x: 1 } });
    const p = step("a", row("a", "succeeded"));
    const before = JSON.stringify({ ...s, redo: [...s.redo] }) + JSON.stringify(p);
    const first = planStep(s, p);
    const second = planStep(s, p);
    expect(second).toEqual(first);
    expect(JSON.stringify({ ...s, redo: [...s.redo] }) + JSON.stringify(p)).toBe(before);
  });

  it("asks for the keys not reached only when it stops for a missing value", () => {
    let asked = 0;
    const s = state({ fromStep: "b", notReached: () => (asked++, ["c"]) });
    planStep(s, step("a", row("a", "succeeded")));
    expect(asked).toBe(0);
    const stop = planStep(s, step("a", undefined));
    expect(asked).toBe(1);
    expect(stop.decision.kind === "stop" && stop.decision.error.message).toContain("c");
  });
});

describe("isSettled", () => {
  it("is a success, or a failure the workflow handled", () => {
    expect(isSettled(row("a", "succeeded"), new Set())).toBe(true);
    expect(isSettled(row("a", "failed"), new Set(["a"]))).toBe(true);
    expect(isSettled(row("a", "failed"), new Set())).toBe(false);
    expect(isSettled(row("a", "intended"), new Set(["a"]))).toBe(false);
    expect(isSettled(row("a", "escalated"), new Set())).toBe(false);
    expect(isSettled(undefined, new Set())).toBe(false);
  });
});

describe("planStep: a step whose input changed (its record was made for another input)", () => {
  const stop = { onChange: "stop" as const, given: '{"who":"bob"}', recorded: '{"who":"ann"}' };
  const redo = { ...stop, onChange: "redo" as const };
  const changed = (key: string, record: StepRow | undefined, change: PlanStep["inputChange"] = stop) => step(key, record, { inputChange: change });
  const cases: Array<[string, PlanState, PlanStep, Expected]> = [
    [
      "a success before the start point stops the attempt",
      state(),
      changed("a", row("a", "succeeded")),
      { kind: "stop", code: "STEP_INPUT_CHANGED", ending: "stopped", started: false, siblings: "keep" },
    ],
    [
      "a handled failure before the start point stops the attempt too",
      state({ handled: new Set(["a"]) }),
      changed("a", row("a", "failed")),
      { kind: "stop", code: "STEP_INPUT_CHANGED", ending: "stopped", started: false, siblings: "keep" },
    ],
    [
      "named in reuse: handed back",
      state({ reuse: new Set(["a"]) }),
      changed("a", row("a", "succeeded")),
      { kind: "hand-back", started: false, siblings: "keep" },
    ],
    [
      "named in redo: the start point, run",
      state({ redo: new Set(["a"]) }),
      changed("a", row("a", "succeeded")),
      { kind: "run", started: true, siblings: "open" },
    ],
    ['onInputChange "redo": the start point, run', state(), changed("a", row("a", "succeeded"), redo), { kind: "run", started: true, siblings: "open" }],
    [
      'onInputChange "redo" of a succeeded irreversible step: REDO_IRREVERSIBLE (consent still needed)',
      state(),
      changed("charge", irreversible("succeeded"), redo),
      { kind: "stop", code: "REDO_IRREVERSIBLE", ending: "stopped", started: true, siblings: "keep" },
    ],
    [
      "before fromStep: stops (the record is not handed back for another input)",
      state({ fromStep: "b" }),
      changed("a", row("a", "succeeded")),
      { kind: "stop", code: "STEP_INPUT_CHANGED", ending: "stopped", started: false, siblings: "keep" },
    ],
    [
      "a success after the start point runs again, as without an input",
      state({ started: true }),
      changed("a", row("a", "succeeded")),
      { kind: "run", started: true, siblings: "keep" },
    ],
    [
      "a cut-off row is resolved (by its policy for the recorded input; step-input.ts)",
      state(),
      changed("a", row("a", "intended")),
      { kind: "resolve", started: true, siblings: "open" },
    ],
    [
      "in the window of steps launched beside the start point: stops rather than hand back",
      state({ started: true, siblingsOf: "start", newestReused: 1 }),
      changed("b", row("b", "succeeded", { attempt: 2 })),
      { kind: "stop", code: "STEP_INPUT_CHANGED", ending: "stopped", started: true, siblings: "keep" },
    ],
    [
      "a wait is never compared (no input)",
      state(),
      { kind: "event", key: "e", record: row("e", "succeeded"), effect: "read", launchedBeside: undefined, inputChange: stop },
      { kind: "hand-back", started: false, siblings: "keep" },
    ],
  ];
  it.each(cases)("%s", (_name, s, p, expected) => {
    expect(plan(s, p)).toEqual(expected);
  });
});
