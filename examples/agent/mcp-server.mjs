// The support agent's tools served by an MCP server (built with @modelcontextprotocol/sdk), over
// stdio: the agent of mcp.mjs starts it as its child process. The tools act on the same world as
// the other examples' (world.mjs: orders, drafts, the outbox and the call ledgers), and take the
// step's idempotency key from the request's _meta, where durableMcp puts it.
//
//   node examples/agent/mcp-server.mjs <world dir>
//
// The annotations say what each tool does, and durableMcp takes the step's effect from them:
// lookupOrder is read-only (read), saveDraft idempotent (idempotent), sendEmail says nothing
// (MCP's default: destructive, so irreversible). findSent is the mail provider's lookup by key.
// When a request asks for progress, the tool reports its result as progress before answering,
// and waits a moment: the example's attempt kills itself there, inside the call.

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";
import { openWorld } from "./world.mjs";

const IDEMPOTENCY_KEY = "io.steplog/idempotency-key";
const world = openWorld(process.argv[2]);
const server = new McpServer({ name: "support-desk", version: "1.0.0" });

function serve(name, inputSchema, annotations, act) {
  server.registerTool(name, { inputSchema, ...(annotations ? { annotations } : {}) }, async (input, extra) => {
    const value = act(input, { idempotencyKey: extra._meta?.[IDEMPOTENCY_KEY] });
    const token = extra._meta?.progressToken;
    if (token !== undefined) {
      await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: 1, message: JSON.stringify(value) } });
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
  });
}

serve("lookupOrder", { orderId: z.string() }, { readOnlyHint: true }, (input, options) => world.lookupOrder(input, options));
serve("saveDraft", { to: z.string(), subject: z.string(), body: z.string() }, { idempotentHint: true, destructiveHint: false }, (input, options) =>
  world.saveDraft(input, options),
);
serve("sendEmail", { draftId: z.string() }, undefined, (input, options) => world.sendEmail(input, options));
serve("findSent", { key: z.string() }, { readOnlyHint: true }, ({ key }) => world.findSent(key) ?? { found: false });

// The client is gone (killed inside a call, its answer unsent): so is this server.
process.stdout.on("error", () => process.exit(0));
await server.connect(new StdioServerTransport());
