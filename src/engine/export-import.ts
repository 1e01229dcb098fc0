/**
 * engine.export and engine.import (operations/export.ts holds the document): the options
 * checked, the run read or the document's runs written, each refusal a SteplogError.
 */

import { ImportRunExistsError, RunNotFoundError } from "../base/errors.js";
import { checkKnownKeys } from "../base/options.js";
import { checkDocument } from "../operations/export-check.js";
import { exportDocument, exportedRun, importedRuns, redactedRows, type ExportOptions, type ImportResult, type RunExport } from "../operations/export.js";
import { checkName } from "../workflow/names.js";
import { EXPORT_KEYS } from "./api.js";
import type { EngineCore } from "./engine-core.js";

export async function exportRun(core: EngineCore, id: string, options: ExportOptions): Promise<RunExport> {
  core.open();
  checkName("run id", id);
  checkKnownKeys(`export(${JSON.stringify(id)})`, options, EXPORT_KEYS, { runId: id });
  const rows = await exportedRun(core.store, id, options.children === true);
  if (!rows) throw new RunNotFoundError(id, core.store.location);
  if (!options.redact) return exportDocument(rows);
  return { ...exportDocument(await redactedRows(rows, core.settings.payloads, core.redact)), redacted: true };
}

export async function importRun(core: EngineCore, doc: unknown): Promise<ImportResult> {
  core.open();
  const checked = checkDocument(doc);
  const runs = importedRuns(checked, core.settings.clock.now());
  const written = await core.store.importRuns(runs);
  if ("exists" in written) {
    const { exists } = written;
    const importing = runs.find((r) => r.run.id === exists.id) ?? runs.find((r) => r.run.dedupeKey != null && r.run.dedupeKey === exists.dedupeKey);
    throw new ImportRunExistsError(exists.id, exists.status, core.store.location, importing?.run.id ?? exists.id);
  }
  // An imported run may be due (a timer past, an event waiting): this process's workers look.
  core.wake();
  return { id: checked.run.id, runs: runs.map((r) => r.run.id) };
}
