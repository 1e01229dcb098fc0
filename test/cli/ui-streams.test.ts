// `steplog ui` and a run's streams, in Chromium: the run page shows each stream (its text as it
// stands, chunk count, closed or open) and follows a run that another process is writing,
// without a reload, through a redo's reset too; a stream's server-sent events
// (GET /runs/<id>/streams/<name>) read with fetch, live, from an offset and from Last-Event-ID;
// a stream past 64 KB shows its tail, says what was cut and links to the whole; markup in a
// stream's name or chunks stays text.
import fs from "node:fs";
import path from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { spawnNode } from "../helpers/child.js";
import { uiSuite } from "./ui-suite.js";
import { startUiServer } from "./ui-server.js";
import { BIN, childEnv, cli, writeWorkflow } from "./helpers.js";

const suite = uiSuite();
const { dirs, children } = suite;

/** Three parts, each written by a step; after each, a step that waits for the test's file go-N. */
const TALK = `import fs from "node:fs";
export default defineWorkflow({
  name: "talk",
  async run(ctx) {
    const answer = ctx.stream("answer");
    const log = ctx.stream("log");
    for (let i = 1; i <= 3; i++) {
      await ctx.step("part-" + i, async (info) => {
        answer.write("part " + i + "." + info.attempt + " ");
        log.write({ part: i, token: "s3cret" });
      });
      await ctx.step("gate-" + i, async () => {
        while (!fs.existsSync("go-" + i)) await new Promise((r) => setTimeout(r, 50));
      });
    }
    answer.close();
    return "spoken";
  },
});`;

interface SseEvent {
  id?: string;
  event?: string;
  data: string;
}

/** A stream's server-sent events read with fetch: the events so far (growing), and the end of the response. */
function readEvents(url: string, headers: Record<string, string> = {}): { events: SseEvent[]; done: Promise<number> } {
  const events: SseEvent[] = [];
  const done = (async () => {
    const res = await fetch(url, { headers });
    if (res.status !== 200) return res.status;
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(bytes, { stream: true });
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event: SseEvent = { data: "" };
        for (const line of block.split("\n")) {
          if (line.startsWith("id: ")) event.id = line.slice(4);
          else if (line.startsWith("event: ")) event.event = line.slice(7);
          else if (line.startsWith("data: ")) event.data += line.slice(6);
        }
        if (!block.split("\n").every((line) => line.startsWith(":"))) events.push(event);
      }
    }
    return res.status;
  })();
  return { events, done };
}

const section = (page: Page, name: string) => page.locator(`section[data-stream="${name}"]`);

describe("steplog ui: a run's streams", () => {
  it("the run page follows the streams another process writes, without a reload (a redo's reset too); the SSE endpoint reads them live", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(cwd, "talk.mjs", TALK);
    const { url } = await startUiServer(cwd, ["--poll", "200ms", "--redact", "token"], children);
    const run = spawnNode(BIN, ["run", file, "--id", "talk-1"], { cwd, env: childEnv() as Record<string, string> });
    children.push(run.child);
    await expect.poll(async () => (await fetch(`${url}/runs/talk-1`)).status, { timeout: 20_000 }).toBe(200);

    const live = readEvents(`${url}/runs/talk-1/streams/answer`);
    const page = await suite.browser.newPage();
    await page.goto(`${url}/runs/talk-1`);
    // Set once: a reload would lose it.
    await page.evaluate(() => ((globalThis as unknown as { sameLoad: string }).sameLoad = "yes"));
    await expect.poll(() => section(page, "answer").locator("pre").textContent(), { timeout: 20_000 }).toBe("part 1.1 ");
    expect(await section(page, "answer").locator(".state").textContent()).toBe("1 chunk · open");

    fs.writeFileSync(path.join(cwd, "go-1"), "");
    await expect.poll(() => section(page, "answer").locator("pre").textContent(), { timeout: 20_000 }).toBe("part 1.1 part 2.1 ");
    expect(await section(page, "answer").locator(".state").textContent()).toBe("2 chunks · open");
    // The events came as the chunks were written, before the run went on.
    await expect
      .poll(() => live.events.map((e) => [e.id, e.data]), { timeout: 10_000 })
      .toEqual([
        ["0", '{"type":"chunk","offset":0,"chunk":"part 1.1 ","seq":0}'],
        ["1", '{"type":"chunk","offset":1,"chunk":"part 2.1 ","seq":1}'],
      ]);

    fs.writeFileSync(path.join(cwd, "go-2"), "");
    fs.writeFileSync(path.join(cwd, "go-3"), "");
    expect((await run.done).code, run.output()).toBe(0);
    await expect.poll(() => page.locator("h1 .badge").textContent(), { timeout: 20_000 }).toBe("completed");
    expect(await section(page, "answer").locator("pre").textContent()).toBe("part 1.1 part 2.1 part 3.1 ");
    expect(await section(page, "answer").locator(".state").textContent()).toBe("3 chunks · closed");
    // Not closed by the run, ended with it; JSON chunks one line each, redacted as step values are.
    expect(await section(page, "log").locator(".state").textContent()).toBe("3 chunks · open");
    expect(await section(page, "log").locator("pre").textContent()).toBe(
      ['{"part":1,"token":"[redacted]"}', '{"part":2,"token":"[redacted]"}', '{"part":3,"token":"[redacted]"}', ""].join("\n"),
    );
    expect(await page.content()).not.toContain("s3cret");

    // The stream closed: the events end (the last one says the next offset).
    expect(await live.done).toBe(200);
    expect(live.events.slice(2)).toEqual([
      { id: "2", data: '{"type":"chunk","offset":2,"chunk":"part 3.1 ","seq":2}' },
      { event: "end", data: '{"next":3}' },
    ]);

    // A redo from part-2 in another process: the page shows the stream as it stands, still without a reload.
    const redo = await cli(["run", "--continue", "--id", "talk-1", "--from-step", "part-2"], { cwd });
    expect(redo.code, redo.output).toBe(0);
    // (Polled together: a rendering made while the redo ran may have its last chunk before its close.)
    const answer = async () =>
      `${await section(page, "answer").locator("pre").textContent()}| ${await section(page, "answer").locator(".state").textContent()}`;
    await expect.poll(answer, { timeout: 20_000 }).toBe("part 1.1 part 2.2 part 3.2 | 3 chunks · closed");
    expect(await page.evaluate(() => (globalThis as unknown as { sameLoad?: string }).sameLoad)).toBe("yes");

    // From an offset: the stream as it stands from there; each event's id is its item's seq.
    const from = readEvents(`${url}/runs/talk-1/streams/answer?from=1`);
    expect(await from.done).toBe(200);
    const items = (events: SseEvent[]) => events.filter((e) => e.event === undefined).map((e) => ({ id: e.id, ...JSON.parse(e.data) }));
    expect(items(from.events).map(({ offset, chunk }) => [offset, chunk])).toEqual([
      [1, "part 2.2 "],
      [2, "part 3.2 "],
    ]);
    for (const item of items(from.events)) expect(item.id).toBe(String(item.seq));
    expect(from.events.at(-1)).toEqual({ event: "end", data: '{"next":3}' });
    // From Last-Event-ID (an EventSource reconnecting after "part 2.1", seq 1, from before the redo):
    // the reset it missed, then the redone chunks.
    const resumed = readEvents(`${url}/runs/talk-1/streams/answer`, { "Last-Event-ID": "1" });
    expect(await resumed.done).toBe(200);
    expect(items(resumed.events).map(({ type, offset, chunk }) => [type, offset, chunk])).toEqual([
      ["reset", 1, undefined],
      ["chunk", 1, "part 2.2 "],
      ["chunk", 2, "part 3.2 "],
    ]);
    expect(resumed.events.at(-1)).toEqual({ event: "end", data: '{"next":3}' });
    // Resumed after the last item: nothing new, the end with where the stream stands.
    const last = items(resumed.events).at(-1)!.id!;
    const nothing = readEvents(`${url}/runs/talk-1/streams/answer`, { "Last-Event-ID": last });
    expect(await nothing.done).toBe(200);
    expect(nothing.events).toEqual([{ event: "end", data: '{"next":3}' }]);
    const log = readEvents(`${url}/runs/talk-1/streams/log`);
    expect(await log.done).toBe(200);
    expect(log.events[0]!.data).toBe('{"type":"chunk","offset":0,"chunk":{"part":1,"token":"[redacted]"},"seq":0}');
    expect(await readEvents(`${url}/runs/nobody/streams/answer`).done).toBe(404);
    expect((await fetch(`${url}/runs/talk-1/streams/answer?from=-1`)).status).toBe(400);
    await page.close();
  });

  it("a chunk written between serving the page and its live connection still shows (the page's script held back until then)", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(
      cwd,
      "parked.mjs",
      `export default defineWorkflow({
  name: "parked",
  async run(ctx) {
    const out = ctx.stream("out");
    await ctx.step("one", async () => out.write("one "));
    await ctx.waitForEvent("more");
    await ctx.step("two", async () => out.write("two "));
    await ctx.waitForEvent("done");
    return null;
  },
});`,
    );
    expect((await cli(["run", file, "--id", "p-1"], { cwd })).output).toMatch(/waiting/);
    const { url } = await startUiServer(cwd, ["--poll", "200ms"], children);
    const page = await suite.browser.newPage();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route("**/ui.js", async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(`${url}/runs/p-1`, { waitUntil: "commit" });
    await expect.poll(() => section(page, "out").locator("pre").textContent()).toBe("one ");
    // While the page has no live connection yet, another process moves the run on, and it parks again (nothing more changes).
    expect((await cli(["send", "p-1", "more"], { cwd })).code).toBe(0);
    const worked = await cli(["work", "--until-idle", "--poll", "100ms"], { cwd });
    expect(worked.code, worked.output).toBe(0);
    expect(await (await fetch(`${url}/runs/p-1/streams/out/text`)).text()).toBe("one two ");
    release();
    await expect.poll(() => section(page, "out").locator("pre").textContent(), { timeout: 20_000 }).toBe("one two ");
    await page.close();
  });

  it("a stream past 64 KB: its last 64 KB, a note of what was left out, and the whole stream by the link", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(
      cwd,
      "long.mjs",
      `export default defineWorkflow({
  name: "long",
  async run(ctx) {
    const out = ctx.stream("out");
    await ctx.step("write", async () => {
      for (let i = 0; i < 100; i++) out.write(String(i).padStart(3, "0") + "-".repeat(996) + "\\n");
      out.write({ last: true });
      out.write("END");
    });
    ctx.stream('<b id="bold">tag</b>').write("<i id='it'>hi</i>");
    return null;
  },
});`,
    );
    expect((await cli(["run", file, "--id", "long-1"], { cwd })).code).toBe(0);
    const { url } = await startUiServer(cwd, ["--poll", "200ms"], children);
    const page = await suite.browser.newPage();
    await page.goto(`${url}/runs/long-1`);
    const shown = (await section(page, "out").locator("pre").textContent())!;
    expect(shown.length).toBe(64 * 1024);
    expect(shown.endsWith(`099${"-".repeat(996)}\n{"last":true}\nEND`)).toBe(true);
    expect(await section(page, "out").locator(".state").textContent()).toBe("102 chunks · open");
    // 100,000 + 14 + 3 characters in all: the first 34 lines whole, and part of the 35th, left out.
    expect(await section(page, "out").locator(".cut").textContent()).toBe(
      `Only the last 64 KB is shown: 34 earlier chunks (${100_017 - 65_536} characters) left out. whole stream`,
    );
    // A name and chunks with markup in them are text, and the link reaches that stream.
    const odd = page.locator("section.stream").first();
    expect(await odd.locator("strong").textContent()).toBe('<b id="bold">tag</b>');
    expect(await odd.locator("pre").textContent()).toBe("<i id='it'>hi</i>");
    expect(await page.locator("#bold, #it").count()).toBe(0);
    expect(await (await fetch(`${url}${await odd.locator("a").getAttribute("href")}`)).text()).toBe("<i id='it'>hi</i>");
    await section(page, "out").locator(".cut a").click();
    const whole = (await page.locator("body").textContent())!;
    expect(page.url()).toBe(`${url}/runs/long-1/streams/out/text`);
    expect(whole.length).toBe(100_017);
    expect(whole.startsWith(`000${"-".repeat(996)}\n001`)).toBe(true);
    await page.close();
  });
});
