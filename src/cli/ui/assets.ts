/**
 * The UI's static files: its stylesheet, its one small script and its icon. Served from the UI's own
 * origin (the Content-Security-Policy allows scripts and styles from 'self' only, nothing inline).
 *
 * The script does one thing: it keeps the page's <main> live. It listens to the server's event
 * stream for this page (/events?path=…) and puts each new rendering of <main> in place, keeping
 * open inspectors open, a form being typed into untouched, and a run's stream text at its end
 * (unless scrolled back). Without it (scripts off) every page still works, reloaded by hand.
 */

export const UI_CSS = `
:root{--ok:#2f9e5e;--bad:#d64545;--warn:#d9980f;--reused:#4f7fe0;--wait:#8a63d2;--comp:#b0509f;--person:#0f8a8a;--muted:#6b7380;--bg:#f7f8fa;--fg:#1d2330;--line:#e3e6eb;--card:#fff}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;background:var(--bg);color:var(--fg)}
header.top{display:flex;gap:18px;align-items:center;padding:10px 24px;background:#1d2330;color:#fff}
header.top a{color:#dfe6f3;text-decoration:none;font-weight:600}
header.top a.here{color:#fff;border-bottom:2px solid #8fb1ff}
header.top .brand{font-weight:700;letter-spacing:.3px;margin-right:10px}
header.top .where{margin-left:auto;font-size:12px;color:#aab4c4}
header.top .live{font-size:12px;color:#9fe0b5}
main{padding:18px 24px 40px}
h1{font-size:20px;margin:0 0 10px;word-break:break-all}
h2{font-size:16px;margin:18px 0 8px}
a{color:#2f5fc4}
code,pre,textarea{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
pre{margin:4px 0;white-space:pre-wrap;word-break:break-word;background:#f1f3f6;padding:6px 8px;border-radius:4px;max-height:420px;overflow:auto}
.muted{color:var(--muted)}.small{font-size:12px}
.badge{display:inline-block;padding:1px 9px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;background:var(--muted);white-space:nowrap}
.t-ok.badge{background:var(--ok)}.t-bad.badge{background:var(--bad)}.t-warn.badge{background:var(--warn)}.t-wait.badge{background:var(--wait)}.t-comp.badge{background:var(--comp)}.t-reused.badge{background:var(--reused)}
table.runs{border-collapse:collapse;width:100%;background:var(--card);border:1px solid var(--line);border-radius:6px}
table.runs th,table.runs td{text-align:left;padding:6px 10px;border-top:1px solid var(--line);vertical-align:top}
table.runs th{background:#eef1f5;font-size:12px;color:var(--muted);border-top:none}
table.runs td.id{word-break:break-all}
form.filters{display:flex;gap:10px;align-items:end;margin:0 0 12px;flex-wrap:wrap}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:var(--muted);gap:2px}
input,select,textarea{font:inherit;padding:4px 6px;border:1px solid #c8ced8;border-radius:4px;background:#fff}
button{font:inherit;padding:4px 12px;border-radius:4px;border:1px solid #3a64c8;background:#3a64c8;color:#fff;cursor:pointer}
button.quiet{background:#fff;color:#3a64c8}
button.danger{border-color:var(--bad);background:var(--bad)}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 16px;margin:0 0 14px}
.facts dt{color:var(--muted)}.facts dd{margin:0;word-break:break-all}
.flash{padding:8px 12px;border-radius:4px;margin:0 0 12px;background:#e6f4ea;border-left:4px solid var(--ok)}
.flash.bad{background:#fbeaea;border-color:var(--bad)}
.card{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:10px 14px;margin:0 0 14px}
.card.t-warn{border-left:4px solid var(--warn)}.card.t-bad{border-left:4px solid var(--bad)}.card.t-wait{border-left:4px solid var(--wait)}
.actions{display:flex;gap:8px;flex-wrap:wrap;align-items:end;margin:8px 0}
.actions form{display:flex;gap:6px;align-items:end;flex-wrap:wrap}
.axis{display:grid;grid-template-columns:minmax(260px,34%) 1fr 190px;gap:10px;font-size:11px;color:var(--muted);margin:4px 0}
.axis .ticks{display:flex;justify-content:space-between}
.attempt{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:8px 14px;margin:0 0 12px}
.attempt h3{font-size:14px;margin:2px 0 6px}
.step{display:grid;grid-template-columns:minmax(260px,34%) 1fr 190px;gap:10px;align-items:start;padding:5px 0;border-top:1px solid var(--line)}
.step:first-of-type{border-top:none}
.step .name{word-break:break-all}
.step .name .label{font-size:12px;color:var(--muted);margin-left:4px}
.step .detail{display:block;font-size:12px;color:var(--muted);overflow-wrap:anywhere}
.step .call{display:block;font-size:12px;color:var(--bad);overflow-wrap:anywhere}
.step .info{font-size:12px;color:var(--muted);text-align:right;overflow-wrap:anywhere}
.glyph{display:inline-block;width:1.2em;text-align:center;font-weight:700}
.k-escalated .glyph{color:var(--warn)}.bar.k-escalated{background:var(--warn)}.step.k-escalated{background:linear-gradient(90deg,#fdf3dd,transparent 60%)}
.k-ran .glyph{color:var(--ok)}.k-failed .glyph{color:var(--bad)}.k-reused .glyph{color:var(--reused)}.k-redriven .glyph{color:var(--warn)}.k-person .glyph{color:var(--person)}.k-handled .glyph{color:var(--warn)}.k-wait .glyph{color:var(--wait)}.k-comp .glyph{color:var(--comp)}
.step.k-reused{background:linear-gradient(90deg,#eef3fd,transparent 60%)}
.step.k-redriven{background:linear-gradient(90deg,#fdf5e3,transparent 60%)}
.step.k-person{background:linear-gradient(90deg,#e3f5f5,transparent 60%)}
.step.k-handled{background:linear-gradient(90deg,#fdf0e0,transparent 60%)}
.track{position:relative;height:18px;background:#f1f3f6;border-radius:3px;margin-top:2px}
.track .bar{position:absolute;top:2px;bottom:2px;border-radius:3px;min-width:4px}
.bar.k-ran{background:var(--ok)}.bar.k-failed{background:var(--bad)}.bar.k-redriven{background:var(--warn)}.bar.k-person{background:var(--person)}.bar.k-handled{background:var(--warn)}.bar.k-wait{background:var(--wait)}.bar.k-comp{background:var(--comp)}
.bar.k-reused{background:repeating-linear-gradient(45deg,var(--reused) 0 4px,#cfdcf8 4px 8px);width:14px}
.bar.open{background-image:repeating-linear-gradient(-45deg,rgba(255,255,255,.45) 0 5px,transparent 5px 10px)}
details.inspect{margin-top:3px}
.stale-mark{color:var(--warn);text-transform:uppercase;font-size:11px}
details.inspect summary{cursor:pointer;font-size:12px;color:#2f5fc4}
.legend{display:flex;gap:14px;flex-wrap:wrap;font-size:12px;color:var(--muted);margin:6px 0 12px}
.legend span.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-2px;margin-right:4px}
.empty{color:var(--muted);padding:14px 0}
.card.stream pre{max-height:360px}.card.stream .cut{margin:4px 0}
nav.pages{display:flex;gap:18px;margin:12px 0}
nav.pages a.older{margin-left:auto}
`;

/** The tab's icon (browsers ask for /favicon.ico on every page): a step log's three rows, in the header's colours. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1d2330"/><rect x="7" y="8" width="18" height="4" rx="2" fill="#2f9e5e"/><rect x="7" y="14" width="14" height="4" rx="2" fill="#8fb1ff"/><rect x="7" y="20" width="10" height="4" rx="2" fill="#d9980f"/></svg>
`;

export const UI_JS = `
"use strict";
(function () {
  var main = document.querySelector("main");
  var live = document.querySelector(".live");
  if (!main || !window.EventSource) return;
  function toEnd(scrolled) {
    main.querySelectorAll("section[data-stream] pre").forEach(function (p) {
      var at = scrolled[p.parentNode.getAttribute("data-stream")];
      p.scrollTop = at === undefined ? p.scrollHeight : at;
    });
  }
  toEnd({});
  var path = location.pathname + location.search;
  var source = new EventSource("/events?path=" + encodeURIComponent(path) + "&digest=" + encodeURIComponent(main.getAttribute("data-digest") || ""));
  source.addEventListener("main", function (event) {
    var active = document.activeElement;
    // Someone typing into a form: leave the page as it is until they are done.
    if (active && (active.tagName === "TEXTAREA" || active.tagName === "INPUT" || active.tagName === "SELECT") && main.contains(active)) return;
    var open = {};
    main.querySelectorAll("details[data-key][open]").forEach(function (d) { open[d.getAttribute("data-key")] = true; });
    // A stream's text scrolled back by the reader stays there; one at its end follows the new chunks.
    var scrolled = {};
    main.querySelectorAll("section[data-stream] pre").forEach(function (p) {
      if (p.scrollTop + p.clientHeight < p.scrollHeight - 4) scrolled[p.parentNode.getAttribute("data-stream")] = p.scrollTop;
    });
    main.innerHTML = event.data;
    main.querySelectorAll("details[data-key]").forEach(function (d) { if (open[d.getAttribute("data-key")]) d.open = true; });
    toEnd(scrolled);
    document.body.setAttribute("data-updated", String(Date.now()));
  });
  source.addEventListener("open", function () { if (live) live.textContent = "● live"; });
  source.addEventListener("error", function () { if (live) live.textContent = "○ reconnecting"; });
})();
`;
