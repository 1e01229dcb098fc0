// JSONL store files are owner-only too, with one warning for a store others can read.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { jsonlStore } from "../../src/entries/jsonl.js";
import { tmpDir } from "../helpers/tmp.js";

const hello = defineWorkflow({
  name: "hello",
  async run(ctx) {
    return ctx.step("a", async () => "hi");
  },
});

describe("jsonl store files are owner-only", () => {
  it("the folder is 0700 with a .gitignore, the journal 0600; a journal others can read is reported once", async () => {
    const dir = path.join(tmpDir(), "journal");
    const file = path.join(dir, "steplog.jsonl");
    const engine = createEngine({ store: jsonlStore({ path: file }), workflows: [hello] });
    await engine.start(hello, undefined, { id: "r" });
    await engine.close();
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(path.join(dir, ".gitignore"), "utf8")).toBe("*\n");
    const warnings: string[] = [];
    const quiet = createEngine({ store: jsonlStore({ path: file, onWarning: (m) => warnings.push(m) }) });
    await quiet.get("r");
    await quiet.close();
    expect(warnings).toEqual([]);
    fs.chmodSync(file, 0o644);
    const loud = createEngine({ store: jsonlStore({ path: file, onWarning: (m) => warnings.push(m) }) });
    await loud.get("r");
    await loud.list();
    await loud.close();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/can be read by other users \(mode 644\).*chmod 600/);
  });
});
