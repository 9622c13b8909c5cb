// How a test runs a service's entry point in its own node process: its build (`services/<s>/dist/`,
// which the integration project's global setup brings up to date with `tsc -b` before any test
// runs), or, with FLEET_TEST_FROM_SOURCE=1, its TypeScript sources through tsx. A built service
// starts in about half the time (no loader thread transpiling and resolving every module), and the
// suite starts services a few hundred times.
import { existsSync } from "node:fs";

/** Whether services run from their TypeScript sources (FLEET_TEST_FROM_SOURCE=1) instead of dist/. */
export const FROM_SOURCE = process.env.FLEET_TEST_FROM_SOURCE === "1";

const SOURCE_ARGS = ["--conditions=@fleet/source", "--import", "tsx"];

/**
 * The node arguments that run `entry` (an absolute path to a `.ts` file): for a service's
 * `services/<s>/src/<name>.ts`, its built `services/<s>/dist/<name>.js` when it exists; for any
 * other file (test fixtures, examples), or from source, the file itself through tsx.
 */
export function nodeArgsFor(entry: string): string[] {
  const built = entry.replace(/\/services\/([^/]+)\/src\/([^/]+)\.ts$/, "/services/$1/dist/$2.js");
  if (!FROM_SOURCE && built !== entry && existsSync(built)) return [built];
  return [...SOURCE_ARGS, entry];
}
