/**
 * engine.export and engine.import: a run as one versioned JSON document, and back. The document
 * holds every row the run owns (its run row, attempts, steps in seq order, events in order of
 * arrival, its streams' records by stream and seq; its child runs' too, on request) with their
 * values as stored: a value sealed by a codec stays sealed, and the document carries no key. Its
 * lease is not in it: a lease is who owns the run in one store, and an imported run is owned by
 * nobody (see importedLease).
 *
 * A redacted export (for reading, not for importing) holds every value decoded, passed through
 * the redaction rules and written plain; importing one is refused. export-check.ts checks a
 * document before it is imported.
 */

import type { ErrorInfo } from "../base/errors.js";
import { Payloads } from "../payloads/payloads.js";
import { redact, type RedactRule } from "../payloads/redact.js";
import type { AttemptRow, EventRow, ImportedRun, LeaseRow, RunRow, StepRow, StoredRun, StreamRecord } from "../store/types.js";
import type { RuntimeStore } from "../store/runtime.js";
import { formatResolution, parseResolution, parseWaitingFor, type StoredWait } from "../workflow/step-resolution.js";
import { approvalEvent } from "../steps/waits.js";
import type { ApprovalRecord } from "../steps/approval-gate.js";
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
  /** Every record of the run's streams (chunks as stored, resets, closes), by stream name then seq; only for a run that wrote a stream (documents from before streams have none). */
  streams?: StreamRecord[];
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
export async function exportedRun(store: RuntimeStore, id: string, children: boolean): Promise<ExportedRun | undefined> {
  const stored = await store.loadRun(id);
  if (!stored) return undefined;
  const out = rowsOf(stored);
  const streams = await streamRecords(store, id);
  if (streams.length > 0) out.streams = streams;
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

/** Every record of the run's streams, by name then seq; none from a store that keeps no streams. */
async function streamRecords(store: RuntimeStore, id: string): Promise<StreamRecord[]> {
  if (!store.keepsStreams) return [];
  const out: StreamRecord[] = [];
  for (const name of await store.streamNames(id)) {
    for (let after = -1; ;) {
      const page = await store.readStream(id, name, after, STREAM_PAGE);
      for (const r of page) {
        out.push({ runId: r.runId, stream: r.stream, seq: r.seq, kind: r.kind, offset: r.offset, chunk: r.chunk, step: r.step, attempt: r.attempt, at: r.at });
      }
      if (page.length < STREAM_PAGE) break;
      after = page.at(-1)!.seq;
    }
  }
  return out;
}

const STREAM_PAGE = 1000;

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
  // Only a run with a budget carries its budget and spend (so documents of other runs are as before).
  if (r.costBudget != null) Object.assign(run, { costBudget: r.costBudget, spentUsd: r.spentUsd ?? 0, spentTokens: r.spentTokens ?? 0 });
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
    if (!parsed.callErrors && parsed.input === undefined) return text;
    const out = { ...parsed };
    if (parsed.callErrors) out.callErrors = await Promise.all(parsed.callErrors.map(async (c) => ({ call: c.call, error: (await error(c.error))! })));
    // A redacted input no longer matches its digest, and a plain digest of a redacted secret could be guessed at: left out.
    if (parsed.input !== undefined) out.input = (await value(parsed.input))!;
    delete out.inputDigest;
    return formatResolution(out);
  };
  // An input kept with an approval's wait or answer (as stored, inside their JSON): written plain and redacted, its digests left out (as above).
  const input = async (stored: string | undefined) => (stored === undefined ? {} : { input: (await value(stored))! });
  const waitingFor = async (text: string | null): Promise<string | null> => {
    const wait = parseWaitingFor(text);
    if (wait?.kind !== "approval" || (wait.inputDigest === undefined && wait.input === undefined)) return text;
    const { input: stored, inputDigest: _digest, stale, ...rest } = wait;
    const out: StoredWait = { ...rest, ...(await input(stored)) };
    if (stale) {
      const { input: approved, inputDigest: _approvedDigest, ...earlier } = stale;
      out.stale = { ...earlier, ...(await input(approved)) };
    }
    return JSON.stringify(out);
  };
  const payload = async (e: EventRow): Promise<string> => {
    if (!e.name.startsWith(approvalEvent(""))) return (await value(e.payload))!;
    const { input: stored, inputDigest: _digest, ...answer } = (await payloads.decode(e.payload)) as ApprovalRecord;
    return (await plain.encode({ ...(redact(answer, rule) as object), ...(await input(stored)) }, "A redacted value")).stored;
  };
  const out: ExportedRun = {
    run: {
      ...rows.run,
      args: (await value(rows.run.args))!,
      value: await value(rows.run.value),
      error: await error(rows.run.error),
      waitingFor: await waitingFor(rows.run.waitingFor),
    },
    attempts: await Promise.all(rows.attempts.map(async (a) => ({ ...a, error: await error(a.error) }))),
    steps: await Promise.all(
      rows.steps.map(async (s) => ({ ...s, value: await value(s.value), error: await error(s.error), resolution: await resolution(s.resolution) })),
    ),
    events: await Promise.all(rows.events.map(async (e) => ({ ...e, payload: await payload(e) }))),
  };
  if (rows.streams) out.streams = await Promise.all(rows.streams.map(async (r) => ({ ...r, chunk: await value(r.chunk) })));
  if (rows.children) out.children = await Promise.all(rows.children.map((c) => redactedRows(c, payloads, rule)));
  return out;
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
