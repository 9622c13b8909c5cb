import { describe, expect, it } from "vitest";
import { anyBlobBlocks } from "./resolving-blobs.js";

describe("loop / content by reference in the LLM context", () => {
  it("finds a block by reference in any message, new or walked before", () => {
    const plain = { role: "user", content: [{ type: "text", text: "hi" }], timestamp: 1 };
    const answer = { role: "assistant", content: [{ type: "text", text: "ok" }], timestamp: 2 };
    const byRef = {
      role: "toolResult",
      content: [{ type: "text", text: "preview", blob: { bucket: "fleet_blobs", name: "out/1", size: 9 } }],
      timestamp: 3,
    };
    expect(anyBlobBlocks([plain, answer])).toBe(false);
    // The same messages again (walked once already), then with one by reference after them.
    expect(anyBlobBlocks([plain, answer])).toBe(false);
    expect(anyBlobBlocks([plain, answer, byRef])).toBe(true);
    expect(anyBlobBlocks([byRef])).toBe(true);
  });
});
