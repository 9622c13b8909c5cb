// Where the worker programs are and how to run them: `node dist/main.js` when built, else the
// TypeScript sources through tsx with the `@fleet/source` condition (no build needed in dev).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (this file is `libs/client/{src,dist}/cli/up/service-specs.*`). */
export const REPO_ROOT = fileURLToPath(new URL("../../../../../", import.meta.url));

export type ServiceName = "loop" | "tools" | "store" | "gateway";

const FOLDERS: Record<ServiceName, string> = {
  loop: "loop",
  tools: "tools",
  store: "session-store",
  gateway: "gateway",
};

export interface Program {
  command: string;
  args: string[];
  /** What runs, for the banner. */
  entry: string;
}

/**
 * How to run a service, or `undefined` when it does not exist in this checkout. `FLEET_FROM_SOURCE=1`
 * forces the sources even when `dist/main.js` exists.
 */
export function serviceProgram(name: ServiceName, env: NodeJS.ProcessEnv): Program | undefined {
  const dir = join(REPO_ROOT, "services", FOLDERS[name]);
  const dist = join(dir, "dist", "main.js");
  const src = join(dir, "src", "main.ts");
  if (existsSync(dist) && env.FLEET_FROM_SOURCE !== "1")
    return { command: process.execPath, args: [dist], entry: dist };
  if (!existsSync(src)) return undefined;
  return { command: process.execPath, args: [...sourceNodeArgs(), src], entry: src };
}

/** `node` flags that run TypeScript sources of this workspace. */
export function sourceNodeArgs(): string[] {
  return ["--conditions=@fleet/source", "--import", import.meta.resolve("tsx")];
}

/** The bundled scripted-provider demo (lists the workspace, reads a file, writes a summary). */
export const DEMO_SCRIPT = join(REPO_ROOT, "libs", "client", "demo", "demo-script.json");

export const serviceDir = (name: ServiceName) => join(REPO_ROOT, "services", FOLDERS[name]);
