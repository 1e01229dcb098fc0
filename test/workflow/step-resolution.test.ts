// A step row's resolution text: one module reads and writes it (src/workflow/step-resolution.ts).
import { describe, expect, it } from "vitest";
import { formatResolution, isCompensation, parseResolution, shownResolution, withResolution } from "../../src/workflow/step-resolution.js";

describe("step resolutions", () => {
  it("round-trips every shape the engine writes", () => {
    const shapes = [
      { policy: "query", found: "done", attempt: 2 },
      { policy: "redrive", found: "unknown", attempt: 3 },
      { policy: "compensate", found: "unknown", attempt: 2, compensation: true },
      { policy: "compensate", found: "saga", attempt: 4, compensation: true },
      { policy: "escalate", found: "done (resolved by a person)", by: "ana", resolvedAt: "2030-01-01T00:00:00.000Z" },
      { policy: "supplied" },
      { wait: { kind: "event", step: "approval", event: "approved", until: 5 } },
      { wait: { kind: "sleep", step: "nap" }, thrown: { attempt: 1, entered: 3 } },
    ] as const;
    for (const shape of shapes) expect(parseResolution(formatResolution(shape))).toEqual(shape);
  });

  it("none is null as text and {} as a value; a text that is not an object reads as none", () => {
    expect(formatResolution({})).toBeNull();
    expect(parseResolution(null)).toEqual({});
    expect(parseResolution("[1]")).toEqual({});
    expect(parseResolution("3")).toEqual({});
  });

  it("withResolution lays changes over what is there (a failed wait keeps what it waited for)", () => {
    const wait = formatResolution({ wait: { kind: "event", step: "w", event: "e" } });
    expect(parseResolution(withResolution(wait, { thrown: { attempt: 2, entered: 1 } }))).toEqual({
      wait: { kind: "event", step: "w", event: "e" },
      thrown: { attempt: 2, entered: 1 },
    });
    expect(parseResolution(withResolution(null, { policy: "supplied" }))).toEqual({ policy: "supplied" });
  });

  it("a compensation row is told by its mark, not by the text's spelling", () => {
    expect(isCompensation({ resolution: '{ "compensation" : true, "policy": "compensate" }' })).toBe(true);
    expect(isCompensation({ resolution: '{"policy":"compensate","found":"unknown"}' })).toBe(false);
    expect(isCompensation({ resolution: '{"note":"\\"compensation\\":true"}' })).toBe(false);
    expect(isCompensation({ resolution: null })).toBe(false);
  });

  it("a run's view leaves out the thrown mark (it shows `handled` instead) and keeps the rest", () => {
    expect(shownResolution(formatResolution({ thrown: { attempt: 1, entered: 2 } }))).toBeUndefined();
    expect(shownResolution(formatResolution({ wait: { kind: "sleep", step: "n" }, thrown: { attempt: 1, entered: 2 } }))).toEqual({
      wait: { kind: "sleep", step: "n" },
    });
    expect(shownResolution(null)).toBeUndefined();
  });
});
