// durableMcp against a real MCP server (test/agents/fixtures/mcp-server.mjs, built with
// @modelcontextprotocol/sdk), connected in this process through the SDK's InMemoryTransport:
// the step each call is, the effect its annotations give it (or `effects` overrides), the
// idempotency key in the request's _meta, approvals, and the options it refuses. The SIGKILL
// tests over stdio and Streamable HTTP are in mcp-crash.test.ts.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterEach, describe, expect, it } from "vitest";
import { durableMcp, MCP_IDEMPOTENCY_KEY } from "../../src/entries/agents.js";
import { createEngine, defineWorkflow, isSteplogError, type WorkflowContext } from "../../src/entries/index.js";
import { memoryStore } from "../../src/entries/memory.js";
import { tmpDir } from "../helpers/tmp.js";
// @ts-expect-error -- a plain .mjs fixture (it is also run as a process of its own)
import { ledger, orderDesk, outbox } from "./fixtures/mcp-server.mjs";

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of open.splice(0)) await c.close();
});

/** A connected client of a fresh order desk writing to a new world directory. */
async function desk() {
  const world = tmpDir("steplog-mcp-");
  const server = orderDesk(world);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: "test", version: "1.0.0" });
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  // Count the listings the client makes.
  const listings = { count: 0 };
  const listTools = client.listTools.bind(client);
  client.listTools = ((...args: Parameters<Client["listTools"]>) => {
    listings.count++;
    return listTools(...args);
  }) as Client["listTools"];
  open.push(client, server);
  return { world, client, listings };
}

async function runOnce<T>(body: (ctx: WorkflowContext) => Promise<T>) {
  const wf = defineWorkflow({ name: `mcp-${Math.random()}`, run: (ctx) => body(ctx) });
  const engine = createEngine({ store: memoryStore(), workflows: [wf] });
  open.push(engine);
  const result = await engine.start(wf, undefined, { id: "run" });
  const view = await engine.get("run");
  return { result, view, engine };
}

const text = (result: unknown) => JSON.parse((result as { content: Array<{ text: string }> }).content[0]!.text);

describe("durableMcp", () => {
  it("each callTool is a step tool:<name>:<n> with the effect the server's annotations give it, and sends the step's idempotency key in _meta", async () => {
    const { world, client } = await desk();
    const { result, view } = await runOnce(async (ctx) => {
      const mcp = durableMcp(ctx, client);
      const order = text(await mcp.callTool({ name: "lookup_order", arguments: { orderId: "o-17" } }));
      await mcp.callTool({ name: "save_draft", arguments: { orderId: "o-17", body: "soon" } });
      await mcp.callTool({ name: "save_draft", arguments: { orderId: "o-17", body: "tomorrow" } });
      await mcp.callTool({ name: "create_ticket", arguments: { title: "late" } });
      const sent = text(await mcp.callTool({ name: "send_email", arguments: { to: order.email, body: "tomorrow" } }, undefined, { timeout: 5000 }));
      return sent.messageId;
    });
    expect(result).toMatchObject({ status: "completed", value: "m-1" });
    expect(view.steps.map((s) => [s.key, s.effect, s.status])).toEqual([
      ["tool:lookup_order:1", "read", "succeeded"],
      ["tool:save_draft:1", "idempotent", "succeeded"],
      ["tool:save_draft:2", "idempotent", "succeeded"],
      // No annotations: MCP's defaults (not read-only, destructive) make it irreversible.
      ["tool:create_ticket:1", "irreversible", "succeeded"],
      ["tool:send_email:1", "irreversible", "succeeded"],
    ]);
    expect(ledger(world).map((c: { tool: string; key: string }) => [c.tool, c.key])).toEqual(view.steps.map((s) => [s.name.split(":")[1], `run:${s.key}`]));
    expect(MCP_IDEMPOTENCY_KEY).toBe("io.steplog/idempotency-key");
    // The recorded value is the server's CallToolResult.
    expect(view.steps[4]!.value).toMatchObject({ structuredContent: { messageId: "m-1", to: "ada@example.com" } });
  });

  it("lists the tools once per client, also when every tool called has a declared effect (to check the names options give)", async () => {
    const a = await desk();
    await runOnce(async (ctx) => {
      const mcp = durableMcp(ctx, a.client);
      await Promise.all([
        mcp.callTool({ name: "lookup_order", arguments: { orderId: "o-1" } }),
        mcp.callTool({ name: "lookup_order", arguments: { orderId: "o-2" } }),
      ]);
      await durableMcp(ctx, a.client).callTool({ name: "save_draft", arguments: { orderId: "o-1", body: "x" } });
    });
    await runOnce(async (ctx) => durableMcp(ctx, a.client).callTool({ name: "lookup_order", arguments: { orderId: "o-3" } }));
    expect(a.listings.count).toBe(1);

    const b = await desk();
    const { view } = await runOnce(async (ctx) =>
      durableMcp(ctx, b.client, { effects: { lookup_order: "idempotent" } }).callTool({ name: "lookup_order", arguments: { orderId: "o-1" } }),
    );
    expect(b.listings.count).toBe(1);
    expect(view.steps.map((s) => [s.key, s.effect])).toEqual([["tool:lookup_order:1", "idempotent"]]);
  });

  it("`effects` overrides the annotations, both ways", async () => {
    const { client } = await desk();
    const { view } = await runOnce(async (ctx) => {
      const mcp = durableMcp(ctx, client, { effects: { create_ticket: "idempotent", lookup_order: "irreversible" } });
      await mcp.callTool({ name: "create_ticket", arguments: { title: "x" } });
      await mcp.callTool({ name: "lookup_order", arguments: { orderId: "o-1" } });
    });
    expect(view.steps.map((s) => [s.key, s.effect])).toEqual([
      ["tool:create_ticket:1", "idempotent"],
      ["tool:lookup_order:1", "irreversible"],
    ]);
  });

  it("keys the step by the call id the caller gives (not sent to the server), and hands recorded calls back on a continue without calling", async () => {
    const { world, client } = await desk();
    let failOnce = true;
    const wf = defineWorkflow({
      name: "by-id",
      async run(ctx) {
        const mcp = durableMcp(ctx, client);
        const a = text(await mcp.callTool({ name: "lookup_order", arguments: { orderId: "o-1" }, toolCallId: "call_A" }));
        const b = text(await mcp.callTool({ name: "send_email", arguments: { to: a.email, body: "hi" }, toolCallId: "call_B" }));
        await ctx.step("after", async () => {
          if (failOnce) {
            failOnce = false;
            throw new Error("boom");
          }
        });
        return b.messageId;
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect(await engine.start(wf, undefined, { id: "r" })).toMatchObject({ status: "failed" });
    expect(await engine.continue("r")).toMatchObject({ status: "completed", value: "m-1" });
    const view = await engine.get("r");
    expect(view.attempts[1]!.reused).toEqual(["tool:lookup_order:call_A", "tool:send_email:call_B"]);
    const calls = ledger(world);
    expect(calls.map((c: { tool: string; key: string; args: unknown }) => [c.tool, c.key])).toEqual([
      ["lookup_order", "r:tool:lookup_order:call_A"],
      ["send_email", "r:tool:send_email:call_B"],
    ]);
    expect(calls[0].args).toEqual({ orderId: "o-1" });
    expect(outbox(world)).toHaveLength(1);
    await engine.close();
  });

  it("an isError result is the call's recorded value; an error the client throws (here a timeout) is recorded as the call's error and thrown again", async () => {
    const { client } = await desk();
    const { result, view } = await runOnce(async (ctx) => {
      const mcp = durableMcp(ctx, client, { effects: { no_such_tool: "read" } as never });
      const refused = (await mcp.callTool({ name: "refuse", arguments: {} })) as { isError?: boolean };
      return refused.isError;
    });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("INVALID_OPTION");
    expect(view.steps).toEqual([]);

    const second = await runOnce(async (ctx) => {
      const mcp = durableMcp(ctx, client);
      const refused = (await mcp.callTool({ name: "refuse", arguments: {} })) as { isError?: boolean };
      let thrown: unknown;
      try {
        // The server answers after 300 ms when asked for progress; the client gives up at 50.
        await mcp.callTool({ name: "lookup_order", arguments: { orderId: "o-1" } }, undefined, { onprogress: () => {}, timeout: 50 });
      } catch (error) {
        thrown = error;
      }
      return { isError: refused.isError, thrown: String(thrown) };
    });
    expect(second.result).toMatchObject({ status: "completed", value: { isError: true } });
    expect((second.result.value as { thrown: string }).thrown).toMatch(/McpError: MCP error -32001: Request timed out/);
    expect(second.view.steps.map((s) => [s.key, s.status])).toEqual([
      ["tool:refuse:1", "succeeded"],
      ["tool:lookup_order:1", "succeeded"],
    ]);
    expect(second.view.steps[1]!.value).toMatchObject({ "steplog.toolError": { name: "McpError", message: expect.stringMatching(/Request timed out/) } });
  });

  it("the step's signal aborts the request: a timeoutMs ends the call (the SDK cancels it) instead of waiting for the answer", async () => {
    const { client } = await desk();
    const started = Date.now();
    const { result, view } = await runOnce(async (ctx) =>
      // The server answers after 300 ms when asked for progress.
      durableMcp(ctx, client, { timeoutMs: { lookup_order: 50 } }).callTool({ name: "lookup_order", arguments: { orderId: "o-1" } }, undefined, {
        onprogress: () => {},
      }),
    );
    expect(Date.now() - started).toBeLessThan(300);
    expect(result).toMatchObject({ status: "failed", error: { code: "STEP_TIMED_OUT" } });
    expect(view.steps.map((s) => [s.key, s.status])).toEqual([["tool:lookup_order:1", "failed"]]);
  });

  it("approval: a listed tool's call parks the run before it is sent; approve lets exactly that call run once", async () => {
    const { world, client } = await desk();
    const wf = defineWorkflow({
      name: "approve",
      async run(ctx) {
        const mcp = durableMcp(ctx, client, { approval: ["send_email"] });
        await mcp.callTool({ name: "lookup_order", arguments: { orderId: "o-1" } });
        return text(await mcp.callTool({ name: "send_email", arguments: { to: "ada@example.com", body: "hi" } })).messageId;
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    const first = await engine.start(wf, undefined, { id: "r" });
    expect(first).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: "tool:send_email:1" } });
    expect(outbox(world)).toHaveLength(0);
    await engine.approve("r", "tool:send_email:1", { by: "ana" });
    expect(await engine.continue("r")).toMatchObject({ status: "completed", value: "m-1" });
    expect(outbox(world)).toHaveLength(1);
    expect(ledger(world).map((c: { tool: string }) => c.tool)).toEqual(["lookup_order", "send_email"]);
    await engine.close();
  });

  it("a call's step records the tool's arguments as its input; a continue that calls it with other arguments stops (STEP_INPUT_CHANGED)", async () => {
    const { world, client } = await desk();
    let to = "ada@example.com";
    let fail = true;
    const wf = defineWorkflow({
      name: "inputs",
      async run(ctx) {
        const mcp = durableMcp(ctx, client, { approval: ["send_email"] });
        const sent = text(await mcp.callTool({ name: "send_email", arguments: { to, body: "hi" } })).messageId;
        if (fail) throw new Error("later failure");
        return sent;
      },
    });
    const engine = createEngine({ store: memoryStore(), workflows: [wf] });
    expect(await engine.start(wf, undefined, { id: "r" })).toMatchObject({ status: "waiting", waitingFor: { kind: "approval", step: "tool:send_email:1" } });
    await engine.approve("r", "tool:send_email:1");
    expect(await engine.continue("r")).toMatchObject({ status: "failed" });
    expect((await engine.get("r")).steps.find((s) => s.key === "tool:send_email:1")).toMatchObject({ input: { to: "ada@example.com", body: "hi" } });
    // The code now sends to another address as call 1: the record made for ada is not handed back.
    to = "bob@example.com";
    fail = false;
    expect(await engine.continue("r")).toMatchObject({ status: "stopped", error: { code: "STEP_INPUT_CHANGED", step: "tool:send_email:1" } });
    expect(outbox(world)).toHaveLength(1);
    await engine.close();
  });

  it('approval: "destructive" parks the calls of tools the annotations call destructive (unannotated ones too), not the others', async () => {
    const { client } = await desk();
    const parked: string[] = [];
    for (const name of ["lookup_order", "save_draft", "send_email", "create_ticket"]) {
      const { result } = await runOnce(async (ctx) =>
        durableMcp(ctx, client, { approval: "destructive", effects: { send_email: "idempotent" } }).callTool({
          name,
          arguments: name === "create_ticket" ? { title: "t" } : name === "send_email" ? { to: "a", body: "b" } : { orderId: "o", body: "b" },
        }),
      );
      if (result.status === "waiting") parked.push(name);
      else expect(result.status).toBe("completed");
    }
    expect(parked).toEqual(["send_email", "create_ticket"]);
  });

  it("refuses bad options and a bad client with INVALID_OPTION, before any call is sent", async () => {
    const { world, client } = await desk();
    const refused = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        expect(isSteplogError(error, "INVALID_OPTION"), String(error)).toBe(true);
        return (error as Error).message;
      }
      throw new Error("not refused");
    };
    await runOnce(async (ctx) => {
      expect(refused(() => durableMcp(ctx, {} as never))).toMatch(/must be an MCP client/);
      expect(refused(() => durableMcp(ctx, client, { effects: { send_email: "destructive" as never } }))).toMatch(/an effect is one of read, idempotent/);
      expect(refused(() => durableMcp(ctx, client, { approval: "all" as never }))).toMatch(/list of tool names or "destructive"/);
      expect(refused(() => durableMcp(ctx, client, { query: { send_email: "yes" as never } }))).toMatch(/query\.send_email must be a function/);
      expect(refused(() => durableMcp(ctx, client, { effect: {} } as never))).toMatch(/options\.effect is not an option/);
    });
    for (const options of [{ approval: ["send_mail"] }, { effects: { send_mail: "irreversible" } }] as const) {
      const { result, view } = await runOnce(async (ctx) =>
        durableMcp(ctx, client, options as never).callTool({ name: "send_email", arguments: { to: "a", body: "b" } }),
      );
      expect(result.error?.code).toBe("INVALID_OPTION");
      expect(result.error?.message).toMatch(/"send_mail", which is not one of the/);
      expect(view.steps).toEqual([]);
    }
    expect(ledger(world)).toEqual([]);
  });
});
