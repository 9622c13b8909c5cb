// Writes libs/protocol/schemas/*.json from the zod schemas (`npm run schemas`), removing stale files.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildJsonSchemas } from "./json-schemas.js";

const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "schemas");
mkdirSync(dir, { recursive: true });
const files = buildJsonSchemas();
for (const name of readdirSync(dir)) {
  if (name.endsWith(".json") && !(name in files)) rmSync(join(dir, name));
}
for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
console.log(`wrote ${Object.keys(files).length} schemas to ${dir}`);
