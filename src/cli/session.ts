/**
 * What one command invocation works with: its output streams (colour decided once), the
 * store named by --db / --store (Postgres and JSONL loaded lazily), and the engines it opened,
 * closed at the end.
 */

import fs from "node:fs";
import path from "node:path";
import { createOwnerOnlyFile } from "../store/owner-only-files.js";
import { createEngine, type Engine, type EngineOptions } from "../engine/engine.js";
import { isSteplogError } from "../base/errors.js";
import { encryptedCodec, KEY_ID, keyBytes } from "../payloads/encrypted-codec.js";
import type { Codec } from "../payloads/payloads.js";
import { SQLITE_DRIVERS, type SqliteDriverChoice } from "../store/sqlite/drivers/connection.js";
import { sqliteStore, DEFAULT_SQLITE_PATH } from "../store/sqlite/store.js";
import type { Store } from "../store/types.js";
import { booleanOption, stringOption, type Parsed } from "./args.js";
import { StoreMissingError, StoreUnavailableError, UsageError } from "./exit.js";
import { painter, terminalJson, wantsColor, type Paint } from "./format.js";

export interface Output {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface Io {
  stdout: Output;
  stderr: Output;
  env: NodeJS.ProcessEnv;
  cwd: string;
  now(): number;
}

/** `given`: the path was named (--db, --store, STEPLOG_DB, STEPLOG_STORE), not the default. `driver`: --driver. */
export type StoreSpec =
  | { kind: "sqlite"; path: string; given: boolean; driver?: SqliteDriverChoice }
  | { kind: "postgres"; url: string; schema?: string }
  | { kind: "jsonl"; path: string; given: boolean };

export class Session {
  readonly json: boolean;
  readonly color: boolean;
  readonly paint: Paint;
  readonly errPaint: Paint;
  readonly storeSpec: StoreSpec;
  readonly #engines: Engine[] = [];

  constructor(
    readonly io: Io,
    readonly parsed: Parsed,
    readonly command: string,
  ) {
    this.json = booleanOption(parsed, "json");
    const noColor = booleanOption(parsed, "no-color");
    this.color = !this.json && wantsColor(io.stdout, io.env, noColor);
    this.paint = painter(this.color);
    this.errPaint = painter(wantsColor(io.stderr, io.env, noColor));
    this.storeSpec = storeSpecOf(parsed, io);
  }

  get tty(): boolean {
    return this.io.stdout.isTTY === true && !this.json;
  }

  now(): number {
    return this.io.now();
  }

  out(text = ""): void {
    this.io.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
  }

  lines(lines: string[]): void {
    if (lines.length) this.io.stdout.write(lines.join("\n") + "\n");
  }

  /** One JSON document on stdout (--json). */
  printJson(value: unknown): void {
    this.io.stdout.write(terminalJson(JSON.stringify(value, jsonReplacer, 2)) + "\n");
  }

  err(text: string): void {
    this.io.stderr.write(text.endsWith("\n") ? text : `${text}\n`);
  }

  /** Whether redaction rules are given (--redact PATHS, or STEPLOG_REDACT): what the command shows passes through them. */
  redacting(): boolean {
    return redactRules(this.parsed, this.io.env) !== undefined;
  }

  /** Where the records are, for messages. */
  describeStore(): string {
    const s = this.storeSpec;
    return s.kind === "postgres" ? redactUrl(s.url) : s.path;
  }

  async openStore(options: { readonly?: boolean } = {}): Promise<Store> {
    const spec = this.storeSpec;
    if (spec.kind === "sqlite")
      return sqliteStore({ path: spec.path, ...(spec.driver ? { driver: spec.driver } : {}), ...(options.readonly ? { readonly: true } : {}) });
    if (spec.kind === "postgres") {
      const mod = await lazyEntry<{ postgresStore?: (o: { connectionString: string; schema?: string }) => Store }>("postgres", "the Postgres store");
      if (typeof mod.postgresStore !== "function")
        throw new StoreUnavailableError("This steplog build has no postgresStore: the Postgres store is not available.");
      return mod.postgresStore({ connectionString: spec.url, ...(spec.schema === undefined ? {} : { schema: spec.schema }) });
    }
    const mod = await lazyEntry<{ jsonlStore?: (o: { path: string }) => Store }>("jsonl", "the JSONL store");
    if (typeof mod.jsonlStore !== "function") throw new StoreUnavailableError("This steplog build has no jsonlStore: the JSONL store is not available.");
    return mod.jsonlStore({ path: spec.path });
  }

  /** An engine on the store, with the keys and redaction rules from the environment; closed by close(). */
  async engine(options: Omit<EngineOptions, "store"> & { readonly?: boolean } = {}): Promise<Engine> {
    const { readonly, ...rest } = options;
    const codec = codecFromEnv(this.io.env);
    const redact = redactRules(this.parsed, this.io.env);
    const engine = createEngine({
      ...rest,
      ...(codec ? { codec } : {}),
      ...(redact ? { redact } : {}),
      store: await this.openStore({ readonly: readonly === true }),
    });
    this.#engines.push(engine);
    return engine;
  }

  /**
   * Run a read-only query: the SQLite file is opened read-only (never created, never migrated);
   * if that is refused (a store whose schema needs an upgrade), once more read-write.
   */
  async read<T>(fn: (engine: Engine) => Promise<T>, options: Pick<EngineOptions, "workflows"> = {}): Promise<T> {
    // The engine first: its settings (STEPLOG_KEYS) are checked before the store is looked for.
    const engine = await this.engine({ ...options, readonly: this.storeSpec.kind === "sqlite" });
    this.requireStore();
    try {
      return await fn(engine);
    } catch (error) {
      if (this.storeSpec.kind !== "sqlite" || !isSteplogError(error, "STORE_READ_ONLY") || !/upgrade/.test(error.message)) throw error;
      return fn(await this.engine(options));
    }
  }

  /**
   * For a command that only reads (or marks) what a store holds: a named file with no store is a
   * typo, not an empty store, and is refused (exit 5) unless --create asks for an empty one.
   * The default store may simply not exist yet: it reads as empty.
   */
  requireStore(): void {
    const spec = this.storeSpec;
    if (spec.kind === "postgres" || !spec.given || fs.existsSync(spec.path)) return;
    if (booleanOption(this.parsed, "create")) {
      createOwnerOnlyFile(spec.path);
      return;
    }
    throw new StoreMissingError(
      `No store at ${spec.path}: the file does not exist, so there is nothing to read. A mistyped path would otherwise look like an empty store.`,
      `Check the path (steplog ${this.command} --db <the store file>); to make an empty store there, add --create.`,
    );
  }

  async close(): Promise<void> {
    for (const engine of this.#engines.splice(0).reverse()) {
      try {
        await engine.close();
      } catch {
        // Closing after a failure: the first error is the one to report.
      }
    }
  }
}

function storeSpecOf(parsed: Parsed, io: Io): StoreSpec {
  const spec = storeOf(parsed, io);
  const driver = driverOf(parsed);
  if (driver === undefined) return spec;
  if (spec.kind !== "sqlite")
    throw new UsageError(
      `--driver names a SQLite driver, and the store here is ${spec.kind === "postgres" ? "Postgres" : "a JSONL file"}.`,
      "Give --driver with a SQLite store (the default, --db FILE or --store sqlite:FILE), or leave it out.",
    );
  return { ...spec, driver };
}

const DRIVER_CHOICES: readonly SqliteDriverChoice[] = ["auto", ...SQLITE_DRIVERS];

function driverOf(parsed: Parsed): SqliteDriverChoice | undefined {
  const text = stringOption(parsed, "driver");
  if (text === undefined) return undefined;
  const driver = DRIVER_CHOICES.find((choice) => choice === text);
  if (driver === undefined)
    throw new UsageError(
      `--driver ${JSON.stringify(text)} is not a SQLite driver: give one of ${DRIVER_CHOICES.join(", ")}.`,
      "auto (the default) uses better-sqlite3 where it loads, else the runtime's built-in SQLite (node:sqlite on Node.js 22.16+ and Deno, bun:sqlite on Bun).",
    );
  return driver;
}

function storeOf(parsed: Parsed, io: Io): StoreSpec {
  const db = stringOption(parsed, "db");
  const store = stringOption(parsed, "store");
  if (db !== undefined && store !== undefined) throw new UsageError("Give --db FILE or --store URL, not both.");
  const schema = stringOption(parsed, "schema") ?? (io.env.STEPLOG_PG_SCHEMA || undefined);
  const fromEnv = store ?? io.env.STEPLOG_STORE ?? undefined;
  const postgres = db === undefined && fromEnv !== undefined && /^postgres(ql)?:\/\//i.test(fromEnv);
  if (stringOption(parsed, "schema") !== undefined && !postgres) throw new UsageError("--schema names a Postgres schema: give it with --store postgres://….");
  if (db !== undefined) return { kind: "sqlite", path: path.resolve(io.cwd, db), given: true };
  if (fromEnv !== undefined && fromEnv !== "") {
    if (postgres) return { kind: "postgres", url: fromEnv, ...(schema === undefined ? {} : { schema }) };
    if (/^jsonl:/i.test(fromEnv)) return { kind: "jsonl", path: path.resolve(io.cwd, fromEnv.slice("jsonl:".length)), given: true };
    if (/^sqlite:/i.test(fromEnv)) return { kind: "sqlite", path: path.resolve(io.cwd, fromEnv.slice("sqlite:".length)), given: true };
    throw new UsageError(
      `--store ${JSON.stringify(fromEnv)} is not a store URL.`,
      "Give postgres://user@host:5432/db, jsonl:FILE or sqlite:FILE; for a SQLite file, --db FILE is enough.",
    );
  }
  const envDb = io.env.STEPLOG_DB;
  const given = envDb !== undefined && envDb !== "";
  return { kind: "sqlite", path: path.resolve(io.cwd, given ? envDb : DEFAULT_SQLITE_PATH), given };
}

/**
 * Keys for encrypted stores come from the environment, never from arguments (which other users
 * can read in the process list): STEPLOG_KEYS="2026-11=<base64>,2027-02=<base64>" and
 * STEPLOG_KEY_CURRENT (default: the last key listed).
 */
function codecFromEnv(env: NodeJS.ProcessEnv): Codec | undefined {
  const text = env.STEPLOG_KEYS;
  if (text === undefined || text.trim() === "") return undefined;
  const keys: Record<string, string> = {};
  const pairs = text
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
  for (const [i, pair] of pairs.entries()) {
    // Checked here so that no message echoes what is in the variable: a pair without its id
    // would show the key itself.
    const at = pair.indexOf("=");
    const id = pair.slice(0, Math.max(0, at));
    const key = pair.slice(at + 1);
    if (at <= 0 || !KEY_ID.test(id) || keyBytes(key).length !== 32) {
      throw new UsageError(
        `STEPLOG_KEYS: pair ${i + 1} of ${pairs.length} is not id=key (an id of 1–64 letters, digits, "_", "." or "-", then "=", then 32 bytes in base64 or hex).`,
        'For example STEPLOG_KEYS="2026-11=<32 bytes, base64>,2027-02=<…>".',
      );
    }
    keys[id] = key;
  }
  const ids = Object.keys(keys);
  return encryptedCodec({ keys, current: env.STEPLOG_KEY_CURRENT || ids[ids.length - 1]! });
}

function redactRules(parsed: Parsed, env: NodeJS.ProcessEnv): string[] | undefined {
  const text = stringOption(parsed, "redact") ?? env.STEPLOG_REDACT;
  if (text === undefined) return undefined;
  const rules = text
    .split(",")
    .map((r) => r.trim())
    .filter(Boolean);
  return rules.length ? rules : undefined;
}

/** A password in a connection URL (in its user part or its query) is never printed. */
export function redactUrl(url: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return url; // a file path
  // "user:12/ss@host" parses as host "user", port 12: with an "@" after the scheme, what comes
  // before the last one is the user part, whatever URL makes of it.
  const userPart = /^[a-z][a-z0-9+.-]*:\/\/(.*)@/i.exec(url)?.[1];
  if (userPart !== undefined && userPart.includes(":") && /[/?#]/.test(userPart)) {
    return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^:@]*):.*@/i, "$1$2:***@").replace(/\?.*$/, "?…");
  }
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    for (const name of [...parsed.searchParams.keys()]) if (/pass|secret|token/i.test(name)) parsed.searchParams.set(name, "***");
    return decodeURIComponent(parsed.toString()).replace(/%2A/gi, "*");
  } catch {
    // Not parseable: hide everything between the scheme and the last "@", and any query.
    return url.replace(/^([a-z][a-z0-9+.-]*:\/\/).*@/i, "$1***@").replace(/\?.*$/, "?…");
  }
}

/**
 * Import another entry of this package at run time (dist/postgres.js beside dist/cli.js), so a
 * build without it, or an app without `pg`, still runs every other command. The specifier is
 * computed so the bundler leaves it alone.
 */
async function lazyEntry<T>(entry: string, what: string): Promise<T> {
  const candidates = [`./${entry}.js`, `../${entry}.js`];
  let lastError: unknown;
  for (const specifier of candidates) {
    try {
      return (await import(/* @vite-ignore */ specifier)) as T;
    } catch (error) {
      lastError = error;
      const code = (error as { code?: string }).code;
      const message = (error as Error).message ?? "";
      // The entry itself is missing: try the next place. Anything else (pg not installed) is the answer.
      if (code === "ERR_MODULE_NOT_FOUND" && message.includes(`${entry}.js'`) && !/Cannot find package/.test(message)) continue;
      if (code === "ERR_MODULE_NOT_FOUND" && /Cannot find package 'pg'/.test(message)) {
        throw new StoreUnavailableError(`${capitalize(what)} needs the pg package, which is not installed.`, "Install it next to steplog: npm install pg");
      }
      throw new StoreUnavailableError(`${capitalize(what)} could not be loaded: ${(error as Error).message}`);
    }
  }
  throw new StoreUnavailableError(
    `${capitalize(what)} is not available in this steplog build (${(lastError as Error)?.message ?? "no module"}).`,
    "Use the default SQLite store (--db FILE), or a steplog version that ships it.",
  );
}

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** JSON for --json: BigInt as a string, Map/Set as object/array, undefined kept out. */
export function jsonReplacer(this: unknown, key: string, value: unknown): unknown {
  // The holder's own value: JSON.stringify has already turned a Buffer into { type, data } by its toJSON.
  const raw = (this as Record<string, unknown> | undefined)?.[key];
  if (raw instanceof ArrayBuffer || ArrayBuffer.isView(raw)) {
    const bytes = raw instanceof ArrayBuffer ? new Uint8Array(raw) : new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
    return { $type: Buffer.isBuffer(raw) ? "Buffer" : raw.constructor.name, base64: Buffer.from(bytes).toString("base64") };
  }
  if (raw instanceof RegExp) return String(raw);
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Map) return Object.fromEntries(value);
  if (value instanceof Set) return [...value];
  return value;
}
