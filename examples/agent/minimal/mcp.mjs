// examples/agent/minimal/mcp.mjs: tool calls to an MCP server, made durable.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { createEngine, defineWorkflow } from "steplog";
import { durableMcp } from "steplog/agents";

// A stand-in for your MCP server, in this process so that this runs offline. Yours is reached with
// new StdioClientTransport({ command, args }) or new StreamableHTTPClientTransport(new URL(url)).
const server = new McpServer({ name: "order-desk", version: "1.0.0" });
server.registerTool(
  "lookup_order",
  { inputSchema: { orderId: z.string() }, annotations: { readOnlyHint: true } }, // read-only: a "read" step
  async ({ orderId }) => ({ content: [{ type: "text", text: `Order ${orderId} arrives tomorrow.` }] }),
);
server.registerTool(
  "send_email",
  { inputSchema: { to: z.string(), body: z.string() } }, // no annotations: MCP's default, destructive: an "irreversible" step
  async ({ to, body }, { _meta }) => {
    // The same key if a continue sends this call again: a server can deduplicate on it.
    console.log(`email to ${to}: ${body} (key ${_meta?.["io.steplog/idempotency-key"]})`);
    return { content: [{ type: "text", text: `Emailed ${to}: ${body}` }] };
  },
);
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await server.connect(serverSide);
const client = new Client({ name: "support-agent", version: "1.0.0" });
await client.connect(clientSide);

const support = defineWorkflow({
  name: "support-agent",
  args: z.object({ orderId: z.string(), email: z.string() }),
  async run(ctx, { orderId, email }) {
    const mcp = durableMcp(ctx, client); // each callTool is a step, its effect from the tool's annotations
    const order = await mcp.callTool({ name: "lookup_order", arguments: { orderId } });
    const sent = await mcp.callTool({ name: "send_email", arguments: { to: email, body: order.content[0].text } });
    return sent.content[0].text;
  },
});

const engine = createEngine({ workflows: [support] }); // SQLite at .steplog/steplog.db
// Run this file twice: the second start attaches to ticket-212 and hands back its answer; no email is sent again.
// After a crash, engine.continue("ticket-212") goes on from the log: recorded calls are not made again.
const outcome = await engine.start(support, { orderId: "o-17", email: "ada@example.com" }, { id: "ticket-212", ifExists: "attach" });
console.log(outcome.status, outcome.value ?? outcome.error?.message);
await engine.close();
await client.close();
