// The keys of an attempt's steps in flight: a multiset (a resolution and the run it leads to each
// hold the key), emptied and refilled on every step.
import { describe, expect, it } from "vitest";
import { InFlight } from "../../src/steps/attempt-ending.js";

describe("InFlight", () => {
  it("counts one entry per add and drops one per delete, in any order", () => {
    const f = new InFlight();
    expect(f.size).toBe(0);
    f.add("a");
    f.add("b");
    f.add("a");
    f.add("c");
    expect(f.size).toBe(4);
    expect(f.others("a").sort()).toEqual(["b", "c"]);
    f.delete("a");
    expect(f.size).toBe(3);
    expect(f.others("x").sort()).toEqual(["a", "b", "c"]);
    f.delete("a");
    expect(f.others("x").sort()).toEqual(["b", "c"]);
    f.delete("missing");
    expect(f.size).toBe(2);
    f.delete("c");
    f.delete("b");
    expect(f.size).toBe(0);
    expect(f.others("b")).toEqual([]);
  });

  it("is reused after it empties, as each step of a run adds and deletes its key", () => {
    const f = new InFlight();
    for (let i = 0; i < 3; i++) {
      f.add(`s${i}`);
      expect(f.size).toBe(1);
      expect(f.others("other")).toEqual([`s${i}`]);
      f.delete(`s${i}`);
      expect(f.size).toBe(0);
    }
    f.add("x");
    f.add("y");
    f.delete("x");
    expect(f.others("z")).toEqual(["y"]);
    f.add("x");
    expect(f.others("z").sort()).toEqual(["x", "y"]);
  });
});
