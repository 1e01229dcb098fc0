// The support agent with its tools on an MCP server: a hand-written loop (the model a fake
// OpenAI client answering from the script in world.mjs, as in plain-loop.mjs) whose tool calls
// go to mcp-server.mjs, over stdio, through an MCP Client of @modelcontextprotocol/sdk. Made
// durable by durableMcp: each callTool is a step keyed by the model's call id, with the effect
// the tool's annotations give it, and the step's idempotency key sent in the request's _meta.
//
//   npm run example:agent -- mcp      (or: npm run build && node examples/agent/mcp.mjs)
//
// runs the crash story (story.mjs) for this agent: killed inside sendEmail (the server sent the
// email and reported it; its answer never arrived), then continued.

import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { z } from "zod";
import { defineWorkflow } from "../../dist/index.js";
import { durableMcp, modelTurn } from "../../dist/agents.js";
import { fakeOpenAI } from "./plain-loop.mjs";
import { costUsd } from "./world.mjs";

const TOOL_SCHEMAS = ["lookupOrder", "saveDraft", "sendEmail"].map((name) => ({ type: "function", function: { name } }));
const clients = [];

/** An MCP client of the support desk serving `world`, connected over stdio (the server is this process's child). */
async function connect(world) {
  const client = new Client({ name: "support-agent", version: "1.0.0" });
  const server = fileURLToPath(new URL("./mcp-server.mjs", import.meta.url));
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [server, world.dir], cwd: path.dirname(server), stderr: "inherit" }));
  clients.push(client);
  return client;
}

/** Closes the clients (and so their server processes). */
export async function closeClients() {
  await Promise.all(clients.splice(0).map((client) => client.close()));
}

/** A value a person resolves sendEmail with (the email found in the outbox), as the tool's result. */
export const asToolResult = (value) => ({ content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value });

export function mcpAgent(world, { sendEmailQuery, sendEmailApproval, beforeOutcome }) {
  let client;
  return defineWorkflow({
    name: "example-support-agent-mcp",
    version: "1.0.0",
    args: z.object({ ticket: z.string() }),
    async run(ctx, { ticket }) {
      client ??= await connect(world);
      const openai = fakeOpenAI(world, ticket);
      // The effects come from the server's annotations; a query asks its findSent by the key.
      const mcp = durableMcp(ctx, client, {
        // With approval, each sendEmail call waits for a person's yes (engine.approve) before it runs.
        ...(sendEmailApproval ? { approval: ["sendEmail"] } : {}),
        ...(sendEmailQuery
          ? {
              query: {
                sendEmail: async ({ idempotencyKey }) => {
                  const sent = (await client.callTool({ name: "findSent", arguments: { key: idempotencyKey } })).structuredContent;
                  return sent.messageId ? { done: true, value: asToolResult(sent) } : { done: false };
                },
              },
            }
          : {}),
      });
      // sendEmail asks the server for progress: it reports the email sent before it answers, and
      // the example's attempt may be killed there (beforeOutcome), inside the call.
      const options = (name) => (name === "sendEmail" && beforeOutcome ? { onprogress: ({ message }) => beforeOutcome(name, JSON.parse(message)) } : undefined);

      const messages = [
        { role: "system", content: "You are a support agent. Plan, then use the tools." },
        { role: "user", content: ticket },
      ];
      for (let turn = 1; turn <= 8; turn++) {
        const completion = await modelTurn(ctx, () => openai.chat.completions.create({ model: "gpt-fake", messages, tools: TOOL_SCHEMAS }), { costUsd });
        const message = completion.choices[0].message;
        messages.push(message);
        if (!message.tool_calls?.length) return { answer: message.content, turns: turn };
        for (const call of message.tool_calls) {
          const name = call.function.name;
          // The model's call id keys the step: tool:<name>:<call id>.
          const result = await mcp.callTool({ name, arguments: JSON.parse(call.function.arguments), toolCallId: call.id }, undefined, options(name));
          messages.push({
            role: "tool",
            tool_call_id: call.id,
            content: result.isError ? JSON.stringify({ error: result.content[0]?.text }) : result.content[0].text,
          });
        }
      }
      ctx.stop("the agent did not finish in 8 turns");
    },
  });
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { tellStory } = await import("./story.mjs");
  await tellStory("mcp", "an agent whose tools are on an MCP server (stdio)", { resolution: asToolResult });
}
