// docs/architecture.md names modules and functions; this keeps it true as the code moves.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const doc = fs.readFileSync(path.join(ROOT, "docs/architecture.md"), "utf8");

function files(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : [path.relative(ROOT, path.join(dir, e.name))]));
}
const all = [...files(path.join(ROOT, "src")), ...files(path.join(ROOT, "test")), ...fs.readdirSync(ROOT)];
const source = files(path.join(ROOT, "src"))
  .map((f) => fs.readFileSync(path.join(ROOT, f), "utf8"))
  .join("\n");

describe("docs/architecture.md", () => {
  it("every file it names exists", () => {
    const named = [...new Set([...doc.matchAll(/([\w./-]+\.ts)\b/g)].map((m) => m[1]!))];
    expect(named.length).toBeGreaterThan(20);
    const missing = named.filter((name) => !all.some((f) => f === name || f.endsWith(`/${name}`)));
    expect(missing).toEqual([]);
  });

  it("every folder of src/ is in its layer table, and every folder it lists exists", () => {
    const folders = fs
      .readdirSync(path.join(ROOT, "src"), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    const listed = [...doc.matchAll(/\| \d+ \| ([^|]+) \|/g)].flatMap((m) => [...m[1]!.matchAll(/`(\w+)\/`/g)].map((f) => f[1]!));
    expect([...listed].sort()).toEqual([...folders].sort());
  });

  it("every function it names in the step's path is defined", () => {
    const names = [
      "runStep",
      "enter",
      "planStep",
      "carryOut",
      "resolveUnknownOutcome",
      "start",
      "callOnce",
      "callAgain",
      "recordValue",
      "enterWait",
      "writeIntent",
      "writeOutcome",
      "writeOutcomeLater",
      "settle",
      "contextFor",
      "decideClaim",
      "judgeOwner",
      "describeStore",
    ];
    for (const name of names) expect(doc, `${name} in the doc`).toContain(`\`${name}\``);
    const undefinedNames = names.filter((name) => !new RegExp(`function ${name}\\b`).test(source));
    expect(undefinedNames).toEqual([]);
  });
});
