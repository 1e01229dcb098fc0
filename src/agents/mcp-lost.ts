/**
 * An MCP call whose answer never came: the request was sent, the connection closed or timed out
 * before the reply. MCP cannot tell "never arrived" from "done, reply lost", so for a tool whose
 * effect may not be repeated (compensatable, irreversible) that is an unknown outcome
 * (OutcomeUnknown: left intended, settled by its policy on the next continue), never a failure a
 * continue would simply send again. An error the server answered with is a failure as before.
 */

import { OutcomeUnknown } from "../base/errors.js";
import type { Effect } from "../workflow/context.js";

/** JSON-RPC codes the SDK's client gives a request that got no answer: ConnectionClosed, RequestTimeout. */
const NO_ANSWER_CODES = new Set([-32000, -32001]);

/** Whether `error` is the server's own answer (an McpError with a JSON-RPC code it sent). */
function answeredByServer(error: unknown): boolean {
  if (!(error instanceof Error) || error.name !== "McpError") return false;
  const code = (error as { code?: unknown }).code;
  return typeof code === "number" && !NO_ANSWER_CODES.has(code);
}

/** The call's answer; for an effect that must not be repeated, a lost one as OutcomeUnknown. */
export async function unlessAnswerLost<T>(effect: Effect, signal: AbortSignal, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    // A call the attempt aborted (a cancel, a timeout) ends as the attempt says; read and
    // idempotent calls are sent again with the same key whatever happened.
    if (signal.aborted || effect === "read" || effect === "idempotent" || answeredByServer(error)) throw error;
    const why = error instanceof Error ? error.message : String(error);
    throw new OutcomeUnknown(`the MCP server's answer was lost (${why})`, { cause: error });
  }
}
