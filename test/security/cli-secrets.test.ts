// A step returning a secret can be run, continued and inspected with the steplog command without
// the secret ever being written in plain text; the HTML timeline of hostile values runs no script.
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, encryptedCodec } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { tmpDir } from "../helpers/tmp.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const BIN = path.join(ROOT, "dist", "cli.js");
const WORKFLOW = path.join(import.meta.dirname, "fixtures", "secret-workflow.mjs");
const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => fs.existsSync(p));

function steplog(args: string[], env: Record<string, string>, cwd: string) {
  const out = spawnSync(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, NO_COLOR: "1", ...env }, encoding: "utf8" });
  return { code: out.status, signal: out.signal, stdout: out.stdout, stderr: out.stderr };
}

function storeBytes(dir: string): string {
  return fs
    .readdirSync(dir)
    .filter((f) => f.startsWith("steplog.db"))
    .map((f) => fs.readFileSync(path.join(dir, f)).toString("latin1"))
    .join("");
}

describe("secrets through the steplog command", () => {
  it("reject, approve, send, cancel and resolve without the key: refused before anything is written (CODEC_KEY_MISSING)", async () => {
    const cwd = tmpDir();
    const db = path.join(cwd, "steplog.db");
    const key = crypto.randomBytes(32);
    const ship = defineWorkflow({ name: "ship", run: (ctx) => ctx.step("ship", { approval: true }, async () => "shipped") });
    const engine = createEngine({ store: sqliteStore({ path: db }), workflows: [ship], codec: encryptedCodec({ keys: { k1: key }, current: "k1" }) });
    expect(await engine.start(ship, undefined, { id: "a" })).toMatchObject({ status: "waiting" });
    await engine.close();
    for (const args of [
      ["reject", "a", "ship", "--reason", "plaintext-reason", "--by", "eve"],
      ["approve", "a", "ship"],
      ["send", "a", "go", '"plaintext"'],
      ["cancel", "a"],
      ["resolve", "a", "ship", "--value", '"plaintext"'],
    ]) {
      const r = steplog([...args, "--db", db], {}, cwd);
      expect(r.code, `${args[0]}: ${r.stderr}`).not.toBe(0);
      expect(r.stderr, args[0]).toContain("CODEC_KEY_MISSING");
    }
    expect(storeBytes(cwd)).not.toContain("plaintext");
    const reader = createEngine({ store: sqliteStore({ path: db }), codec: encryptedCodec({ keys: { k1: key }, current: "k1" }) });
    expect(await reader.get("a")).toMatchObject({ status: "waiting", waitingFor: { kind: "approval" } });
    await reader.close();
  });

  it("run, crash, continue and show with an encrypted store: the secret is never stored in plain text, and --redact hides it on screen", async () => {
    const cwd = tmpDir();
    const secret = `sk-${crypto.randomBytes(12).toString("hex")}`;
    const key = crypto.randomBytes(32).toString("base64");
    const env = { THE_SECRET: secret, STEPLOG_KEYS: `k1=${key}`, CRASH_ONCE_FILE: path.join(cwd, "crashed") };
    const db = path.join(cwd, "steplog.db");
    const first = steplog(["run", WORKFLOW, "--db", db, "--id", "s1"], env, cwd);
    expect(first.signal ?? first.code, first.stderr).toBe("SIGKILL");
    const second = steplog(["run", "--continue", "--id", "s1", "--db", db, "--json"], env, cwd);
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ status: "completed" });

    const shown = steplog(["show", "s1", "--db", db, "--json", "--redact", "token"], env, cwd);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).not.toContain(secret);
    expect(shown.stdout).toContain("[redacted]");
    const html = path.join(cwd, "t.html");
    expect(steplog(["show", "s1", "--db", db, "--html", html, "--redact", "token"], env, cwd).code).toBe(0);
    expect(fs.readFileSync(html, "utf8")).not.toContain(secret);
    // The page holds what the store holds, decrypted: owner-only, as the store files are.
    expect(fs.statSync(html).mode & 0o777).toBe(0o600);
    // With the key and without --redact, the operator sees it; without the key, nothing is readable.
    expect(steplog(["show", "s1", "--db", db, "--json"], env, cwd).stdout).toContain(secret);
    const noKey = steplog(["show", "s1", "--db", db, "--json"], { THE_SECRET: "" }, cwd);
    expect(noKey.code).not.toBe(0);
    expect(noKey.stdout + noKey.stderr).toContain("CODEC_KEY_MISSING");
    // The plain columns still answer.
    const runs = steplog(["runs", "--db", db, "--json"], { THE_SECRET: "" }, cwd);
    expect(runs.stdout).toContain('"completed"');

    expect(storeBytes(cwd)).not.toContain(secret);
    expect(storeBytes(cwd)).toContain("enc:v1:k1:");
  });

  const inBrowser = CHROMIUM || process.env.CI ? it : it.skip;
  inBrowser(
    "the HTML timeline of hostile values opens in headless Chromium and no script runs",
    async () => {
      if (!CHROMIUM) throw new Error("Chromium is not installed: apt-get install -y chromium");
      const cwd = tmpDir();
      const db = path.join(cwd, "hostile.db");
      const PWN = `document.title='PWNED';document.documentElement.setAttribute('data-pwned','1')`;
      const hostile = defineWorkflow({
        name: `<script>${PWN}</script>`,
        async run(ctx) {
          await ctx.step(`<img src=x onerror="${PWN}">`, async () => ({
            link: `javascript:${PWN}`,
            html: `<script>${PWN}</script><img src=x onerror="${PWN}"><svg onload="${PWN}">`,
            attr: `" onmouseover="${PWN}" x="`,
          }));
          throw new Error(`</pre><script>${PWN}</script><a href="javascript:${PWN}">click</a>`);
        },
      });
      const engine = createEngine({ store: sqliteStore({ path: db }) });
      await engine.start(hostile, undefined, { id: `<script>${PWN}</script>` });
      await engine.close();
      const page = path.join(cwd, "hostile.html");
      const made = steplog(["show", `<script>${PWN}</script>`, "--db", db, "--html", page], {}, cwd);
      expect(made.code, made.stderr).toBe(0);
      const dom = spawnSync(
        CHROMIUM,
        [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-background-networking",
          "--disable-component-update",
          "--no-first-run",
          "--disable-sync",
          `--user-data-dir=${path.join(cwd, "profile")}`,
          "--virtual-time-budget=3000",
          "--dump-dom",
          `file://${page}`,
        ],
        { encoding: "utf8", timeout: 60_000 },
      );
      expect(dom.status, dom.stderr).toBe(0);
      const html = dom.stdout;
      // The page loaded (the hostile text is there, as text) and nothing it holds ran or became markup.
      expect(html).toContain("PWNED");
      expect(html).not.toMatch(/<html[^>]*data-pwned/);
      expect(html).not.toMatch(/<title>PWNED<\/title>/);
      expect(html).not.toMatch(/<script\b/i);
      expect(html).not.toMatch(/<(img|svg|iframe|a)\b[^>]*\son\w+=/i);
      expect(html).not.toMatch(/<a\b[^>]*href="javascript:/i);
    },
    90_000,
  );
});

describe("what the steplog command never prints", () => {
  it("STEPLOG_KEYS takes base64url keys as encryptedCodec does", () => {
    const cwd = tmpDir();
    let key = crypto.randomBytes(32).toString("base64url");
    while (!/[-_]/.test(key)) key = crypto.randomBytes(32).toString("base64url");
    const out = steplog(["runs", "--db", path.join(cwd, "steplog.db"), "--create"], { STEPLOG_KEYS: `k1=${key}` }, cwd);
    expect(out.code, out.stderr).toBe(0);
  });

  it("a malformed STEPLOG_KEYS is refused naming the pair by its position, never echoing it", () => {
    const cwd = tmpDir();
    const key = crypto.randomBytes(32).toString("base64");
    const hexKey = crypto.randomBytes(32).toString("hex");
    for (const keys of [key, `prod=${hexKey},backup:${key}`, `k1=${key},k2=${key.slice(0, 20)}`]) {
      const out = steplog(["runs", "--db", path.join(cwd, "steplog.db")], { STEPLOG_KEYS: keys }, cwd);
      expect(out.code, out.stderr).toBe(2);
      expect(out.stderr).toContain("STEPLOG_KEYS: pair");
      for (const secret of [key, key.slice(0, 20), hexKey]) expect(out.stdout + out.stderr).not.toContain(secret);
    }
  });

  it("a password in a connection URL is hidden wherever it is: the user part (even holding an @) or the query", async () => {
    const { redactUrl } = await import("../../src/cli/session.js");
    expect(redactUrl("postgres://u:p@ss@h/db")).toBe("postgres://u:***@h/db");
    expect(redactUrl("postgres://u@h/db?password=hunter2&sslmode=require")).toBe("postgres://u@h/db?password=***&sslmode=require");
    expect(redactUrl("postgres://u:hunter2@h:5432/db")).toBe("postgres://u:***@h:5432/db");
    expect(redactUrl(".steplog/steplog.db")).toBe(".steplog/steplog.db");
    // Not parseable as a URL (a "/" in the password): everything up to the last "@" is hidden.
    expect(redactUrl("postgres://app:Sup3r/Secret@127.0.0.1:5432/test")).toBe("postgres://app:***@127.0.0.1:5432/test");
    // Digits then "/" read as a port by URL: still the password.
    expect(redactUrl("postgres://u:12/ss@host/db")).toBe("postgres://u:***@host/db");
    expect(redactUrl("postgres://u:1234?x@host/db")).toBe("postgres://u:***@host/db");
  });

  it("--json output escapes C1 controls and bidirectional marks a terminal would act on; text output escapes U+061C too", async () => {
    const { safe, terminalJson } = await import("../../src/cli/format.js");
    const hostile = `a\u202eb\u009bc\u061cd`;
    const json = terminalJson(JSON.stringify({ v: hostile }));
    expect(json).toBe(String.raw`{"v":"a\u202eb\u009bc\u061cd"}`);
    expect(JSON.parse(json)).toEqual({ v: hostile });
    expect(safe(hostile)).toBe(String.raw`a\u202eb\u009bc\u061cd`);
  });
});
