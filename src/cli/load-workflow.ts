/**
 * Loading a workflow from a file: plain .js/.mjs/.cjs with Node's own import, TypeScript
 * (.ts/.mts/.cts/.tsx) through tsx's ESM loader, registered once and only when needed (a .mjs
 * that imports a .ts helper gets it too). The module's default export is the workflow; failing
 * that, its one exported workflow. A `prepare(argv)` export turns the words after `--` into args.
 */

import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { isWorkflow, type Workflow } from "../workflow/define-workflow.js";
import { WorkflowLoadError } from "./exit.js";

export interface LoadedWorkflow {
  workflow: Workflow;
  /**
   * Every workflow the module exports, the one above included: the workflows its runs start as
   * child runs are found here (a child run records its parent's file as its source).
   */
  all: Workflow[];
  /** The absolute path of the file. */
  file: string;
  /** The module's `prepare(argv)`, if it exports one. */
  prepare?: (argv: string[]) => unknown;
}

const TS_EXTENSIONS = new Set([".ts", ".mts", ".cts", ".tsx"]);

let tsxRegistered: Promise<void> | undefined;

/** Register tsx's ESM hooks in this process (once). */
function registerTypeScript(): Promise<void> {
  tsxRegistered ??= (async () => {
    let api: { register: (options?: Record<string, unknown>) => unknown };
    try {
      api = (await import("tsx/esm/api")) as typeof api;
    } catch (error) {
      throw new WorkflowLoadError(
        `Loading TypeScript needs the tsx package, which could not be loaded: ${(error as Error).message}`,
        "Install it beside steplog (npm install tsx) to run TypeScript workflows, or compile the workflow to .js.",
      );
    }
    api.register();
  })();
  return tsxRegistered;
}

/** Turn a recorded source or a command-line path into an absolute file path. */
export function resolveSource(source: string, cwd: string): string {
  if (source.startsWith("file:")) return fileURLToPath(source);
  if (path.isAbsolute(source)) return source;
  if (source.startsWith(".") || source.includes(path.sep) || /\.[cm]?[jt]sx?$/.test(source)) {
    const candidate = path.resolve(cwd, source);
    if (fs.existsSync(candidate) || !isBareSpecifier(source)) return candidate;
  }
  // A package name (as an app may record for its own runs): resolved from the working directory.
  try {
    return createRequire(path.join(cwd, "noop.js")).resolve(source);
  } catch {
    return path.resolve(cwd, source);
  }
}

function isBareSpecifier(s: string): boolean {
  return !s.startsWith(".") && !s.startsWith("/") && /^(@[\w.-]+\/)?[\w.-]+(\/.*)?$/.test(s);
}

/** Load a workflow file; with `wanted`, the workflow of that name among those it exports, if it exports one. */
export async function loadWorkflowFile(file: string, cwd: string, wanted?: string): Promise<LoadedWorkflow> {
  const absolute = resolveSource(file, cwd);
  if (!fs.existsSync(absolute)) {
    throw new WorkflowLoadError(
      `No workflow file at ${absolute}.`,
      "Check the path; a workflow file is a module whose default export is defineWorkflow({...}).",
    );
  }
  if (fs.statSync(absolute).isDirectory()) throw new WorkflowLoadError(`${absolute} is a folder, not a workflow file.`);
  const url = pathToFileURL(absolute).href;
  let mod: Record<string, unknown>;
  try {
    if (TS_EXTENSIONS.has(path.extname(absolute).toLowerCase())) await registerTypeScript();
    try {
      mod = (await import(url)) as Record<string, unknown>;
    } catch (error) {
      // A .js/.mjs module importing a .ts helper: register tsx and try once more (nothing was
      // evaluated yet: an unknown extension fails while the module graph is being linked).
      if ((error as { code?: string }).code !== "ERR_UNKNOWN_FILE_EXTENSION" || tsxRegistered) throw error;
      await registerTypeScript();
      mod = (await import(`${url}?tsx`)) as Record<string, unknown>;
    }
  } catch (error) {
    if (error instanceof WorkflowLoadError) throw error;
    const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
    throw new WorkflowLoadError(`Loading ${absolute} failed:\n${detail}`, "Fix the error in the workflow file (run it with node to see it), then try again.");
  }
  const all = [...new Set(Object.values(mod).filter((value) => isWorkflow(value)))] as Workflow[];
  const workflow = all.find((w) => w.name === wanted) ?? pickWorkflow(mod, absolute);
  if (!all.includes(workflow)) all.unshift(workflow);
  const prepare = typeof mod.prepare === "function" ? (mod.prepare as (argv: string[]) => unknown) : undefined;
  return { workflow, all, file: absolute, ...(prepare ? { prepare } : {}) };
}

function pickWorkflow(mod: Record<string, unknown>, file: string): Workflow {
  const candidates = [mod.default, (mod.default as { default?: unknown } | undefined)?.default];
  for (const candidate of candidates) if (isWorkflow(candidate)) return candidate;
  const named = Object.entries(mod).filter(([name, value]) => name !== "default" && isWorkflow(value));
  if (named.length === 1) return named[0]![1] as Workflow;
  if (named.length > 1) {
    throw new WorkflowLoadError(
      `${file} exports ${named.length} workflows (${named.map(([n]) => n).join(", ")}) and no default one.`,
      `Mark the one to run: export default ${named[0]![0]};`,
    );
  }
  throw new WorkflowLoadError(
    `${file} exports no workflow.`,
    "Its default export must be a workflow: export default defineWorkflow({ name, run(ctx, args) { … } });",
  );
}

/**
 * The args for a start, from the words after `--`: the module's `prepare(argv)` if it has one;
 * else a single word that parses as JSON is that value; else the words as an array of strings.
 */
export async function argsFrom(loaded: LoadedWorkflow, argv: string[]): Promise<unknown> {
  if (loaded.prepare) {
    try {
      return await loaded.prepare(argv);
    } catch (error) {
      throw new WorkflowLoadError(`prepare(argv) in ${loaded.file} threw: ${(error as Error).message ?? String(error)}`, "Check the words after --.");
    }
  }
  if (argv.length === 1) {
    try {
      return JSON.parse(argv[0]!);
    } catch {
      // Not JSON: the words themselves.
    }
  }
  return argv;
}
