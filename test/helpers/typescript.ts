// The two TypeScript compilers users have: 5.x (the root's dev dependency) and 7.x, the native
// compiler, kept in its own package (test/typescript7) because both packages have a `tsc` bin.
// `npm ci --prefix test/typescript7` installs it (.ci/run does); without it the tests that use it
// fail, saying so, rather than skip.
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface Compiler {
  name: string;
  /** The package's bin/tsc, a Node script (TypeScript 7's starts its native binary). */
  tsc: string;
}

export const COMPILERS: Compiler[] = [
  { name: "TypeScript 5", tsc: path.join(ROOT, "node_modules", "typescript", "bin", "tsc") },
  { name: "TypeScript 7", tsc: path.join(ROOT, "test", "typescript7", "node_modules", "typescript", "bin", "tsc") },
];

/** The compiler's version, e.g. "7.0.2", read from its package.json. */
export function compilerVersion(compiler: Compiler): string {
  const pkg = path.join(path.dirname(compiler.tsc), "..", "package.json");
  if (!fs.existsSync(pkg)) throw new Error(`${compiler.name} is not installed (${pkg} is missing): run npm ci --prefix test/typescript7`);
  return (JSON.parse(fs.readFileSync(pkg, "utf8")) as { version: string }).version;
}

/** Type-check the project at `tsconfig`; resolves to tsc's diagnostics, "" when there are none. */
export async function typeCheck(compiler: Compiler, tsconfig: string): Promise<string> {
  compilerVersion(compiler);
  try {
    await execFileAsync(process.execPath, [compiler.tsc, "-p", tsconfig, "--pretty", "false"], {
      cwd: path.dirname(tsconfig),
      timeout: 120_000,
      maxBuffer: 16 << 20,
    });
    return "";
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    const out = `${e.stdout ?? ""}${e.stderr ?? ""}`.trim();
    return out || e.message;
  }
}
