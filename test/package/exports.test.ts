/**
 * The package.json `exports` map, the tsup entries and dist/ agree: every entry tsup builds is
 * exported, every export is built, and every file an export names exists after the build
 * (the npm `pretest` script builds; run `npm run build` first when calling vitest directly).
 */

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { entries } from "../../tsup.config.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

type Leaf = { types: string; default: string };
type Conditions = { import: Leaf; require: Leaf };

const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
  type?: string;
  main?: string;
  module?: string;
  types?: string;
  files?: string[];
  exports: Record<string, Conditions | string>;
};

/** tsup entry name → export subpath: index → ".", name → "./name". */
function subpathOf(entry: string): string {
  return entry === "index" ? "." : `./${entry}`;
}

const entryNames = Object.keys(entries);
const codeExports = Object.entries(pkg.exports).filter(([key]) => key !== "./package.json");

/** Every [subpath, condition, kind, file] an export names. */
const leaves: Array<[string, "import" | "require", "types" | "default", string]> = codeExports.flatMap(([key, value]) => {
  if (typeof value !== "object" || value === null) return [[key, "import", "default", String(value)]];
  return (["import", "require"] as const).flatMap((condition) =>
    (["types", "default"] as const).map(
      (kind) => [key, condition, kind, value[condition]?.[kind]] as [string, "import" | "require", "types" | "default", string],
    ),
  );
});

describe("package.json exports", () => {
  it("has exactly the expected subpaths", () => {
    expect(Object.keys(pkg.exports).sort()).toEqual([".", "./agents", "./jsonl", "./memory", "./package.json", "./postgres", "./sqlite", "./testing"]);
    expect(pkg.exports["./package.json"]).toBe("./package.json");
  });

  it("agrees with the tsup entries, one export per entry and one entry per export", () => {
    expect(entryNames.map(subpathOf).sort()).toEqual(codeExports.map(([key]) => key).sort());
    // Each entry's source file exists (a renamed file would otherwise build nothing).
    for (const source of Object.values(entries)) expect(fs.existsSync(path.join(ROOT, source)), source).toBe(true);
  });

  it("names, for each entry, the files tsup writes for it: import/require × types/default", () => {
    // package.json has "type": "module", so tsup writes ESM as .js/.d.ts and CJS as .cjs/.d.cts.
    expect(pkg.type).toBe("module");
    for (const name of entryNames) {
      const value = pkg.exports[subpathOf(name)];
      expect(value, subpathOf(name)).toEqual({
        import: { types: `./dist/${name}.d.ts`, default: `./dist/${name}.js` },
        require: { types: `./dist/${name}.d.cts`, default: `./dist/${name}.cjs` },
      });
      // "types" must come before "default": conditions match in key order.
      const conditions = value as Conditions;
      expect(Object.keys(conditions.import)).toEqual(["types", "default"]);
      expect(Object.keys(conditions.require)).toEqual(["types", "default"]);
    }
  });

  it.each(leaves)("%s %s %s: %s exists after the build", (_key, _condition, _kind, file) => {
    expect(typeof file).toBe("string");
    expect(file.startsWith("./dist/"), file).toBe(true);
    const full = path.join(ROOT, file);
    expect(fs.existsSync(full), `${file} is missing; run npm run build`).toBe(true);
    expect(fs.statSync(full).size).toBeGreaterThan(0);
  });

  it("has top-level main/module/types for old resolvers, pointing at the root entry's files", () => {
    const root = pkg.exports["."] as Conditions;
    expect(pkg.main).toBe(root.require.default);
    expect(pkg.module).toBe(root.import.default);
    expect(pkg.types).toBe(root.import.types);
    for (const file of [pkg.main, pkg.module, pkg.types]) expect(fs.existsSync(path.join(ROOT, file!)), file).toBe(true);
  });

  it("publishes dist: `files` includes it", () => {
    expect(Array.isArray(pkg.files)).toBe(true);
    const files = (pkg.files ?? []).map((entry) => entry.replace(/^\.\//, "").replace(/\/$/, ""));
    expect(files).toContain("dist");
  });
});
