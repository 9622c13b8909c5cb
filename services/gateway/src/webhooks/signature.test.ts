import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { retryDelayMs, signBody, verifySignature } from "./signature.js";

describe("gateway / webhook signatures and retries", () => {
  it("signs the raw body with HMAC-SHA256 and verifies in constant time", () => {
    const body = '{"seq":7}';
    const expected = `sha256=${createHmac("sha256", "s3cret-s3cret-s3cret").update(body).digest("hex")}`;
    expect(signBody("s3cret-s3cret-s3cret", body)).toBe(expected);
    expect(verifySignature("s3cret-s3cret-s3cret", body, expected)).toBe(true);
    expect(verifySignature("s3cret-s3cret-s3cret", `${body} `, expected)).toBe(false);
    expect(verifySignature("other-secret-other", body, expected)).toBe(false);
    expect(verifySignature("s3cret-s3cret-s3cret", body, undefined)).toBe(false);
  });

  it("backs off exponentially up to the maximum", () => {
    expect([1, 2, 3, 4, 10, 1000].map((n) => retryDelayMs(n, 500, 10_000))).toEqual([
      500, 1_000, 2_000, 4_000, 10_000, 10_000,
    ]);
  });
});
