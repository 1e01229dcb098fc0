// One job per file: a file in src/ that grows past 400 lines is holding more than one, and is
// split by meaning (docs/architecture.md maps the files).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));
const LIMIT = 400;

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? sourceFiles(path.join(dir, entry.name)) : entry.name.endsWith(".ts") ? [path.join(dir, entry.name)] : []));
}

it(`no file in src/ is over ${LIMIT} lines`, () => {
  const files = sourceFiles(SRC);
  expect(files.length).toBeGreaterThan(100);
  const long = files
    .map((file) => ({ file: path.relative(SRC, file), lines: fs.readFileSync(file, "utf8").split("\n").length - 1 }))
    .filter((f) => f.lines > LIMIT)
    .map((f) => `${f.file}: ${f.lines} lines`);
  expect(long).toEqual([]);
});
