import { describe, expect, it } from "vitest";
import { encodeCommand, parseReply } from "./redis-command.js";

describe("testkit / RESP codec", () => {
  it("encodes a command as an array of bulk strings (byte lengths)", () => {
    expect(encodeCommand(["SET", "k", "é"]).toString("utf8")).toBe("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\né\r\n");
  });

  it("decodes simple, error, integer, bulk, null and nested array replies", () => {
    const wire = Buffer.from("*5\r\n+OK\r\n-ERR bad\r\n:42\r\n$5\r\nhello\r\n*2\r\n$-1\r\n$0\r\n\r\n");
    expect(parseReply(wire, 0)).toEqual({
      value: ["OK", { error: "ERR bad" }, 42, "hello", [null, ""]],
      next: wire.length,
    });
  });

  it("returns undefined while the reply is incomplete", () => {
    expect(parseReply(Buffer.from("$5\r\nhel"), 0)).toBeUndefined();
    expect(parseReply(Buffer.from("*2\r\n+a\r\n"), 0)).toBeUndefined();
    expect(parseReply(Buffer.from("+PON"), 0)).toBeUndefined();
  });
});
