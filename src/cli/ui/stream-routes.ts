/**
 * One stream of a run over HTTP, for a page or curl:
 *
 * - `GET /runs/<id>/streams/<name>`: server-sent events that follow the stream until it is
 *   closed or the run has ended. Each item is one `data:` line of JSON (engine.readStream's
 *   `{"type":"chunk","offset":N,"chunk":…,"seq":S}` or `{"type":"reset","offset":N,"seq":S}`) whose
 *   `id:` is its seq, so a reconnecting EventSource's `Last-Event-ID` resumes after it (readStream's
 *   `after`: a reset made while it was away included); `?from=N` starts at an offset. At the end an
 *   `end` event, and the response ends.
 * - `GET /runs/<id>/streams/<name>/text`: the whole stream as it stands, as text (string chunks
 *   as they are, others one line of JSON each): the page's "whole stream" link.
 *
 * Chunks are redacted as the pages' values are.
 */

import type http from "node:http";
import { isSteplogError } from "../../base/errors.js";
import { send, startEvents } from "./http.js";
import type { UiContext } from "./layout.js";
import { chunkText, jsonLine } from "./stream-text.js";

/** Whether the run exists and the store keeps streams: else the answer to send (and it is sent). */
async function refused(ctx: UiContext, res: http.ServerResponse, id: string): Promise<boolean> {
  try {
    await ctx.engine.streams(id);
    return false;
  } catch (error) {
    const status = isSteplogError(error, "RUN_NOT_FOUND") ? 404 : isSteplogError(error, "STREAMS_UNSUPPORTED") ? 501 : undefined;
    if (status === undefined) throw error;
    send(res, status, "text/plain; charset=utf-8", `${(error as Error).message}\n`);
    return true;
  }
}

/** Where to start: after Last-Event-ID's seq (a reconnect), else at ?from='s offset, else at 0; undefined when not a whole number. */
function startAt(req: http.IncomingMessage, url: URL): { after: number } | { from: number } | undefined {
  const lastId = req.headers["last-event-id"];
  const given = lastId ?? url.searchParams.get("from") ?? "0";
  const text = (Array.isArray(given) ? given[0]! : given).trim();
  if (!/^\d{1,15}$/.test(text)) return undefined;
  return lastId === undefined ? { from: Number(text) } : { after: Number(text) };
}

export async function streamEvents(
  ctx: UiContext,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
  where: { id: string; name: string; pollMs: number; open: Set<http.ServerResponse> },
): Promise<void> {
  const start = startAt(req, url);
  if (start === undefined) {
    return send(res, 400, "text/plain; charset=utf-8", "from (an offset) or Last-Event-ID (an event's id, a seq) must be a whole number of 0 or more.\n");
  }
  if (await refused(ctx, res, where.id)) return;
  const stop = new AbortController();
  startEvents(res);
  where.open.add(res);
  const keepAlive = setInterval(() => res.write(": keep-alive\n\n"), 15_000);
  req.on("close", () => stop.abort());
  let next = "from" in start ? start.from : undefined;
  try {
    for await (const item of ctx.engine.readStream(where.id, where.name, { ...start, pollMs: where.pollMs, signal: stop.signal, redact: true })) {
      next = item.type === "chunk" ? item.offset + 1 : item.offset;
      res.write(`id: ${item.seq}\ndata: ${jsonLine(item)}\n\n`);
    }
    // The next offset: after the last item sent, else (resumed with nothing new) where the stream stands.
    next ??= (await ctx.engine.streams(where.id)).find((s) => s.name === where.name)?.chunks ?? 0;
    if (!stop.signal.aborted) res.write(`event: end\ndata: ${JSON.stringify({ next })}\n\n`);
  } catch (error) {
    // Headers are sent: the failure goes as an event of its own (not `error`, which EventSource uses for the connection).
    res.write(`event: failed\ndata: ${JSON.stringify({ message: (error as Error)?.message ?? String(error) })}\n\n`);
  } finally {
    clearInterval(keepAlive);
    where.open.delete(res);
    res.end();
  }
}

export async function streamText(ctx: UiContext, res: http.ServerResponse, id: string, name: string): Promise<void> {
  if (await refused(ctx, res, id)) return;
  let text = "";
  for await (const item of ctx.engine.readStream(id, name, { follow: false, redact: true })) {
    if (item.type === "chunk") text += chunkText(item.chunk, text);
  }
  send(res, 200, "text/plain; charset=utf-8", text);
}
