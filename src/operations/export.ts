/**
 * engine.export and engine.import: a run as one versioned JSON document, and back. The document
 * holds every row the run owns (its run row, attempts, steps in seq order, events in order of
 * arrival; its child runs' too, on request) with their values as stored: a value sealed by a
 * codec stays sealed, and the document carries no key. Its lease is not in it: a lease is who
 * owns the run in one store, and an imported run is owned by nobody (see importedLease).
 *
 * A redacted export (for reading, not for importing) holds every value decoded, passed through
 * the redaction rules and written plain; importing one is refused.
 */

import { ImportInvalidError, type ErrorInfo } from "../base/errors.js";
import { Payloads } from "../payloads/payloads.js";
import { redact, type RedactRule } from "../payloads/redact.js";
import {
  EFFECTS,
  type AttemptEnding,
  type AttemptRow,
  type EventRow,
  type ImportedRun,
  type LeaseRow,
  type RunRow,
  type RunStatus,
  type StepRow,
  type StepStatus,
  type Store,
  type StoredRun,
} from "../store/types.js";
import { formatResolution, parseResolution } from "../workflow/step-resolution.js";
import { checkName } from "../workflow/names.js";
import { redactError } from "./views.js";

export const EXPORT_FORMAT = "steplog-run";
export const EXPORT_VERSION = 1;

/** One run's rows in an export: as the store holds them (store/rows.ts), its child runs' nested. */
export interface ExportedRun {
  run: RunRow;
  attempts: AttemptRow[];
  /** In seq order. */
  steps: StepRow[];
  /** In order of arrival. */
  events: EventRow[];
  /** The child runs it started, oldest first, each with theirs (only when exported with `children: true`). */
  children?: ExportedRun[];
}

/** What engine.export returns and engine.import takes: `JSON.stringify` it to keep it. */
export interface RunExport extends ExportedRun {
  format: typeof EXPORT_FORMAT;
  version: typeof EXPORT_VERSION;
  /** Set on a document exported with `redact: true`: values decoded and redacted, for reading; not importable. */
  redacted?: true;
}

export interface ExportOptions {
  /** Include the run's child runs (and theirs), oldest first. Default false. */
  children?: boolean;
  /** Decode every value and pass it through the engine's `redact` rules, written plain; the document is marked redacted and cannot be imported. */
  redact?: boolean;
}

/** What engine.import wrote. */
export interface ImportResult {
  /** The document's run. */
  id: string;
  /** Every run written: the document's run first, then its child runs. */
  runs: string[];
}

/** The run's rows, its child runs' too with `children`; undefined when there is no such run. */
export async function exportedRun(store: Store, id: string, children: boolean): Promise<ExportedRun | undefined> {
  const stored = await store.loadRun(id);
  if (!stored) return undefined;
  const out = rowsOf(stored);
  if (children) {
    out.children = [];
    // Listed newest first: a document lists them oldest first, as the run's view does.
    for (const listing of (await store.listRuns({ parent: id })).reverse()) {
      const child = await exportedRun(store, listing.run.id, true);
      if (child) out.children.push(child);
    }
  }
  return out;
}

/** Every row in one shape whatever store read it: optional columns as null (or 0), in one key order. */
function rowsOf(stored: StoredRun): ExportedRun {
  const r = stored.run;
  const run: RunRow = {
    id: r.id,
    workflow: r.workflow,
    version: r.version,
    args: r.args,
    status: r.status,
    attempts: r.attempts,
    budgetUsed: r.budgetUsed,
    source: r.source,
    deadline: r.deadline,
    value: r.value,
    error: r.error,
    waitingFor: r.waitingFor,
    wakeAt: r.wakeAt,
    parent: r.parent ?? null,
    concurrencyKey: r.concurrencyKey ?? null,
    rateKey: r.rateKey ?? null,
    priority: r.priority ?? 0,
    dedupeKey: r.dedupeKey ?? null,
    traceContext: r.traceContext ?? null,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
  const attempts = stored.attempts.map((a): AttemptRow => {
    const attempt: AttemptRow = {
      runId: a.runId,
      number: a.number,
      host: a.host,
      bootId: a.bootId,
      pid: a.pid,
      processStart: a.processStart,
      startedAt: a.startedAt,
      endedAt: a.endedAt,
      ending: a.ending,
      fromStep: a.fromStep,
      forced: a.forced,
      error: a.error,
    };
    if (a.reused) attempt.reused = [...a.reused];
    if (a.consent) attempt.consent = { redo: [...a.consent.redo], reuse: [...a.consent.reuse] };
    return attempt;
  });
  const steps = stored.steps.map((s): StepRow => ({
    runId: s.runId,
    seq: s.seq,
    attempt: s.attempt,
    key: s.key,
    name: s.name,
    status: s.status,
    effect: s.effect,
    idempotencyKey: s.idempotencyKey,
    value: s.value,
    error: s.error,
    version: s.version,
    intendedAt: s.intendedAt,
    endedAt: s.endedAt,
    calls: s.calls,
    resolution: s.resolution,
    usage: s.usage,
    position: s.position ?? null,
  }));
  const events = stored.events.map((e): EventRow => ({
    runId: e.runId,
    seq: e.seq,
    name: e.name,
    payload: e.payload,
    sentAt: e.sentAt,
    consumedBy: e.consumedBy,
    key: e.key ?? null,
  }));
  return { run, attempts, steps, events };
}

/** The document of a run's rows. */
export function exportDocument(rows: ExportedRun): RunExport {
  return { format: EXPORT_FORMAT, version: EXPORT_VERSION, ...rows };
}

/**
 * The rows with every value decoded by the engine's codec, passed through the redaction rules
 * and written plain (the way an engine without a codec writes it); errors' own fields too.
 */
export async function redactedRows(rows: ExportedRun, payloads: Payloads, rule: RedactRule | undefined): Promise<ExportedRun> {
  const plain = new Payloads(Number.MAX_SAFE_INTEGER, undefined);
  const value = async (text: string | null): Promise<string | null> => {
    if (text === null) return null;
    return (await plain.encode(redact(await payloads.decode(text), rule), "A redacted value")).stored;
  };
  const error = async (text: string | null): Promise<string | null> => {
    if (text === null) return null;
    const info: ErrorInfo = await payloads.decodeError(text);
    return JSON.stringify(rule === undefined ? info : redactError(info, rule));
  };
  const resolution = async (text: string | null): Promise<string | null> => {
    const parsed = parseResolution(text);
    if (!parsed.callErrors) return text;
    const callErrors = await Promise.all(parsed.callErrors.map(async (c) => ({ call: c.call, error: (await error(c.error))! })));
    return formatResolution({ ...parsed, callErrors });
  };
  const out: ExportedRun = {
    run: { ...rows.run, args: (await value(rows.run.args))!, value: await value(rows.run.value), error: await error(rows.run.error) },
    attempts: await Promise.all(rows.attempts.map(async (a) => ({ ...a, error: await error(a.error) }))),
    steps: await Promise.all(
      rows.steps.map(async (s) => ({ ...s, value: await value(s.value), error: await error(s.error), resolution: await resolution(s.resolution) })),
    ),
    events: await Promise.all(rows.events.map(async (e) => ({ ...e, payload: (await value(e.payload))! }))),
  };
  if (rows.children) out.children = await Promise.all(rows.children.map((c) => redactedRows(c, payloads, rule)));
  return out;
}

// ---- import ----------------------------------------------------------------------------------

/** A field's kind: a string, a number (whole with "int"), a boolean; "?" also allows null; or one of a list. */
type Kind = "string" | "string?" | "number" | "number?" | "int" | "int?" | "boolean" | readonly string[];

const RUN_STATUSES: readonly RunStatus[] = [
  "running",
  "completed",
  "failed",
  "stopped",
  "timed-out",
  "cancelled",
  "waiting",
  "escalated",
  "interrupted",
  "ready",
  "dead-lettered",
  "compensated",
];
const ENDINGS: ReadonlyArray<AttemptEnding | null> = ["completed", "failed", "stopped", "timed-out", "cancelled", "waiting", "escalated", "compensated", null];
const STEP_STATUSES: readonly StepStatus[] = ["intended", "succeeded", "failed", "stopped", "escalated", "compensated"];

const RUN_FIELDS: Record<keyof RunRow, Kind> = {
  id: "string",
  workflow: "string",
  version: "string?",
  args: "string",
  status: RUN_STATUSES,
  attempts: "int",
  budgetUsed: "int",
  source: "string?",
  deadline: "number?",
  value: "string?",
  error: "string?",
  waitingFor: "string?",
  wakeAt: "number?",
  parent: "string?",
  concurrencyKey: "string?",
  rateKey: "string?",
  priority: "number",
  dedupeKey: "string?",
  traceContext: "string?",
  createdAt: "number",
  updatedAt: "number",
};
const ATTEMPT_FIELDS: Record<Exclude<keyof AttemptRow, "reused" | "consent">, Kind> = {
  runId: "string",
  number: "int",
  host: "string",
  bootId: "string?",
  pid: "int",
  processStart: "number?",
  startedAt: "number",
  endedAt: "number?",
  ending: ENDINGS as readonly string[],
  fromStep: "string?",
  forced: "boolean",
  error: "string?",
};
const STEP_FIELDS: Record<keyof StepRow, Kind> = {
  runId: "string",
  seq: "int",
  attempt: "int",
  key: "string",
  name: "string",
  status: STEP_STATUSES,
  effect: EFFECTS,
  idempotencyKey: "string",
  value: "string?",
  error: "string?",
  version: "string?",
  intendedAt: "number",
  endedAt: "number?",
  calls: "int",
  resolution: "string?",
  usage: "string?",
  position: "int?",
};
const EVENT_FIELDS: Record<keyof EventRow, Kind> = {
  runId: "string",
  seq: "int",
  name: "string",
  payload: "string",
  sentAt: "number",
  consumedBy: "string?",
  key: "string?",
};

/** Thrown inside the check, turned into IMPORT_INVALID (reason "shape") naming where. */
class Shape extends Error {}

function fits(value: unknown, kind: Kind): boolean {
  if (Array.isArray(kind)) return (kind as readonly unknown[]).includes(value);
  if (value === null && (kind as string).endsWith("?")) return true;
  switch ((kind as string).replace("?", "")) {
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "int":
      return typeof value === "number" && Number.isSafeInteger(value);
    default:
      return typeof value === "boolean";
  }
}

function describeKind(kind: Kind): string {
  if (Array.isArray(kind)) return `one of ${kind.map((k) => JSON.stringify(k)).join(", ")}`;
  const k = kind as string;
  const base = k.replace("?", "") === "int" ? "a whole number" : `a ${k.replace("?", "")}`;
  return k.endsWith("?") ? `${base} or null` : base;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A row with exactly these fields (and `optional` ones), each of its kind. */
function checkRow(value: unknown, fields: Record<string, Kind>, where: string, optional: Record<string, (v: unknown) => boolean> = {}): void {
  if (!isObject(value)) throw new Shape(`${where} is not an object`);
  for (const [name, kind] of Object.entries(fields)) {
    if (!(name in value)) throw new Shape(`${where} has no ${name}`);
    if (!fits(value[name], kind)) throw new Shape(`${where}.${name} must be ${describeKind(kind)}, got ${JSON.stringify(value[name]) ?? "undefined"}`);
  }
  for (const name of Object.keys(value)) {
    if (name in fields) continue;
    const check = optional[name];
    if (!check) throw new Shape(`${where} has a field ${JSON.stringify(name)} no run export has`);
    if (!check(value[name])) throw new Shape(`${where}.${name} is not what a run export holds there`);
  }
}

const strings = (v: unknown) => Array.isArray(v) && v.every((s) => typeof s === "string");
const ATTEMPT_OPTIONAL = { reused: strings, consent: (v: unknown) => isObject(v) && strings(v.redo) && strings(v.reuse) && Object.keys(v).length === 2 };

function checkRows(value: unknown, where: string, parent: string | null, ids: Set<string>): ExportedRun {
  if (!isObject(value)) throw new Shape(`${where} is not an object`);
  checkRow(value.run, RUN_FIELDS, `${where}.run`);
  const run = value.run as unknown as RunRow;
  try {
    checkName("run id", run.id);
    checkName("workflow name", run.workflow);
  } catch (error) {
    throw new Shape(`${where}.run: ${(error as Error).message}`);
  }
  if (ids.has(run.id)) throw new Shape(`run ${JSON.stringify(run.id)} is in the document twice`);
  ids.add(run.id);
  if (parent !== null && run.parent !== parent)
    throw new Shape(`${where} is listed as a child of run ${JSON.stringify(parent)} but its parent is ${JSON.stringify(run.parent)}`);
  const list = (name: "attempts" | "steps" | "events", fields: Record<string, Kind>, optional?: Record<string, (v: unknown) => boolean>) => {
    const rows = value[name];
    if (!Array.isArray(rows)) throw new Shape(`${where}.${name} is not a list`);
    let last = 0;
    const order = name === "attempts" ? "number" : "seq";
    rows.forEach((row, i) => {
      checkRow(row, fields, `${where}.${name}[${i}]`, optional);
      const r = row as Record<string, unknown>;
      if (r.runId !== run.id) throw new Shape(`${where}.${name}[${i}].runId is ${JSON.stringify(r.runId)}, not its run's id ${JSON.stringify(run.id)}`);
      if ((r[order] as number) <= last) throw new Shape(`${where}.${name} is not in ${order} order, each once (at [${i}])`);
      last = r[order] as number;
    });
  };
  list("attempts", ATTEMPT_FIELDS, ATTEMPT_OPTIONAL);
  list("steps", STEP_FIELDS);
  list("events", EVENT_FIELDS);
  const known = new Set(["run", "attempts", "steps", "events", "children", "format", "version", "redacted"]);
  const extra = Object.keys(value).find((k) => !known.has(k));
  if (extra !== undefined) throw new Shape(`${where} has a field ${JSON.stringify(extra)} no run export has`);
  const out: ExportedRun = { run, attempts: value.attempts as AttemptRow[], steps: value.steps as StepRow[], events: value.events as EventRow[] };
  if (value.children !== undefined) {
    if (!Array.isArray(value.children)) throw new Shape(`${where}.children is not a list`);
    out.children = value.children.map((child, i) => checkRows(child, `${where}.children[${i}]`, run.id, ids));
  }
  return out;
}

/** The document, checked whole before anything is written: IMPORT_INVALID says what is wrong with it. */
export function checkDocument(doc: unknown): RunExport {
  if (!isObject(doc))
    throw new ImportInvalidError("shape", `it is ${doc === null ? "null" : Array.isArray(doc) ? "a list" : `a ${typeof doc}`}, not a run export (an object).`);
  const runId = isObject(doc.run) && typeof doc.run.id === "string" ? doc.run.id : undefined;
  if (doc.format !== EXPORT_FORMAT)
    throw new ImportInvalidError("format", `its format is ${JSON.stringify(doc.format) ?? "missing"}, not ${JSON.stringify(EXPORT_FORMAT)}.`, runId);
  if (doc.version !== EXPORT_VERSION)
    throw new ImportInvalidError(
      "version",
      `it is version ${JSON.stringify(doc.version) ?? "(none)"} of the run export format, and this steplog reads version ${EXPORT_VERSION}.`,
      runId,
    );
  if (doc.redacted !== undefined) {
    if (doc.redacted !== true)
      throw new ImportInvalidError("shape", `its "redacted" is ${JSON.stringify(doc.redacted)}; a run export has true there or nothing.`, runId);
    throw new ImportInvalidError(
      "redacted",
      `it was exported redacted: its values were decoded and passed through redaction rules, so they are not the run's records.`,
      runId,
    );
  }
  try {
    return exportDocument(checkRows(doc, "the document", null, new Set()));
  } catch (error) {
    if (error instanceof Shape) throw new ImportInvalidError("shape", `${error.message}.`, runId);
    throw error;
  }
}

/**
 * The lease an imported run is written with: nobody's. A run cut off inside an attempt (status
 * running, its last attempt without an ending) keeps that attempt as holder, with a lease that
 * lasted no time, so it reads `interrupted` and a continue takes it as it takes any crashed
 * run's; any other run's lease is released.
 */
export function importedLease(rows: ExportedRun, now: number): LeaseRow {
  const last = rows.attempts.at(-1);
  const epoch = rows.attempts.length === 0 ? 0 : 1;
  if (rows.run.status === "running" && last && last.ending === null) {
    return { runId: rows.run.id, epoch, attempt: last.number, expiresAt: now, heartbeatAt: now };
  }
  return { runId: rows.run.id, epoch, attempt: null, expiresAt: 0, heartbeatAt: now };
}

/** The document's runs as importRuns writes them: the run first, then its child runs (each before its own). */
export function importedRuns(doc: ExportedRun, now: number): ImportedRun[] {
  const { children, ...rows } = doc;
  return [{ ...rows, lease: importedLease(rows, now) }, ...(children ?? []).flatMap((child) => importedRuns(child, now))];
}
