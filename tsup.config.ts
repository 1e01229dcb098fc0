import { defineConfig } from "tsup";

// One entry per package export; test/package/exports.test.ts checks the two agree.
export const entries = {
  index: "src/index.ts",
  sqlite: "src/sqlite.ts",
  memory: "src/memory.ts",
  testing: "src/testing.ts",
};

export default defineConfig({
  entry: entries,
  format: ["esm", "cjs"],
  dts: true,
  // Shared chunks in both formats, so an error class or the process-wide attempt
  // registry is one object whichever entries an app imports.
  splitting: true,
  sourcemap: true,
  clean: true,
  target: "node20",
  platform: "node",
  external: ["better-sqlite3", "pg", "proper-lockfile"],
});
