/**
 * `steplog ui`'s HTTP server: server-rendered pages over the store, kept live by a stream of
 * server-sent events per page, a run's streams as events of their own, and POSTed actions. Node's own http module; no framework.
 *
 * The store is the source of truth: each live page's server side looks at the store's change
 * marker every `pollMs`, renders its <main> again when the marker moved (and at least every
 * REFRESH_MS), and sends it when it changed, so runs moved on by other processes show up too
 * while an idle page costs one cheap read a poll.
 *
 * What protects the buttons (they change runs): the server listens on 127.0.0.1 unless told
 * otherwise; a request must name this server in its Host header (no DNS rebinding); a POST
 * must come from this origin (its Origin header, or Sec-Fetch-Site: same-origin) and carry the
 * token this process made at start, which only its own pages hold; `--read-only` refuses every
 * POST. Pages allow scripts and styles from this origin only.
 */

import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { isSteplogError } from "../../base/errors.js";
import { ACTIONS, runAction, type Action } from "./actions.js";
import { FAVICON_SVG, UI_CSS, UI_JS } from "./assets.js";
import { SECURITY_HEADERS, send, startEvents } from "./http.js";
import { h, mainDigest, page, type Rendered, type UiContext } from "./layout.js";
import { queuePage } from "./queue-page.js";
import { runPage } from "./run-page.js";
import { runsPage } from "./runs-page.js";
import { streamEvents, streamText } from "./stream-routes.js";

export interface UiServerOptions {
  host: string;
  port: number;
  /** How often a live page's <main> is rendered again to see whether it changed. Default 1000. */
  pollMs?: number;
}

export interface UiServer {
  url: string;
  close(): Promise<void>;
}

/**
 * A live page is rendered again at least this often, the store's marker unmoved: what a page
 * derives without a write (an owner that died is `interrupted`) shows within it.
 */
const REFRESH_MS = 15_000;

/** A per-process secret for the forms: a POST without it is refused. */
export function newToken(): string {
  return crypto.randomBytes(24).toString("base64url");
}

/** The page a path shows: `/`, `/queue`, `/runs/<id>`; undefined for any other path. */
async function render(ctx: UiContext, url: URL): Promise<Rendered | undefined> {
  if (url.pathname === "/" || url.pathname === "/runs") return runsPage(ctx, url);
  if (url.pathname === "/queue") return queuePage(ctx, url);
  const run = /^\/runs\/([^/]+)$/.exec(url.pathname);
  if (run) return runPage(ctx, url, decodeURIComponent(run[1]!));
  return undefined;
}

export async function startUiServer(ctx: UiContext, options: UiServerOptions): Promise<UiServer> {
  const pollMs = options.pollMs ?? 1000;
  const streams = new Set<http.ServerResponse>();
  let origin = "";
  const allowedHosts = new Set<string>();

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return res.destroy();
      send(res, 500, "text/html; charset=utf-8", errorPage(`The server could not answer: ${(error as Error)?.message ?? String(error)}`));
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // Only requests addressed to this server by name: a page on another site cannot reach it by a DNS name of its own.
    if (!allowedHosts.has((req.headers.host ?? "").toLowerCase()))
      return send(res, 421, "text/plain; charset=utf-8", "Misdirected request: this is a local steplog ui.\n");
    const url = new URL(req.url ?? "/", origin);
    if (req.method === "GET" && url.pathname === "/ui.css") return send(res, 200, "text/css; charset=utf-8", UI_CSS);
    if (req.method === "GET" && url.pathname === "/ui.js") return send(res, 200, "text/javascript; charset=utf-8", UI_JS);
    if (req.method === "GET" && url.pathname === "/favicon.ico") return send(res, 200, "image/svg+xml", FAVICON_SVG);
    if (req.method === "GET" && url.pathname === "/events") return stream(req, res, url);
    if (req.method === "POST") return post(req, res, url);
    if (req.method !== "GET") return send(res, 405, "text/plain; charset=utf-8", "Method not allowed.\n");
    const streamed = /^\/runs\/([^/]+)\/streams\/([^/]+)(\/text)?$/.exec(url.pathname);
    if (streamed) {
      const [id, name] = [decodeURIComponent(streamed[1]!), decodeURIComponent(streamed[2]!)];
      return streamed[3] ? streamText(ctx, res, id, name) : streamEvents(ctx, req, res, url, { id, name, pollMs, open: streams });
    }
    const exported = /^\/runs\/([^/]+)\/export\.json$/.exec(url.pathname);
    if (exported) return exportRun(res, decodeURIComponent(exported[1]!));
    const rendered = await render(ctx, url);
    if (!rendered)
      return send(
        res,
        404,
        "text/html; charset=utf-8",
        page(ctx, { status: 404, title: "Not found", nav: "runs", main: `<h1>Not found</h1><p><a href="/">All runs</a></p>` }),
      );
    send(res, rendered.status, "text/html; charset=utf-8", page(ctx, rendered));
  }

  /**
   * The run's export document (with its child runs), as `steplog export --children` writes it, to
   * download: sealed values stay sealed; with redaction rules given, redacted (for reading, not
   * for importing), as every page is.
   */
  async function exportRun(res: http.ServerResponse, id: string): Promise<void> {
    let doc: unknown;
    try {
      doc = await ctx.engine.export(id, { children: true, ...(ctx.redacting ? { redact: true } : {}) });
    } catch (error) {
      return send(res, isSteplogError(error) && error.code === "RUN_NOT_FOUND" ? 404 : 500, "text/plain; charset=utf-8", `${(error as Error).message}\n`);
    }
    const file = `${id.replace(/[^A-Za-z0-9._-]/g, "_")}.steplog.json`;
    res.writeHead(200, { ...SECURITY_HEADERS, "Content-Type": "application/json; charset=utf-8", "Content-Disposition": `attachment; filename="${file}"` });
    res.end(`${JSON.stringify(doc, null, 2)}\n`);
  }

  async function post(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> {
    if (ctx.readOnly) return send(res, 403, "text/plain; charset=utf-8", "This steplog ui is read-only: it changes nothing.\n");
    const from = req.headers.origin;
    const sameOrigin = from !== undefined ? from === origin : req.headers["sec-fetch-site"] === "same-origin";
    if (!sameOrigin) return send(res, 403, "text/plain; charset=utf-8", "Refused: the request did not come from this steplog ui's own pages.\n");
    const body = await readBody(req, 64 * 1024);
    if (body === undefined) return send(res, 413, "text/plain; charset=utf-8", "Refused: the form is too large.\n");
    const form = new URLSearchParams(body);
    const given = Buffer.from(form.get("token") ?? "");
    const token = Buffer.from(ctx.token);
    if (given.length !== token.length || !crypto.timingSafeEqual(given, token)) {
      return send(res, 403, "text/plain; charset=utf-8", "Refused: the form's token is not this steplog ui's (reload the page).\n");
    }
    const match = /^\/runs\/([^/]+)\/([a-z]+)$/.exec(url.pathname);
    if (!match || !(ACTIONS as readonly string[]).includes(match[2]!)) return send(res, 404, "text/plain; charset=utf-8", "No such action.\n");
    // Back to the page the form was on (its path, from the Referer), else the run's page.
    const referer = req.headers.referer;
    const back = referer && referer.startsWith(`${origin}/`) ? referer.slice(origin.length) : "";
    const outcome = await runAction(ctx, match[2] as Action, decodeURIComponent(match[1]!), form, back.replace(/[?#].*$/, ""));
    res.writeHead(303, { ...SECURITY_HEADERS, Location: outcome.location });
    res.end();
  }

  /** Server-sent events for one page: its <main> again whenever it changed. */
  function stream(req: http.IncomingMessage, res: http.ServerResponse, url: URL): void {
    const path = url.searchParams.get("path") ?? "/";
    const target = new URL(path.startsWith("/") && !path.startsWith("//") ? path : "/", origin);
    startEvents(res);
    streams.add(res);
    // What the page shows: the digest of the <main> it was served with (its script sends it), so
    // a change made between serving the page and this stream's first look is sent too.
    let last: string | undefined = url.searchParams.get("digest") ?? undefined;
    let marker: string | undefined;
    let renderedAt = 0;
    let busy = false;
    const look = async () => {
      if (busy) return;
      busy = true;
      try {
        // Nothing written since the last rendering: no need to read the runs again.
        const seen = await ctx.engine.store.changeMarker?.();
        if (seen !== undefined && seen === marker && Date.now() - renderedAt < REFRESH_MS) return;
        const startedAt = Date.now();
        const rendered = await render(ctx, target);
        const main = rendered?.main ?? "";
        const digest = mainDigest(main);
        if (last !== undefined && digest !== last)
          res.write(
            `event: main\n${main
              .split("\n")
              .map((line) => `data: ${line}`)
              .join("\n")}\n\n`,
          );
        last = digest;
        // Kept once rendered: a failed look leaves it, so the next one tries again.
        marker = seen;
        renderedAt = startedAt;
      } catch {
        // The store may be restarting: the next look tries again.
      } finally {
        busy = false;
      }
    };
    void look();
    const timer = setInterval(() => void look(), pollMs);
    const keepAlive = setInterval(() => res.write(": keep-alive\n\n"), 15_000);
    req.on("close", () => {
      clearInterval(timer);
      clearInterval(keepAlive);
      streams.delete(res);
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const hostPart = address.family === "IPv6" ? `[${address.address}]` : address.address;
  origin = `http://${hostPart}:${address.port}`;
  allowedHosts.add(`${hostPart}:${address.port}`.toLowerCase());
  if (options.host === "127.0.0.1" || options.host === "::1" || options.host === "localhost") {
    for (const name of ["localhost", "127.0.0.1", "[::1]"]) allowedHosts.add(`${name}:${address.port}`);
  } else allowedHosts.add(`${options.host}:${address.port}`.toLowerCase());
  return {
    url: origin,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of streams) res.end();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function errorPage(message: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>steplog ui</title><link rel="icon" href="/favicon.ico" type="image/svg+xml"><link rel="stylesheet" href="/ui.css"></head><body><main><h1>Something went wrong</h1><p>${h(message)}</p></main></body></html>`;
}

/** The request's body as text, or undefined past `limit` bytes. */
function readBody(req: http.IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        resolve(undefined);
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
