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
