// The world of a file of console browser tests: the console's production build, the real stack
// (gateway serving it), headless Chromium and one page on it, all closed after the file.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { buildConsole, launchChromium, newConsolePage } from "../console/browser.js";
import { type GatewayStack, startGatewayStack } from "../gateway/support.js";

export interface ConsoleStack {
  stack: GatewayStack;
  browser: Browser;
  /** A 1280×860 page (newConsolePage) that reports the app's uncaught errors. */
  page: Page;
  /** The gateway's URL: the console is at `${base}/`. */
  base: string;
  /** Content-Security-Policy violations Chromium reported on `page` (it logs each on the page's console). */
  cspViolations: string[];
}

/**
 * Registers the file's `beforeAll`/`afterAll`; the returned fields are set once `beforeAll` ran, so
 * read them inside tests and hooks only.
 */
export function useConsoleStack(
  opts: {
    stack?: Parameters<typeof startGatewayStack>[0];
    /** How long each page step may wait (default 15 s). */
    stepTimeoutMs?: number;
  } = {},
): ConsoleStack {
  const ui = { cspViolations: [] as string[] } as ConsoleStack;
  beforeAll(async () => {
    buildConsole();
    ui.stack = await startGatewayStack(opts.stack);
    ui.base = ui.stack.gateway.url;
    ui.browser = await launchChromium();
    ui.page = await newConsolePage(ui.browser);
    if (opts.stepTimeoutMs !== undefined) ui.page.setDefaultTimeout(opts.stepTimeoutMs);
    ui.page.on("console", (msg) => {
      if (/Content Security Policy/i.test(msg.text())) ui.cspViolations.push(msg.text());
    });
  }, 120_000);
  afterAll(async () => {
    await ui.browser?.close().catch(() => undefined);
    await ui.stack?.stop();
  });
  return ui;
}
