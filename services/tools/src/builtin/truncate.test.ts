import { describe, expect, it } from "vitest";
import { formatSize, truncateHead, truncateLine, truncateTail } from "./truncate.js";

describe("truncate", () => {
  it("keeps short content untouched", () => {
    expect(truncateHead("a\nb")).toMatchObject({ content: "a\nb", truncated: false, totalLines: 2 });
    expect(truncateTail("a\nb")).toMatchObject({ content: "a\nb", truncated: false });
  });

  it("head keeps the first lines within both limits", () => {
    expect(truncateHead("1\n2\n3\n4", { maxLines: 2 })).toMatchObject({
      content: "1\n2",
      truncatedBy: "lines",
      outputLines: 2,
      totalLines: 4,
    });
    expect(truncateHead("aaaa\nbbbb\ncccc", { maxBytes: 10 })).toMatchObject({
      content: "aaaa\nbbbb",
      truncatedBy: "bytes",
    });
  });

  it("tail keeps the last lines and may cut the one remaining line", () => {
    expect(truncateTail("1\n2\n3\n4", { maxLines: 2 })).toMatchObject({ content: "3\n4", truncatedBy: "lines" });
    expect(truncateTail("short\nééééé", { maxBytes: 5 })).toMatchObject({ content: "éé", lastLinePartial: true });
  });

  it("cuts long lines and formats sizes like pi", () => {
    expect(truncateLine("abcdef", 3)).toEqual({ text: "abc... [truncated]", wasTruncated: true });
    expect([formatSize(10), formatSize(2048), formatSize(3 * 1024 * 1024)]).toEqual(["10B", "2.0KB", "3.0MB"]);
  });
});
