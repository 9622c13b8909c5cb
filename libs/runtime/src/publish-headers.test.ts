import { headers } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { PublishHeaders } from "./publish-headers.js";

const wire = (h: unknown) => new TextDecoder().decode((h as { encode(): Uint8Array }).encode());

describe("PublishHeaders", () => {
  it("writes the same bytes as nats.js's headers for a fenced append", () => {
    const ours = PublishHeaders.of({ "Nats-Msg-Id": "e-1", "Nats-Expected-Last-Subject-Sequence": "42" });
    const theirs = headers();
    theirs.set("Nats-Msg-Id", "e-1");
    theirs.set("Nats-Expected-Last-Subject-Sequence", "42");
    expect(wire(ours)).toBe(wire(theirs));
    expect(wire(ours)).toBe("NATS/1.0\r\nNats-Msg-Id: e-1\r\nNats-Expected-Last-Subject-Sequence: 42\r\n\r\n");
  });

  it("leaves out absent fields and reads back what it holds", () => {
    const h = PublishHeaders.of({ "Nats-Msg-Id": "m", "Nats-Expected-Last-Subject-Sequence": undefined });
    expect(h.keys()).toEqual(["Nats-Msg-Id"]);
    expect(h.get("Nats-Msg-Id")).toBe("m");
    expect(h.has("Nats-Expected-Last-Subject-Sequence")).toBe(false);
    h.append("X", "1");
    h.append("X", "2");
    expect(h.values("X")).toEqual(["1", "2"]);
    expect(h.last("X")).toBe("2");
    h.set("X", "3");
    expect([...h]).toEqual([
      ["Nats-Msg-Id", ["m"]],
      ["X", ["3"]],
    ]);
    h.delete("X");
    expect(wire(h)).toBe("NATS/1.0\r\nNats-Msg-Id: m\r\n\r\n");
  });

  it("refuses a value that would break the header block", () => {
    expect(() => PublishHeaders.of({ "Nats-Msg-Id": "a\r\nNats-Expected-Last-Subject-Sequence: 0" })).toThrow();
    expect(() => new PublishHeaders().append("Bad Key", "v")).toThrow();
  });
});
