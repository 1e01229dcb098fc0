// docs/waiting.md and docs/api.md against the code: engine.send's documented signature (its
// options and what it resolves with), engine.work's documented options, what a worker picks up,
// and the kinds of wait a `waiting` run may be parked on.
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { SEND_KEYS, WORK_KEYS } from "../../src/engine/api.js";
import type { WaitingFor } from "../../src/steps/waits.js";

const read = (name: string) => fs.readFileSync(fileURLToPath(new URL(`../../docs/${name}`, import.meta.url)), "utf8");
const waiting = read("waiting.md");
const api = read("api.md");

/** The text of a `## heading` section, up to the next level-2 heading. */
function section(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  expect(start, `no "## ${heading}" section`).toBeGreaterThanOrEqual(0);
  const end = markdown.indexOf("\n## ", start + 1);
  return markdown.slice(start, end === -1 ? undefined : end);
}

/** The option names of the first `| Option | … |` table in the text. */
function optionTable(text: string): string[] {
  const table = text.slice(text.indexOf("| Option |"));
  const rows: string[] = [];
  for (const line of table.split("\n").slice(2)) {
    const match = /^\| `(\w+)` \|/.exec(line);
    if (!match) break;
    rows.push(match[1]!);
  }
  return rows;
}

/**
 * Every kind of wait, with the words that name it in the docs. A Record over WaitingFor's kinds:
 * a kind added to the code and not here fails to compile.
 */
const KINDS: Record<WaitingFor["kind"], { waitsAt: string; pickedUp: RegExp }> = {
  event: { waitsAt: "ctx.waitForEvent", pickedUp: /event arrived/ },
  sleep: { waitsAt: "ctx.sleep", pickedUp: /sleep/ },
  approval: { waitsAt: "approval: true", pickedUp: /approval was given/ },
  child: { waitsAt: "ctx.child", pickedUp: /child run/ },
  turn: { waitsAt: "its turn", pickedUp: /its turn/ },
  budget: { waitsAt: "budget", pickedUp: /budget was raised/ },
};

describe("docs/waiting.md's engine.send", () => {
  const block = /```ts\n(engine\.send\([^\n]*)\n```/.exec(section(waiting, "engine.send"))?.[1] ?? "";

  it("gives the options send takes", () => {
    const options = /options\?: \{([^}]*)\}/.exec(block)?.[1] ?? "";
    const documented = [...options.matchAll(/(\w+)\?:/g)].map((m) => m[1]);
    expect(documented.sort()).toEqual(Object.keys(SEND_KEYS).sort());
  });

  it("gives what send resolves with: the fields of a real delivery", async () => {
    const parked = defineWorkflow({ name: "doc-send", run: (ctx) => ctx.waitForEvent("go") });
    const engine = createEngine({ store: memoryStore() });
    await engine.start(parked, undefined, { id: "s" });
    const delivery = await engine.send("s", "go", 1, { key: "k" });
    await engine.close();
    const resolves = /\): Promise<\{ ([^}]*) \}>$/.exec(block)?.[1] ?? "";
    expect(resolves.split(/,\s*/).sort()).toEqual(Object.keys(delivery).sort());
  });
});

describe("engine.work's documented options", () => {
  it("docs/waiting.md's table lists every option work() accepts, and no other", () => {
    expect(optionTable(section(waiting, "The worker: engine.work")).sort()).toEqual(Object.keys(WORK_KEYS).sort());
  });

  it("docs/api.md's table too", () => {
    expect(optionTable(section(api, "engine.work")).sort()).toEqual(Object.keys(WORK_KEYS).sort());
  });
});

describe("what a worker picks up", () => {
  const list = (() => {
    const text = section(waiting, "The worker: engine.work");
    const start = text.indexOf("**What it picks up.**");
    // The sentence that opens it and its bullets, up to the paragraph after them.
    const end = /\n\n(?!- )/g;
    end.lastIndex = text.indexOf("\n\n- ", start) + 2;
    return text.slice(start, end.exec(text)?.index);
  })();

  it.each(Object.entries(KINDS))("docs/waiting.md's list names runs parked on a wait of kind %s", (_kind, { pickedUp }) => {
    expect(list).toMatch(pickedUp);
  });

  it("and runs past their deadline, and interrupted runs with autoResume", () => {
    expect(list).toMatch(/deadline/);
    expect(list).toMatch(/autoResume/);
  });
});

describe("docs/api.md's waiting status", () => {
  const resultShape = /waitingFor\?: \{ kind: ([^;]*);/.exec(section(api, "What start and continue resolve with"))?.[1] ?? "";
  const statusRow = /^\| `waiting` \|.*$/m.exec(api)?.[0] ?? "";

  it("the result's waitingFor.kind is every kind of wait", () => {
    const kinds = [...resultShape.matchAll(/"(\w+)"/g)].map((m) => m[1]);
    expect(kinds.sort()).toEqual(Object.keys(KINDS).sort());
  });

  it.each(Object.entries(KINDS))("the `waiting` status names where a run parks for kind %s", (_kind, { waitsAt }) => {
    expect(statusRow).toContain(waitsAt);
  });
});
