// Global setup of the integration project: brings every package's dist/ up to date (`tsc -b`,
// incremental: under a second when nothing changed) so the services the tests start run the code
// under test (see node-entry.ts). Skipped with FLEET_TEST_FROM_SOURCE=1.
import { execFileSync } from "node:child_process";
import { join } from "node:path";

export default function buildServices(): void {
  if (process.env.FLEET_TEST_FROM_SOURCE === "1") return;
  const root = join(import.meta.dirname, "..", "..");
  try {
    execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-b"], {
      cwd: root,
      stdio: "pipe",
    });
  } catch (err) {
    const out = err as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(
      `tsc -b failed, so the services cannot be started from dist/:\n${out.stdout ?? ""}${out.stderr ?? ""}`,
    );
  }
}
