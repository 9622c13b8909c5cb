#!/usr/bin/env node
// Launcher of the `fleet` CLI. Runs the build (dist/cli/main.js) when there is one; otherwise, or with
// FLEET_FROM_SOURCE=1, runs the TypeScript entry in this process through tsx, resolving workspace
// packages with the `@fleet/source` export condition (the in-process form of
// `tsx --conditions=@fleet/source src/cli/main.ts`), so a fresh checkout works without a build.
import { existsSync } from "node:fs";
import { register } from "node:module";

const dist = new URL("../dist/cli/main.js", import.meta.url);
if (existsSync(dist) && process.env.FLEET_FROM_SOURCE !== "1") {
  await import(dist.href);
} else {
  const tsx = await import("tsx/esm/api");
  tsx.register();
  register("./source-condition.mjs", import.meta.url);
  await import(new URL("../src/cli/main.ts", import.meta.url).href);
}
