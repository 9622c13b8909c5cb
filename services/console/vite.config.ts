// Builds the console to dist/ (static files the gateway serves at `/`). @fleet/protocol is bundled
// from its TypeScript sources, so the browser folds events with the services' own reducers.
import { defineConfig } from "vite";

export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ["@fleet/source", "browser", "module", "import", "default"] },
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: { outDir: "dist", emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 2000 },
  logLevel: "warn",
});
