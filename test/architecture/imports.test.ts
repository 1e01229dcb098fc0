// The code's shape, kept honest: src/ is folders by concept, in layers, and every import points
// down (or within its own folder), never back up. A new folder must be placed in LAYERS.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

/** Lowest first. A folder may import from its own layer's folder and from layers below it. */
const LAYERS: string[][] = [
  ["base"], // errors, options, clock, fault points: what everything uses
  ["store"], // the storage contract and the stores: nothing of workflows
  ["payloads"], // values, codecs, redaction
  ["workflow"], // defineWorkflow, the context's types, schemas, names, versions, retry policy
  ["ownership"], // leases: claims, owners, the live-attempt registry, the lease keeper
  ["steps"], // one attempt and the step protocol
  ["operations"], // the engine's operations on runs outside an attempt: events, cancel, recover, escalations, views
  ["engine"], // createEngine, the worker
  ["testing", "agents"], // built on the engine, independent of each other
  ["cli"],
  ["public"], // the package's public types (types.ts), which the entries re-export
  ["entries"], // the package's entry points
];

const layerOf = new Map(LAYERS.flatMap((folders, rank) => folders.map((f) => [f, rank] as const)));

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : []));
}

/** Every relative module a file imports (static, type-only, re-exported or dynamic), as paths under src/. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((m) => m[1]!);
  return specs.map((s) => path.relative(SRC, path.resolve(path.dirname(file), s)).replace(/\.js$/, ".ts"));
}

const folderOf = (rel: string) => rel.split(path.sep)[0]!;
const files = sourceFiles(SRC).map((f) => path.relative(SRC, f));

describe("src/ layout", () => {
  it("has no source file at its top: every file is in a folder named for its concept", () => {
    expect(files.filter((f) => !f.includes(path.sep))).toEqual([]);
  });

  it("places every folder in a layer", () => {
    expect([...new Set(files.map(folderOf))].filter((f) => !layerOf.has(f)).sort()).toEqual([]);
  });

  it("reads the imports there are (a scan that finds none would pass everything)", () => {
    expect(importsOf(path.join(SRC, "steps", "attempt.ts"))).toContain(path.join("store", "types.ts"));
    expect(files.flatMap((f) => importsOf(path.join(SRC, f))).length).toBeGreaterThan(300);
  });

  it("imports only point down (or within a folder), never back up to a higher layer or across one", () => {
    const wrong: string[] = [];
    for (const file of files) {
      const from = folderOf(file);
      for (const target of importsOf(path.join(SRC, file))) {
        const to = folderOf(target);
        if (to === from) continue;
        if (!layerOf.has(to) || layerOf.get(to)! >= layerOf.get(from)!) wrong.push(`${file} imports ${target} (${from} → ${to})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("keeps the entries on public modules: no entry imports from steps/ or operations/ (their public types come through public/types.ts)", () => {
    const entries = files.filter((f) => folderOf(f) === "entries");
    expect(entries.length).toBeGreaterThan(5);
    const reaching = entries.flatMap((file) =>
      importsOf(path.join(SRC, file))
        .filter((target) => ["steps", "operations"].includes(folderOf(target)))
        .map((target) => `${file} imports ${target}`),
    );
    expect(reaching).toEqual([]);
  });

  it("gives the entries their types from the one public types module", () => {
    const typeExports = files
      .filter((f) => folderOf(f) === "entries")
      .flatMap((file) =>
        [...fs.readFileSync(path.join(SRC, file), "utf8").matchAll(/export type \{[^}]*\} from ["']([^"']+)["']/g)].map((m) => `${file}: ${m[1]!}`),
      );
    expect(typeExports.length).toBeGreaterThan(10);
    expect(typeExports.filter((line) => !line.endsWith(": ../public/types.js"))).toEqual([]);
  });

  it("has no import cycle between files (type-only imports included): each module can be read without the ones above it", () => {
    const graph = new Map(files.map((f) => [f, importsOf(path.join(SRC, f)).filter((t) => t !== f)]));
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const visit = (file: string, trail: string[]): void => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        cycles.push([...trail.slice(trail.indexOf(file)), file].join(" → "));
        return;
      }
      state.set(file, "open");
      for (const next of graph.get(file) ?? []) visit(next, [...trail, file]);
      state.set(file, "done");
    };
    for (const file of files) visit(file, []);
    expect(cycles).toEqual([]);
  });
});
