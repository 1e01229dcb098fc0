// The version rule: which recorded versions count as a breaking change from the code's.
import { describe, expect, it } from "vitest";
import { isBreakingChange } from "../../src/workflow/versions.js";

describe("isBreakingChange", () => {
  it("semver: another major is breaking, and another minor under 0.x; patches, pre-releases and a leading v are not", () => {
    expect(isBreakingChange("1.2.3", "2.0.0")).toBe(true);
    expect(isBreakingChange("1.2.3", "1.9.0")).toBe(false);
    expect(isBreakingChange("v1.2.3", "1.2.4-beta.1+build.5")).toBe(false);
    expect(isBreakingChange("0.3.0", "0.4.0")).toBe(true);
    expect(isBreakingChange("0.3.0", "0.3.7")).toBe(false);
    expect(isBreakingChange("2.1", "2.4")).toBe(false);
  });

  it("anything that is not semver (a commit hash, a date, a label) is breaking whenever it differs", () => {
    expect(isBreakingChange("3f2a91c", "3e07b44")).toBe(true);
    expect(isBreakingChange("a3f2a91", "b3e07b4")).toBe(true);
    expect(isBreakingChange("2024-01-15", "2024-06-30")).toBe(true);
    expect(isBreakingChange("v1-old-prompt", "v1-new-prompt")).toBe(true);
    expect(isBreakingChange("3f2a91c", "3f2a91c")).toBe(false);
    expect(isBreakingChange(null, "3f2a91c")).toBe(false);
  });
});
