// Writes the golden event logs of fixtures/scenarios.ts to fixtures/<name>.jsonl (one event per line).
// Run: npx tsx --conditions=@fleet/source libs/protocol/scripts/write-fixtures.ts
// The files are golden data: regenerate only on purpose, and review the diff.
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { encodeEvent } from "@fleet/protocol";
import { SCENARIOS } from "../fixtures/scenarios.js";

const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures");
const decoder = new TextDecoder();
for (const [name, build] of Object.entries(SCENARIOS)) {
  const lines = build().map((event, i) => {
    const encoded = encodeEvent(event);
    if (!encoded.ok) throw new Error(`${name} event ${i}: ${encoded.error}`);
    return decoder.decode(encoded.bytes);
  });
  writeFileSync(join(dir, `${name}.jsonl`), `${lines.join("\n")}\n`);
  console.log(`${name}.jsonl: ${lines.length} events`);
}
