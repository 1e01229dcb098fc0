/**
 * The workflows a worker loads: the files given with --workflow, and the sources recorded by the
 * runs that may become ready (waiting, running, interrupted). `steplog work` looks again while
 * it runs; `steplog schedules` loads the same set once, so it lists what `steplog work` would start.
 */

import type { Engine } from "../engine/engine.js";
import { loadWorkflowFile, type LoadedWorkflow } from "./load-workflow.js";

export class WorkflowDiscovery {
  /** By workflow name. */
  readonly loaded = new Map<string, LoadedWorkflow>();
  readonly #sources = new Map<string, string | null>(); // run id → recorded source
  readonly #badSources = new Set<string>();
  readonly #cwd: string;
  readonly #note: (text: string) => void;

  constructor(cwd: string, note: (text: string) => void) {
    this.#cwd = cwd;
    this.#note = note;
  }

  /** Load the --workflow files (a file that does not load is an error: it was asked for). */
  async addFiles(files: string[]): Promise<void> {
    for (const file of files) {
      const l = await loadWorkflowFile(file, this.#cwd);
      for (const workflow of l.all) this.loaded.set(workflow.name, { ...l, workflow });
      this.loaded.set(l.workflow.name, l);
    }
  }

  /** Load the workflows of runs that may become ready; true when a new one was loaded. */
  async discover(engine: Engine): Promise<boolean> {
    let added = false;
    const candidates = await engine.list({ status: ["waiting", "running", "interrupted"] });
    for (const summary of candidates) {
      if (this.loaded.has(summary.workflow)) continue;
      // The recorded source is a plain column: read from the run's row, it needs no key.
      if (!this.#sources.has(summary.id)) this.#sources.set(summary.id, (await plainRunRow(engine, summary.id).catch(() => undefined))?.source ?? null);
      const source = this.#sources.get(summary.id);
      if (!source || this.#badSources.has(source)) continue;
      try {
        const l = await loadWorkflowFile(source, this.#cwd, summary.workflow);
        // Every workflow it exports: a child run records its parent's file as its source.
        for (const workflow of l.all) {
          if (this.loaded.has(workflow.name)) continue;
          this.loaded.set(workflow.name, { ...l, workflow });
          added = true;
          this.#note(`loaded workflow ${workflow.name} from ${l.file}`);
        }
      } catch (error) {
        this.#badSources.add(source);
        this.#note(`cannot load ${source} (run ${summary.id}): ${(error as Error).message.split("\n")[0]}`);
      }
    }
    return added;
  }

  /** The files the loaded workflows came from, by workflow name (work's `sources`). */
  sources(): Record<string, string> {
    return Object.fromEntries([...this.loaded.values()].map((l) => [l.workflow.name, l.file]));
  }
}

/** A run's row as stored, without decoding any payload. */
async function plainRunRow(engine: Engine, id: string) {
  return engine.store.loadRunRow ? engine.store.loadRunRow(id) : (await engine.store.loadRun(id))?.run;
}
