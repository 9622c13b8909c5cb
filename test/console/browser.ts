// Debian's Chromium driven by playwright-core (headless), and the console's production build.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const CHROMIUM = process.env.FLEET_CHROMIUM ?? "/usr/bin/chromium";

/** Builds services/console into its dist/ (what the gateway serves at `/`); throws with Vite's output. */
export function buildConsole(): void {
  const vite = join(ROOT, "node_modules/vite/bin/vite.js");
  const out = spawnSync(process.execPath, [vite, "build"], { cwd: join(ROOT, "services/console"), encoding: "utf8" });
  if (out.status !== 0) throw new Error(`console build failed:\n${out.stdout}\n${out.stderr}`);
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: run scripts/ensure-servers.sh (apt-get install chromium)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
    ],
  });
}

/** A 1280×860 page of `browser` that reports the app's uncaught errors and waits up to 15 s per step. */
export async function newConsolePage(browser: Browser): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.on("pageerror", (err) => console.error(`console page error: ${err.message}`));
  page.setDefaultTimeout(15_000);
  return page;
}
