import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Crash tests spawn child processes; two cores are shared between them and the suite.
    pool: "forks",
    maxWorkers: 2,
  },
});
