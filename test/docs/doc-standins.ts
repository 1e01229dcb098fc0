// What the docs' TypeScript blocks take as given, as source text for test/docs/ts-blocks.test.ts:
// most blocks are fragments of a program (a step inside a workflow's run, a test's body), using
// an `engine`, a `ctx` and the app's own services without declaring them. steplog's names are
// given their real types, so a block that misuses the API fails; the app's own are `any`.
// (Kept as text, not a .d.ts, so these globals never leak into the repo's own type-check.)

/** A global script beside the blocks. */
export const STANDIN_GLOBALS = `
// steplog's API, as the docs' whole examples import it.
declare const createEngine: typeof import("steplog").createEngine;
declare const defineWorkflow: typeof import("steplog").defineWorkflow;
declare const encryptedCodec: typeof import("steplog").encryptedCodec;
declare const isSteplogError: typeof import("steplog").isSteplogError;
declare const memoryStore: typeof import("steplog/memory").memoryStore;
declare const testWorkflow: typeof import("steplog/testing").testWorkflow;
declare const describeStore: typeof import("steplog/testing").describeStore;
declare const durableTools: typeof import("steplog/agents").durableTools;
declare const durableModelProvider: typeof import("steplog/agents").durableModelProvider;
declare const durableLangChainTools: typeof import("steplog/agents").durableLangChainTools;
declare const durableChatModel: typeof import("steplog/agents").durableChatModel;
declare const durableAnthropic: typeof import("steplog/agents").durableAnthropic;
declare const durableAgent: typeof import("steplog/agents").durableAgent;
declare const messagesFromSteps: typeof import("steplog/agents").messagesFromSteps;
declare const modelTurn: typeof import("steplog/agents").modelTurn;
declare const durableMcp: typeof import("steplog/agents").durableMcp;
// An MCP client of @modelcontextprotocol/sdk, connected.
declare const client: import("@modelcontextprotocol/sdk/client/index.js").Client;
declare const title: string, body: string, findIssueByKey: any;
// The engine and the workflow context a fragment runs with, and the README's workflow.
declare const engine: import("steplog").Engine;
declare const ctx: import("steplog").WorkflowContext;
declare const fixIssue: import("steplog").Workflow<{ issue: string }, string>;
// The test runner, the schema library and the AI SDK.
declare const expect: typeof import("vitest").expect;
declare const test: typeof import("vitest").test;
declare const it: typeof import("vitest").it;
declare const describe: typeof import("vitest").describe;
declare const z: typeof import("zod").z;
declare const generateText: typeof import("ai").generateText;
declare const stepCountIs: typeof import("ai").stepCountIs;
// A web framework's app.
declare const app: { post(path: string, handler: (req: { body: any }, res: { status(code: number): { send(body: string): void } }) => Promise<void>): void };
// The app's own code and data, and other SDKs' clients: whatever the fragment does with them.
declare const args: any, plan: any, pr: any, model: any, tools: any, ticket: any, messages: any, workflows: any, payments: any, mail: any;
declare const mailer: any, built: any, lint: any, freshDatabase: any, freshDb: any, user: any, stock: any, sendEmail: any, saveDraft: any;
declare const reminder: any, openai: any, lookupOrder: any, handlers: any, github: any, chat: any, anthropic: any, SCHEMAS: any, max_tokens: any;
declare const findCharge: any, isNetworkError: any, findEmail: any, server: any;
declare const CardDeclined: any, version: any, to: any, query: any, instructions: any, effects: any, amount: any, wallet: any, users: any;
declare const url: any, text: any, support: any, summarize: any, summarise: any, run: any, review: any, publish: any, priceOf: any;
declare const openPullRequest: any, oldKey: any, notify: any, newKey: any, merge: any, loadSales: any, files: any, draft: any, commit: any;
declare const callPlanner: any, buildIt: any, breakTheData: any, askReviewer: any, TransactionalKv: any, Runner: any, REVIEW: any;
declare const OpenAIProvider: any, CHARGE: any, Agent: any, myStore: any, checkout: any, runTests: any;
// A package the repo does not install: the OpenTelemetry exporter docs/observability.md names.
declare module "@opentelemetry/exporter-trace-otlp-http" {
  export class OTLPTraceExporter {
    constructor(options?: { url?: string });
    export(spans: unknown[], done: (result: { code: number }) => void): void;
    shutdown(): Promise<void>;
  }
}
`;

/** The app's own modules that blocks import by relative path, beside the blocks (path → source). */
export const STANDIN_MODULES: Record<string, string> = {
  "blocks/agents.ts": `export const planner: any = {}, builder: any = {}, reviewer: any = {};\n`,
  "blocks/payments.ts": `export const payments = {
  async find(key: string): Promise<{ id: string; cents: number } | undefined> { return key ? undefined : undefined; },
  async charge(charge: { order: string; cents: number; key: string }): Promise<{ id: string; cents: number }> { return { id: charge.key, cents: charge.cents }; },
};\n`,
  "blocks/checkout.ts": `import { defineWorkflow } from "steplog";
import { z } from "zod";
export const checkout = defineWorkflow({ name: "checkout", args: z.object({ order: z.string(), cents: z.number() }), async run() { return { id: "ch_1", cents: 500 }; } });\n`,
  "blocks/fix-issue.ts": `import { defineWorkflow } from "steplog";
import { z } from "zod";
export const fixIssue = defineWorkflow({ name: "fix-issue", args: z.object({ issue: z.string() }), async run() { return { approved: true, findings: [] as string[] }; } });\n`,
  "src/my-store.ts": `import type { Store } from "steplog";\nexport declare function myStore(options: { url: string }): Store & { location: string };\n`,
};
