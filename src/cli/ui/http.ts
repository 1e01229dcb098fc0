/**
 * What every answer of `steplog ui` carries (headers that keep its pages to its own origin), and
 * the plain answers the server and its routes send.
 */

import type http from "node:http";

export const SECURITY_HEADERS = {
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "same-origin",
  "Cache-Control": "no-store",
};

export function send(res: http.ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, "Content-Type": type });
  res.end(body);
}

/** Start a response of server-sent events (the events follow, each ending with a blank line). */
export function startEvents(res: http.ServerResponse): void {
  res.writeHead(200, { ...SECURITY_HEADERS, "Content-Type": "text/event-stream; charset=utf-8", Connection: "keep-alive" });
  res.write(": steplog ui\n\n");
}
