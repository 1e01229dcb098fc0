// `steplog ui` in Chromium: a run's page has an Export link that downloads the run's records as
// one document (`steplog export --children`'s), which `steplog import` takes into another store;
// with --redact the download is redacted (for reading, marked so, not importable).
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { uiSuite } from "./ui-suite.js";
import { startUiServer } from "./ui-server.js";
import { cli, writeWorkflow } from "./helpers.js";

const suite = uiSuite();
const { dirs, children } = suite;

/** `steplog ui` on a free port, looking at the store every 200 ms; resolves with its URL. */
const startUi = async (cwd: string, extra: string[] = []) => (await startUiServer(cwd, ["--poll", "200ms", ...extra], children)).url;

const SIGNUP = `export default defineWorkflow({
  name: "signup",
  async run(ctx) {
    const user = await ctx.step("create", async () => ({ id: "u1", token: "s3cret" }));
    await ctx.step("welcome", async () => { if (process.env.FAIL) throw new Error("mail server down"); });
    return user.id;
  },
});`;

/** Click the run page's Export link; the downloaded document and its file name. */
async function download(url: string, id: string, cwd: string) {
  const page = await suite.browser.newPage();
  await page.goto(`${url}/runs/${id}`);
  const link = page.getByRole("link", { name: /^Export/ });
  const text = await link.textContent();
  const [file] = await Promise.all([page.waitForEvent("download"), link.click()]);
  const saved = path.join(cwd, file.suggestedFilename());
  await file.saveAs(saved);
  await page.close();
  return { text, saved, doc: JSON.parse(fs.readFileSync(saved, "utf8")) as Record<string, any> };
}

describe("steplog ui: Export", () => {
  it("downloads the run's records as one document that steplog import takes into another store", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(cwd, "signup.mjs", SIGNUP);
    expect((await cli(["run", file, "--id", "s1"], { cwd, env: { FAIL: "1" } })).code).not.toBe(0);
    const url = await startUi(cwd);
    const { text, saved, doc } = await download(url, "s1", cwd);
    expect(text).toBe("Export");
    expect(path.basename(saved)).toBe("s1.steplog.json");
    expect(doc).toMatchObject({ run: { id: "s1", workflow: "signup", status: "failed" } });
    expect(doc.redacted).toBeUndefined();
    expect(doc.steps.map((s: { key: string; status: string }) => [s.key, s.status])).toEqual([
      ["create", "succeeded"],
      ["welcome", "failed"],
    ]);
    const imported = await cli(["import", saved, "--db", path.join(cwd, "other.db"), "--json"], { cwd });
    expect(imported.code, imported.output).toBe(0);
    const shown = await cli(["show", "s1", "--db", path.join(cwd, "other.db"), "--json"], { cwd });
    expect(shown.json()).toMatchObject({ id: "s1", status: "failed" });
  });

  it("with --redact: the download is redacted, as the pages are, and says so", async () => {
    const cwd = dirs.make();
    const file = writeWorkflow(cwd, "signup.mjs", SIGNUP);
    await cli(["run", file, "--id", "s2"], { cwd });
    const url = await startUi(cwd, ["--redact", "token"]);
    const { text, doc } = await download(url, "s2", cwd);
    expect(text).toBe("Export (redacted)");
    expect(doc.redacted).toBe(true);
    expect(JSON.stringify(doc)).not.toContain("s3cret");
  });
});
