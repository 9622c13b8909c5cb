import { describe, expect, it } from "vitest";
import { readCallIdentity } from "./call-identity.js";

const bytes = (value: unknown) => new TextEncoder().encode(typeof value === "string" ? value : JSON.stringify(value));

describe("readCallIdentity", () => {
  it("given an invalid request with readable ids, then they are returned so it can be answered", () => {
    expect(readCallIdentity(bytes({ sessionId: "s-1", toolCallId: "toolu_01", args: 3 }))).toEqual({
      sessionId: "s-1",
      toolCallId: "toolu_01",
    });
  });

  it("given bytes that are not a JSON object, then there is no identity", () => {
    expect(readCallIdentity(bytes("{not json"))).toBeNull();
    expect(readCallIdentity(bytes("null"))).toBeNull();
    expect(readCallIdentity(bytes("[1]"))).toBeNull();
  });

  it("given ids that are not subject tokens, then there is no identity (nothing is published on a bad subject)", () => {
    expect(readCallIdentity(bytes({ sessionId: "s.1", toolCallId: "t" }))).toBeNull();
    expect(readCallIdentity(bytes({ sessionId: "s-1" }))).toBeNull();
    expect(readCallIdentity(bytes({ sessionId: "s-1", toolCallId: "*" }))).toBeNull();
  });
});
