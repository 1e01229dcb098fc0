import fs from "node:fs";
import { defineConfig } from "tsup";

// One entry per package export; test/package/exports.test.ts checks the two agree.
export const entries = {
  index: "src/entries/index.ts",
  sqlite: "src/entries/sqlite.ts",
  postgres: "src/entries/postgres.ts",
  memory: "src/entries/memory.ts",
  testing: "src/entries/testing.ts",
  agents: "src/entries/agents.ts",
  jsonl: "src/entries/jsonl.ts",
};

// Bins: built with the entries (sharing their chunks) but not exported; the source starts with
// a #! line, which esbuild keeps and tsup turns into an executable file.
export const bins = {
  cli: "src/cli/main.ts",
};

export default defineConfig({
  entry: { ...entries, ...bins },
  format: ["esm", "cjs"],
  dts: { entry: entries },
  // Shared chunks in both formats, so an error class or the process-wide attempt
  // registry is one object whichever entries an app imports.
  splitting: true,
  sourcemap: true,
  clean: true,
  target: "node20",
  platform: "node",
  // import.meta.url in the CommonJS twin too (engine/load-tracing.ts resolves an optional peer from it).
  shims: true,
  external: ["better-sqlite3", "pg", "proper-lockfile"],
  // The command is an ES module (package.json's bin): its CommonJS twin, made because the
  // entries need both formats, is never run, so it is not shipped.
  onSuccess: async () => {
    for (const file of ["dist/cli.cjs", "dist/cli.cjs.map"]) fs.rmSync(file, { force: true });
  },
});
