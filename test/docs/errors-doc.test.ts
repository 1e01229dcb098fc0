// docs/errors.md has one `## CODE` section per code in ERROR_CODES, in that order, and every
// error class steplog exports carries a code from that list.
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ERROR_CODES, SteplogError } from "../../src/base/errors.js";
import * as steplog from "../../src/entries/index.js";

const DOC = fileURLToPath(new URL("../../docs/errors.md", import.meta.url));

/** Every level-2 heading that looks like a code (capitals, digits and underscores). */
function codeHeadings(markdown: string): string[] {
  const headings: string[] = [];
  let fenced = false;
  for (const line of markdown.split(/\r?\n/)) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const match = /^##\s+`?([A-Z][A-Z0-9_]*)`?\s*$/.exec(line);
    if (match) headings.push(match[1]!);
  }
  return headings;
}

/**
 * A stand-in for any constructor argument: a string, a number, an array or an object, as the
 * constructor needs it. Read as a primitive it is 0 (so dates and lengths work); any property is
 * another stand-in; called, it returns another stand-in.
 */
function anything(): unknown {
  const target = function () {};
  const proxy: unknown = new Proxy(target, {
    get(_t, key) {
      if (key === Symbol.toPrimitive) return () => 0;
      if (key === Symbol.iterator) return function* () {};
      if (key === "then") return undefined;
      return proxy;
    },
    apply: () => proxy,
  });
  return proxy;
}

/** The error classes the package exports, other than SteplogError itself. */
type ErrorClass = new (...args: unknown[]) => SteplogError;
const errorClasses: Array<[string, ErrorClass]> = Object.entries(steplog as Record<string, unknown>)
  .filter(([, value]) => typeof value === "function" && value !== SteplogError && (value as { prototype: unknown }).prototype instanceof SteplogError)
  .map(([name, value]) => [name, value as ErrorClass]);

describe("docs/errors.md", () => {
  const headings = codeHeadings(fs.readFileSync(DOC, "utf8"));

  it("has a `## CODE` section for every code in ERROR_CODES", () => {
    const missing = ERROR_CODES.filter((code) => !headings.includes(code));
    expect(missing, `codes with no "## CODE" section in docs/errors.md`).toEqual([]);
  });

  it("has no section for a code that no longer exists, and none twice", () => {
    const unknown = headings.filter((code) => !(ERROR_CODES as readonly string[]).includes(code));
    expect(unknown, `sections in docs/errors.md for codes not in ERROR_CODES`).toEqual([]);
    const twice = headings.filter((code, i) => headings.indexOf(code) !== i);
    expect(twice, "codes with more than one section").toEqual([]);
  });

  it("lists the codes in the order of ERROR_CODES", () => {
    expect(headings).toEqual([...ERROR_CODES]);
  });
});

describe("error classes", () => {
  it("the package exports error classes", () => {
    expect(errorClasses.length).toBeGreaterThan(0);
  });

  it.each(errorClasses)("%s is constructed with a code in ERROR_CODES", (name, ErrorClass) => {
    const args = Array.from({ length: Math.max(ErrorClass.length, 4) }, anything);
    const error = new ErrorClass(...args);
    expect(error).toBeInstanceOf(SteplogError);
    expect(error).toBeInstanceOf(Error);
    expect(ERROR_CODES, `${name} has code ${String(error.code)}`).toContain(error.code);
    expect(typeof error.message).toBe("string");
  });
});
