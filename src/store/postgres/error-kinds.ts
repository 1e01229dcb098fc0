/** Telling the Postgres store's failures apart: a lost connection, a server's answer, a retryable one, bad settings; and keeping credentials out of messages. */

import { SteplogError } from "../../base/errors.js";

const CONNECTION_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "57P01", // admin_shutdown: pg_terminate_backend, a fast shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: the server is starting
  "57P05", // idle_session_timeout
  "25P03", // idle_in_transaction_session_timeout
  "08000",
  "08001",
  "08003",
  "08004",
  "08006",
]);
// "Query read timeout": pg's client-side query_timeout. The statement may still run (and commit)
// on the server; the connection is in an unknown state, so it is treated as lost.
const CONNECTION_MESSAGES =
  /Connection terminated|connection error and is not queryable|not queryable|timeout exceeded when trying to connect|Connection ended|Query read timeout/i;

/** The connection (not the statement) failed: the transaction is gone with it. */
export function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && CONNECTION_CODES.has(code)) return true;
  return error instanceof Error && !(error instanceof SteplogError) && CONNECTION_MESSAGES.test(error.message);
}

/** The server is there but these connection settings cannot use it: no such host, database, or role, or a wrong password. */
export function isConnectionSettingsError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && SETTINGS_CODES.has(code);
}

const SETTINGS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "3D000", "28000", "28P01"]);

/** An error the server raised for one statement (it has a SQLSTATE): the server answered. */
export function isDbError(error: unknown): boolean {
  return typeof (error as { code?: unknown }).code === "string" && /^[0-9A-Z]{5}$/.test((error as { code: string }).code);
}

/** Deadlock or serialization failure: the server rolled the transaction back; run it again. */
export function isTransient(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return code === "40P01" || code === "40001";
}

/** Credentials never reach a message: strip `user:password@` from URLs and any known secret. */
export function redact(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 3) out = out.split(secret).join("***");
  return out.replace(/(postgres(?:ql)?:\/\/)[^@\s/]*@/gi, "$1***@").replace(/password=\S+/gi, "password=***");
}
