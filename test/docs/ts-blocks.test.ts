// Every ```ts block in README.md and docs/*.md, type-checked as a user's app would be (strict,
// ESM, NodeNext, @types/node) under TypeScript 5 and 7, against the built package (dist/; "steplog"
// resolves to this repo by a link in the scratch project's node_modules). Each block is its own
// module; the names fragments take as given are declared in doc-standins.ts.
//
// A comment on the line before a block says how to check it:
//   <!-- ts-check: in a function -->     the block is a function's body (it returns), so it is
//                                        checked inside one
//   <!-- ts-check: skip: <reason> -->    not checked, for the reason given (a type's shape, a
//                                        signature); counted, so no block is lost unnoticed
// (While any block has a syntax error, tsc reports only those: fix them first to see the rest.)
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { tmpDir } from "../helpers/tmp.js";
import { COMPILERS, typeCheck } from "../helpers/typescript.js";
import { STANDIN_GLOBALS, STANDIN_MODULES } from "./doc-standins.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DOCS = [
  "README.md",
  ...fs
    .readdirSync(path.join(ROOT, "docs"))
    .filter((file) => file.endsWith(".md"))
    .map((file) => `docs/${file}`),
];
const MARKER = /^<!-- ts-check: (.*?) -->$/;

interface Block {
  /** "docs/api.md:179": the doc and the line of the block's opening fence. */
  where: string;
  /** The file it is checked as, under the project's blocks/. */
  file: string;
  code: string;
  /** Lines put before the block's first line in its file (the function it is checked in). */
  offset: number;
  skip?: string;
}

function blocksOf(doc: string): Block[] {
  const lines = fs.readFileSync(path.join(ROOT, doc), "utf8").split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    // A block in a list item is indented, its fences too.
    const indent = /^( *)```ts$/.exec(lines[i]!)?.[1];
    if (indent === undefined) continue;
    const end = lines.indexOf(`${indent}\`\`\``, i + 1);
    const body = lines
      .slice(i + 1, end)
      .map((line) => line.slice(indent.length))
      .join("\n");
    const marker = MARKER.exec((lines[i - 1] ?? "").trim())?.[1];
    const where = `${doc}:${i + 1}`;
    const file = `${doc.replace(/\W/g, "_")}_${i + 1}.ts`;
    if (marker === undefined) blocks.push({ where, file, code: `${body}\nexport {};\n`, offset: 0 });
    else if (marker === "in a function") blocks.push({ where, file, code: `export async function fragment() {\n${body}\n}\n`, offset: 1 });
    else if (marker.startsWith("skip: ")) blocks.push({ where, file, code: "", offset: 0, skip: marker.slice("skip: ".length).trim() });
    else throw new Error(`${where}: unknown marker <!-- ts-check: ${marker} -->`);
    i = end;
  }
  return blocks;
}

const blocks = DOCS.flatMap(blocksOf);
const checked = blocks.filter((block) => block.skip === undefined);

let project = "";

beforeAll(() => {
  project = tmpDir("steplog-doc-blocks-");
  // The repo's packages (zod, vitest, the AI SDKs, @types/node), and steplog itself.
  fs.mkdirSync(path.join(project, "node_modules"));
  for (const name of fs.readdirSync(path.join(ROOT, "node_modules"))) {
    if (!name.startsWith(".")) fs.symlinkSync(path.join(ROOT, "node_modules", name), path.join(project, "node_modules", name), "dir");
  }
  fs.symlinkSync(ROOT, path.join(project, "node_modules", "steplog"), "dir");
  fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "doc-blocks", private: true, type: "module" }));
  fs.writeFileSync(path.join(project, "standins.d.ts"), STANDIN_GLOBALS);
  fs.mkdirSync(path.join(project, "blocks"));
  fs.mkdirSync(path.join(project, "src"));
  for (const [file, source] of Object.entries(STANDIN_MODULES)) fs.writeFileSync(path.join(project, file), source);
  for (const block of checked) fs.writeFileSync(path.join(project, "blocks", block.file), block.code);
  const compilerOptions = {
    module: "nodenext",
    moduleResolution: "nodenext",
    target: "es2022",
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ["node"],
  };
  fs.writeFileSync(path.join(project, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["standins.d.ts", "blocks", "src"] }, null, 2));
});

describe("the docs' TypeScript blocks", () => {
  it("are all found, and each one not checked says why", () => {
    const skipped = blocks.filter((block) => block.skip !== undefined);
    console.log(`${blocks.length} ts blocks in README.md and docs/: ${checked.length} type-checked, ${skipped.length} skipped`);
    for (const block of skipped) console.log(`  skipped ${block.where}: ${block.skip}`);
    expect(checked.length + skipped.length).toBe(blocks.length);
    expect(checked.length).toBeGreaterThan(90);
    for (const block of skipped) expect(block.skip, block.where).toMatch(/\w{3,}/);
    expect(blocks.filter((block) => block.where.startsWith("README.md:")).map((block) => block.skip)).toEqual([undefined]);
  });
});

describe.each(COMPILERS)("the docs' TypeScript blocks under $name", (compiler) => {
  /** Diagnostics by block file, each line with its place in the doc. */
  let byFile: Map<string, string[]>;

  beforeAll(async () => {
    byFile = new Map();
    const output = await typeCheck(compiler, path.join(project, "tsconfig.json"));
    // One diagnostic per "file(line,col): error …" line; indented lines continue it.
    for (const diagnostic of output.split(/\n(?=\S)/).filter(Boolean)) {
      const match = /^blocks\/([^(]+)\((\d+),(\d+)\): ([\s\S]*)$/.exec(diagnostic);
      const block = match && checked.find((candidate) => candidate.file === match[1]);
      if (!match || !block) {
        byFile.set("(other)", [...(byFile.get("(other)") ?? []), diagnostic]);
        continue;
      }
      const [doc, fence] = block.where.split(":");
      const line = Number(fence) + Number(match[2]) - block.offset;
      byFile.set(block.file, [...(byFile.get(block.file) ?? []), `${doc}:${line}:${match[3]} ${match[4]}`]);
    }
  }, 180_000);

  it("compile with nothing outside the blocks failing", () => {
    expect(byFile.get("(other)") ?? []).toEqual([]);
  });

  it.each(checked.map((block) => [block.where, block] as const))("%s compiles", (_where, block) => {
    expect(byFile.get(block.file) ?? []).toEqual([]);
  });
});
