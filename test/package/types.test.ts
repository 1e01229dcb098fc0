/**
 * The public types as an app sees them: a tiny consumer that imports every entry, type-checked
 * with `strict` and no `types` entry (TypeScript 7's default: no @types/node, so no Buffer,
 * NodeJS.* or node:* modules), the library's .d.ts/.d.cts checked too (skipLibCheck off), under
 * TypeScript 5 and 7, as ESM and as CommonJS, with moduleResolution node16, nodenext and bundler;
 * and once more with "types": ["node"], as most Node apps have it.
 * `lib` is left to its default, as `tsc --init` leaves it: the web globals every runtime has
 * (AbortSignal, ReadableStream) come from there.
 *
 * The package is the built dist/ (run `npx tsup` after changing src/), copied with its
 * package.json into the consumer's node_modules, so nothing of this repo's node_modules (its
 * @types/node above all) is within reach of the declaration files.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { entries } from "../../tsup.config.js";
import { tmpDir } from "../helpers/tmp.js";
import { COMPILERS, typeCheck } from "../helpers/typescript.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

const IMPORTS = `import { z } from "zod";
import { createEngine, defineWorkflow, encryptedCodec, isSteplogError, type Engine, type RunResult, type SteplogError, type Store } from "steplog";
import { sqliteStore } from "steplog/sqlite";
import { postgresStore } from "steplog/postgres";
import { jsonlStore } from "steplog/jsonl";
import { memoryStore } from "steplog/memory";
import { testWorkflow } from "steplog/testing";
import { durableTools, messagesFromSteps, type OpenAIMessage } from "steplog/agents";
`;

// Each @ts-expect-error fails the check if the type under it had turned into any.
const BODY = `
export const double = defineWorkflow({
  name: "double",
  args: z.object({ n: z.number() }),
  async run(ctx, args) {
    const doubled = await ctx.step("double", { effect: "idempotent" }, async ({ idempotencyKey, signal }) => {
      const key: string = idempotencyKey;
      const aborted: boolean = signal.aborted;
      void [key, aborted];
      return args.n * 2;
    });
    // @ts-expect-error args.n is a number
    const wrong: string = args.n;
    void wrong;
    return { doubled };
  },
});

export async function main(): Promise<number> {
  const stores: Store[] = [
    memoryStore(),
    sqliteStore({ path: "steplog.db", durability: "process" }),
    jsonlStore({ path: "steplog.jsonl" }),
    postgresStore({ connectionString: "postgres://localhost/app", ssl: { rejectUnauthorized: false } }),
  ];
  const codec = encryptedCodec({ keys: { k1: new Uint8Array(32), k2: "base64 or hex text" }, current: "k1" });
  const engine: Engine = createEngine({ store: stores[0]!, codec, workflows: [double] });
  const result: RunResult<{ doubled: number }> = await engine.start(double, { n: 21 }, { id: "21", ifExists: "attach" });
  // @ts-expect-error n must be a number
  await engine.start(double, { n: "21" });
  const tested = await testWorkflow(double, { args: { n: 1 }, earlier: { steps: { double: 2 } } });
  const ran: string[] = tested.ran;
  const caught: unknown = new Error("not ours");
  if (isSteplogError(caught)) {
    const code: SteplogError["code"] = caught.code;
    void code;
  }
  const agent = defineWorkflow({
    name: "agent",
    async run(ctx) {
      const tools = durableTools(ctx, { add: (input: { a: number; b: number }) => input.a + input.b });
      return tools.add({ a: 1, b: 2 });
    },
  });
  const history: OpenAIMessage[] = messagesFromSteps(await engine.get((await engine.start(agent, undefined)).id));
  void [ran, history];
  await engine.close();
  return result.value?.doubled ?? 0;
}
`;

/** How a consumer resolves the package: its tsconfig options and the files it compiles. */
const SETUPS = {
  nodenext: { options: { module: "nodenext", moduleResolution: "nodenext" }, files: ["esm.ts", "cjs.cts"] },
  node16: { options: { module: "node16", moduleResolution: "node16" }, files: ["esm.ts", "cjs.cts"] },
  bundler: { options: { module: "esnext", moduleResolution: "bundler" }, files: ["esm.ts"] },
  // Most Node apps do list @types/node, and steplog's types must sit beside it too. Only this
  // setup can reach it (the repo's, by typeRoots): a .d.ts that needed it would fail the others.
  "nodenext with @types/node": {
    options: { module: "nodenext", moduleResolution: "nodenext", types: ["node"], typeRoots: [path.join(ROOT, "node_modules", "@types")] },
    files: ["esm.ts", "cjs.cts"],
  },
} as const;

let project = "";

beforeAll(() => {
  for (const name of Object.keys(entries)) {
    if (!fs.existsSync(path.join(ROOT, "dist", `${name}.d.ts`))) throw new Error(`dist/${name}.d.ts is missing: run npx tsup first (npm test does).`);
  }
  project = tmpDir("steplog-types-");
  const installed = path.join(project, "node_modules", "steplog");
  fs.mkdirSync(path.join(installed, "dist"), { recursive: true });
  fs.copyFileSync(path.join(ROOT, "package.json"), path.join(installed, "package.json"));
  for (const file of fs.readdirSync(path.join(ROOT, "dist"))) {
    if (/\.d\.c?ts$/.test(file)) fs.copyFileSync(path.join(ROOT, "dist", file), path.join(installed, "dist", file));
  }
  // zod, the app's own schema library, which brings no Node types either.
  fs.symlinkSync(path.join(ROOT, "node_modules", "zod"), path.join(project, "node_modules", "zod"), "dir");
  fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  fs.writeFileSync(path.join(project, "esm.ts"), IMPORTS + BODY);
  // The CommonJS twin: the same code, plus the require form of an import.
  fs.writeFileSync(path.join(project, "cjs.cts"), `${IMPORTS}import steplog = require("steplog");\nvoid steplog.createEngine;\n${BODY}`);
  for (const [name, setup] of Object.entries(SETUPS)) {
    const compilerOptions = { target: "es2022", strict: true, noEmit: true, skipLibCheck: false, types: [], ...setup.options };
    fs.writeFileSync(path.join(project, `tsconfig.${name.replace(/\W+/g, "-")}.json`), JSON.stringify({ compilerOptions, files: setup.files }, null, 2));
  }
});

describe.each(COMPILERS)("the public types under $name", (compiler) => {
  it.each(Object.keys(SETUPS))(
    "compile in a strict consumer, every entry imported (%s)",
    async (setup) => {
      expect(await typeCheck(compiler, path.join(project, `tsconfig.${setup.replace(/\W+/g, "-")}.json`))).toBe("");
      // TypeScript 5 takes half a minute here when the suite loads both cores.
    },
    120_000,
  );
});

describe("the public declaration files", () => {
  it("name no Node-only global or module (Buffer, NodeJS.*, node:*), which an app without @types/node lacks", () => {
    const offending = fs
      .readdirSync(path.join(ROOT, "dist"))
      .filter((file) => /\.d\.c?ts$/.test(file))
      .flatMap((file) =>
        fs
          .readFileSync(path.join(ROOT, "dist", file), "utf8")
          .split("\n")
          .filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line) && /\bBuffer\b|\bNodeJS\.|from ['"]node:|reference types="node"/.test(line))
          .map((line) => `${file}: ${line.trim()}`),
      );
    expect(offending).toEqual([]);
  });
});
