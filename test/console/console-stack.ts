// One browser test's parts: the console built, the real stack started, headless Chromium on a page.
import type { Browser, Page } from "playwright-core";
import { type GatewayStack, startGatewayStack } from "../gateway/support.js";
import { buildConsole, launchChromium, newConsolePage } from "./browser.js";

export interface ConsoleStack {
  stack: GatewayStack;
  browser: Browser;
  page: Page;
  /** The gateway's URL, which serves the console at `/`. */
  base: string;
  /** Closes the browser, then stops the stack. */
  stop(): Promise<void>;
}

/** Builds the console and starts the stack with `options` and a browser page on it. */
export async function startConsoleStack(options: Parameters<typeof startGatewayStack>[0]): Promise<ConsoleStack> {
  buildConsole();
  const stack = await startGatewayStack(options);
  const browser = await launchChromium().catch(async (err) => {
    await stack.stop();
    throw err;
  });
  const page = await newConsolePage(browser);
  return {
    stack,
    browser,
    page,
    base: stack.gateway.url,
    async stop() {
      await browser.close().catch(() => undefined);
      await stack.stop();
    },
  };
}
