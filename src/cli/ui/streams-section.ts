/**
 * The run page's streams (what the run wrote with ctx.stream): a section each, with its name,
 * its standing chunks, closed or open, and its text as it stands now (the last STREAM_SHOWN
 * characters; a note says what was cut, with a link to the whole). Rendered with the rest of
 * the page, so the page's live updates carry new chunks and resets too.
 */

import { isSteplogError } from "../../base/errors.js";
import type { StreamInfo } from "../../operations/stream-list.js";
import { streamTail } from "./stream-text.js";
import { h, runHref, type UiContext } from "./layout.js";

/** How much of a stream's text the page shows: its last 64 KB (as characters). */
export const STREAM_SHOWN = 64 * 1024;

/** A stream's address under its run: `/runs/<id>/streams/<name>` (its events), `…/text` (all of it as text). */
export const streamHref = (runId: string, name: string) => `${runHref(runId)}/streams/${encodeURIComponent(name)}`;

export async function streamsSection(ctx: UiContext, runId: string): Promise<string> {
  let streams: StreamInfo[];
  try {
    streams = await ctx.engine.streams(runId);
  } catch (error) {
    // A custom store that keeps no streams: the page has no section for them.
    if (isSteplogError(error, "STREAMS_UNSUPPORTED")) return "";
    throw error;
  }
  if (streams.length === 0) return "";
  const sections = await Promise.all(streams.map((s) => streamSection(ctx, runId, s)));
  return `<h2>Streams <span class="muted small">${streams.length}</span></h2>\n${sections.join("\n")}`;
}

async function streamSection(ctx: UiContext, runId: string, stream: StreamInfo): Promise<string> {
  const chunks: unknown[] = [];
  // The standing chunks (redacted as step values are when the UI redacts).
  for await (const item of ctx.engine.readStream(runId, stream.name, { follow: false, redact: true })) {
    if (item.type === "chunk") chunks.push(item.chunk);
  }
  const tail = streamTail(chunks, STREAM_SHOWN);
  const href = streamHref(runId, stream.name);
  const whole = `<a class="small" href="${href}/text">whole stream</a>`;
  const state = `${chunks.length} chunk${chunks.length === 1 ? "" : "s"} · ${stream.closed ? "closed" : "open"}`;
  const cut =
    tail.cutChars > 0
      ? `<p class="muted small cut">Only the last ${Math.round(STREAM_SHOWN / 1024)} KB is shown: ${tail.cutChunks} earlier chunk${tail.cutChunks === 1 ? "" : "s"} (${tail.cutChars} characters) left out. ${whole}</p>`
      : "";
  const body = chunks.length === 0 ? `<p class="muted small">no chunks</p>` : `<pre class="stream-text">${h(tail.text, true)}</pre>`;
  return `<section class="card stream" data-stream="${h(stream.name)}"><strong>${h(stream.name)}</strong> <span class="muted small state">${h(state)}</span> ${whole}
${cut}${body}</section>`;
}
