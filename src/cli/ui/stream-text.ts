/**
 * A stream as text, the way `steplog ui` shows it (and `steplog stream` prints it): string
 * chunks joined as they are, any other chunk as one line of JSON.
 */

import { oneLineJson } from "../format.js";

/** One chunk as JSON on one line (dates, bigints, maps and sets as oneLineJson writes them). */
export function jsonLine(value: unknown): string {
  return oneLineJson(value, Number.MAX_SAFE_INTEGER);
}

/** A chunk's text, given the text before it: a JSON chunk starts on a line of its own and ends it. */
export function chunkText(chunk: unknown, before: string): string {
  if (typeof chunk === "string") return chunk;
  return `${before !== "" && !before.endsWith("\n") ? "\n" : ""}${jsonLine(chunk)}\n`;
}

/** The last `limit` characters of a stream's text, and what was left out before them. */
export interface StreamTail {
  text: string;
  /** Whole chunks left out before the text shown (one cut in the middle counts as shown). */
  cutChunks: number;
  /** Characters left out before the text shown. */
  cutChars: number;
}

export function streamTail(chunks: readonly unknown[], limit: number): StreamTail {
  const pieces: string[] = [];
  let before = "";
  for (const chunk of chunks) {
    const piece = chunkText(chunk, before);
    pieces.push(piece);
    before = piece === "" ? before : piece;
  }
  // From the end back, as many pieces as fit; the first one kept may be cut.
  let kept = 0;
  let size = 0;
  let first = pieces.length;
  while (first > 0 && size < limit) {
    first--;
    size += pieces[first]!.length;
    kept++;
  }
  const total = pieces.reduce((n, p) => n + p.length, 0);
  let text = pieces.slice(first).join("");
  if (text.length > limit) text = text.slice(text.length - limit);
  // Not half a character: a cut between a surrogate pair drops its second half too.
  if (/^[\uDC00-\uDFFF]/.test(text)) text = text.slice(1);
  return { text, cutChunks: pieces.length - kept, cutChars: total - text.length };
}
