import { defineConfig } from "vitest/config";

const conditions = ["@fleet/source", "node", "import", "default"];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ["@fleet/source"] } },
  test: {
    // Every event a loop appends is checked against the schema while tests run (off in the service).
    env: { FLEET_VALIDATE_APPENDS: "1" },
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: [
            "libs/**/src/**/*.test.ts",
            "services/**/src/**/*.test.ts",
            "examples/**/src/**/*.test.ts",
            "test/chaos/*.test.ts",
            "test/chaos/checks/**/*.test.ts",
          ],
          exclude: ["**/node_modules/**", "**/dist/**", "**/*.int.test.ts"],
          testTimeout: 20_000,
          // Unit files share a worker's module cache instead of importing the sources anew per file:
          // the import was most of the project's time (they start no servers; each restores what it
          // stubs, and they pass in any order: --sequence.shuffle).
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          // The services the tests start run from dist/, built here first (test/support/node-entry.ts).
          globalSetup: ["test/support/build-services.ts"],
          include: ["test/**/*.test.ts", "libs/**/src/**/*.int.test.ts", "services/**/src/**/*.int.test.ts"],
          exclude: ["**/node_modules/**", "**/dist/**", "test/chaos/*.test.ts", "test/chaos/checks/**"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // What crosses a process is awaited for as long as a loaded CI machine can take.
          expect: { poll: { timeout: 10_000 } },
          // Files share a worker's module cache (importing the sources anew per file cost about
          // 0.6 s a file). Each file starts and stops its own servers and processes, and restores
          // any environment variable it sets.
          isolate: false,
        },
      },
    ],
  },
});
