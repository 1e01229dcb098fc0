// Debian's Chromium, driven by playwright-core, for the UI's browser tests (never a downloaded
// browser). The flags keep it from reaching out to the network this machine does not have.
import fs from "node:fs";
import { chromium, type Browser } from "playwright-core";

const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => fs.existsSync(p));

export async function launchChromium(): Promise<Browser> {
  if (!CHROMIUM) throw new Error("Chromium is not installed: apt-get install -y chromium (the UI's browser tests need it)");
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}
