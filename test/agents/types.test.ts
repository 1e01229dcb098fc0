// A tool reads the step's idempotency key from its options without a type error, in each stack:
// each case below is compiled by the TypeScript compiler against the installed packages' own
// types (the AI SDK, the OpenAI Agents SDK, LangChain) and steplog/agents' exported types, as
// a program of its own (the AI SDK case declares a module augmentation, which must not leak
// into the others). The first case checks the check: without steplog's type, the same tool is
// a type error.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const config = ts.parseJsonConfigFileContent(JSON.parse(fs.readFileSync(path.join(repoRoot, "tsconfig.json"), "utf8")), ts.sys, repoRoot);
/** The packages' declaration files, parsed once for every case. */
const parsed = new Map<string, ts.SourceFile | undefined>();

/**
 * Compiler options that make `import "ai"` load the declarations of the devDependency alias `ai7`
 * (AI SDK 7), as it does in an app that has ai 7 installed; none for "ai" (AI SDK 6).
 */
function aiSdkOptions(name: string): ts.CompilerOptions {
  if (name === "ai") return {};
  const types = path.join(repoRoot, "node_modules", name, "dist");
  return { paths: { ai: [path.join(types, "index.d.ts")], "ai/test": [path.join(types, "test", "index.d.ts")] } };
}

/** The diagnostics of one virtual file in test/agents/, compiled with the repo's compiler options (and `extra`). */
function compile(source: string, extra: ts.CompilerOptions = {}): string[] {
  const file = path.join(repoRoot, "test", "agents", `__types_case_${Math.random().toString(36).slice(2)}.ts`);
  const host = ts.createCompilerHost(config.options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? source : readFile.call(host, name));
  host.getSourceFile = (name, language, ...rest) => {
    if (name === file) return ts.createSourceFile(name, source, language, true);
    if (!parsed.has(name)) parsed.set(name, getSourceFile.call(host, name, language, ...rest));
    return parsed.get(name);
  };
  const program = ts.createProgram({ rootNames: [file], options: { ...config.options, ...extra, noEmit: true }, host });
  return ts
    .getPreEmitDiagnostics(program, program.getSourceFile(file))
    .map(
      (d) =>
        `${d.start === undefined ? "" : `${d.file!.getLineAndCharacterOfPosition(d.start).line + 1}: `}${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`,
    );
}

const AI_SDK_TOOLS = `
import { generateText, tool, type LanguageModel } from "ai";
import { z } from "zod";
import { durableTools } from "../../src/entries/agents.js";
import type { WorkflowContext } from "../../src/entries/index.js";
declare const ctx: WorkflowContext;
declare const model: LanguageModel;
`;

describe("reading idempotencyKey in a tool, typed", { timeout: 120_000 }, () => {
  describe.each(["ai", "ai7"])("AI SDK (%s)", (name) => {
    const options = aiSdkOptions(name);
    // ai 7's ToolExecutionOptions has a type parameter (the tool's context): a declaration must repeat it, an annotation give it.
    const declared = name === "ai7" ? "ToolExecutionOptions<CONTEXT>" : "ToolExecutionOptions";
    const annotated = name === "ai7" ? "ToolExecutionOptions<unknown>" : "ToolExecutionOptions";

    it("the check compiles against the major it names: isStepCount exists in ai 7 only", () => {
      const errors = compile(`import { isStepCount } from "ai";\nexport const stop = isStepCount(3);\n`, options);
      if (name === "ai7") expect(errors).toEqual([]);
      else expect(errors.join("\n")).toMatch(/no exported member named 'isStepCount'/);
    });

    it("durableModel gives back the model's own type: generateText and streamText take it", () => {
      const errors = compile(
        `${AI_SDK_TOOLS}
import { streamText } from "ai";
import { durableModel } from "../../src/entries/agents.js";
declare const providerModel: Exclude<LanguageModel, string>;
const wrapped: typeof providerModel = durableModel(ctx, providerModel, { label: "main" });
export const generated = generateText({ model: wrapped, prompt: "go" });
export const streamed = streamText({ model: durableModel(ctx, providerModel), prompt: "go" });
`,
        options,
      );
      expect(errors).toEqual([]);
    });

    it("the AI SDK's own options type has no idempotencyKey: without steplog's type, reading it is an error (the check checks)", () => {
      const errors = compile(
        `${AI_SDK_TOOLS}
export const sendEmail = tool({
  inputSchema: z.object({ to: z.string() }),
  execute: async ({ to }, options) => ({ to, key: options.idempotencyKey }),
});
  `,
        options,
      );
      expect(errors.join("\n")).toMatch(/Property 'idempotencyKey' does not exist on type 'ToolExecutionOptions[<' ]/);
    });

    it("AI SDK: with ToolExecutionOptions declared to extend DurableToolCallFields (docs/agents.md), execute(input, options) reads options.idempotencyKey", () => {
      const errors = compile(
        `${AI_SDK_TOOLS}
import type { DurableToolCallFields } from "../../src/entries/agents.js";
declare module "ai" {
  interface ${declared} extends DurableToolCallFields {}
}
export const tools = {
  sendEmail: tool({
    inputSchema: z.object({ to: z.string() }),
    execute: async ({ to }, options) => {
      const key: string | undefined = options.idempotencyKey;
      // @ts-expect-error the key is a string (or absent when the tool is called unwrapped), not any
      const wrong: number = options.idempotencyKey;
      return { to, key, step: options.step, previous: options.previous?.attempt, wrong };
    },
  }),
};
export const text = generateText({ model, tools: durableTools(ctx, tools, { effects: { sendEmail: "irreversible" } }), prompt: "go" });
  `,
        options,
      );
      expect(errors).toEqual([]);
    });

    it("AI SDK: without a declaration, annotating options as ToolExecutionOptions & DurableToolCallFields works in tool()", () => {
      const errors = compile(
        `${AI_SDK_TOOLS}
import type { ToolExecutionOptions } from "ai";
import type { DurableToolCallFields } from "../../src/entries/agents.js";
export const tools = {
  sendEmail: tool({
    inputSchema: z.object({ to: z.string() }),
    execute: async ({ to }, options: ${annotated} & DurableToolCallFields) => ({ to, key: options.idempotencyKey, id: options.toolCallId }),
  }),
};
export const text = generateText({ model, tools: durableTools(ctx, tools), prompt: "go" });
  `,
        options,
      );
      expect(errors).toEqual([]);
    });
  });

  it("OpenAI Agents SDK: a function tool's details typed DurableAgentToolDetails", () => {
    const errors = compile(`
import { Agent, tool } from "@openai/agents";
import { z } from "zod";
import { durableAgent, type DurableAgentToolDetails } from "../../src/entries/agents.js";
import type { WorkflowContext } from "../../src/entries/index.js";
declare const ctx: WorkflowContext;
const sendEmail = tool({
  name: "sendEmail",
  description: "Send an email",
  parameters: z.object({ to: z.string() }),
  execute: async ({ to }, _runContext, details?: DurableAgentToolDetails) => {
    const key: string | undefined = details?.idempotencyKey;
    return { to, key, call: details?.toolCall?.callId };
  },
});
export const agent: Agent = durableAgent(ctx, new Agent({ name: "a", tools: [sendEmail] }), { effects: { sendEmail: "irreversible" } });
`);
    expect(errors).toEqual([]);
  });

  it("LangChain: a tool()'s config typed ToolRunnableConfig & DurableToolCallFields", () => {
    const errors = compile(`
import { tool, type ToolRunnableConfig } from "@langchain/core/tools";
import { z } from "zod";
import { durableLangChainTools, type DurableToolCallFields } from "../../src/entries/agents.js";
import type { WorkflowContext } from "../../src/entries/index.js";
declare const ctx: WorkflowContext;
const sendEmail = tool(
  async ({ to }, config: ToolRunnableConfig & DurableToolCallFields) => {
    const key: string | undefined = config.idempotencyKey;
    return { to, key, call: config.toolCall?.id };
  },
  { name: "sendEmail", description: "Send an email", schema: z.object({ to: z.string() }) },
);
export const [wrapped] = durableLangChainTools(ctx, [sendEmail] as const);
export const name: "sendEmail" = wrapped.name;
`);
    expect(errors).toEqual([]);
  });
});
