/**
 * The check engine.import makes of a document before it writes anything (export.ts has the
 * document): its format and version, not redacted, and every row of the shape a run export
 * holds, field by field, in order and naming its run. Written by hand rather than with a schema
 * library: steplog depends on none at run time (an app's schemas are its own, any Standard
 * Schema validator). A document that fails is refused with IMPORT_INVALID, saying where.
 */

import { ImportInvalidError } from "../base/errors.js";
import {
  EFFECTS,
  type AttemptEnding,
  type AttemptRow,
  type EventRow,
  type RunRow,
  type RunStatus,
  type StepRow,
  type StepStatus,
  type StreamRecord,
} from "../store/types.js";
import { checkName } from "../workflow/names.js";
import { EXPORT_FORMAT, EXPORT_VERSION, exportDocument, type ExportedRun, type RunExport } from "./export.js";

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

/** A run's budget fields: exported only for a run with a budget (documents from before budgets have none). */
type BudgetField = "costBudget" | "spentUsd" | "spentTokens";
const RUN_OPTIONAL: Record<BudgetField, (v: unknown) => boolean> = {
  costBudget: (v) => v === null || typeof v === "string",
  spentUsd: (v) => typeof v === "number" && Number.isFinite(v),
  spentTokens: (v) => typeof v === "number" && Number.isFinite(v),
};
const RUN_FIELDS: Record<Exclude<keyof RunRow, BudgetField>, Kind> = {
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

const STREAM_FIELDS: Record<keyof StreamRecord, Kind> = {
  runId: "string",
  stream: "string",
  seq: "int",
  kind: ["chunk", "reset", "close"],
  offset: "int",
  chunk: "string?",
  step: "string?",
  attempt: "int",
  at: "number",
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
  checkRow(value.run, RUN_FIELDS, `${where}.run`, RUN_OPTIONAL);
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
  if (value.streams !== undefined) checkStreams(value.streams, `${where}.streams`, run.id);
  const known = new Set(["run", "attempts", "steps", "events", "streams", "children", "format", "version", "redacted"]);
  const extra = Object.keys(value).find((k) => !known.has(k));
  if (extra !== undefined) throw new Shape(`${where} has a field ${JSON.stringify(extra)} no run export has`);
  const out: ExportedRun = { run, attempts: value.attempts as AttemptRow[], steps: value.steps as StepRow[], events: value.events as EventRow[] };
  if (value.streams !== undefined) out.streams = value.streams as StreamRecord[];
  if (value.children !== undefined) {
    if (!Array.isArray(value.children)) throw new Shape(`${where}.children is not a list`);
    out.children = value.children.map((child, i) => checkRows(child, `${where}.children[${i}]`, run.id, ids));
  }
  return out;
}

/**
 * A run's stream records: each of the shape a store holds, each stream's together and numbered
 * from seq 0 on, and each replayed as a reader would (a chunk at the end of the standing ones,
 * not after a close; a reset to an offset that stands), so an imported stream reads as it did.
 */
function checkStreams(value: unknown, where: string, runId: string): void {
  if (!Array.isArray(value)) throw new Shape(`${where} is not a list`);
  const done = new Set<string>();
  let name: string | undefined;
  let standing = 0;
  let closed = false;
  value.forEach((row, i) => {
    const at = `${where}[${i}]`;
    checkRow(row, STREAM_FIELDS, at);
    const r = row as StreamRecord;
    if (r.runId !== runId) throw new Shape(`${at}.runId is ${JSON.stringify(r.runId)}, not its run's id ${JSON.stringify(runId)}`);
    if (r.stream !== name) {
      try {
        checkName("stream name", r.stream);
      } catch (error) {
        throw new Shape(`${at}: ${(error as Error).message}`);
      }
      if (done.has(r.stream)) throw new Shape(`${at}: the records of stream ${JSON.stringify(r.stream)} are not together`);
      if (name !== undefined) done.add(name);
      [name, standing, closed] = [r.stream, 0, false];
      if (r.seq !== 0) throw new Shape(`${at}: stream ${JSON.stringify(r.stream)} starts at seq ${r.seq}, not 0`);
    } else if (r.seq !== (value[i - 1] as StreamRecord).seq + 1) {
      throw new Shape(`${at}: stream ${JSON.stringify(r.stream)} goes from seq ${(value[i - 1] as StreamRecord).seq} to ${r.seq}, not to the next`);
    }
    if ((r.kind === "chunk") !== (r.chunk !== null)) throw new Shape(`${at}: a ${r.kind} record ${r.kind === "chunk" ? "needs a chunk" : "has no chunk"}`);
    if (r.kind === "chunk" && (closed || r.offset !== standing))
      throw new Shape(`${at}: a chunk at offset ${r.offset}, where the stream ${closed ? "is closed" : `has ${standing} standing chunks`}`);
    if (r.kind === "reset" && (r.offset < 0 || r.offset > standing))
      throw new Shape(`${at}: a reset to offset ${r.offset}, where the stream has ${standing} standing chunks`);
    if (r.kind === "close" && closed) throw new Shape(`${at}: a close of a stream closed already`);
    if (r.kind === "chunk") standing++;
    else if (r.kind === "reset") [standing, closed] = [r.offset, false];
    else closed = true;
  });
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
