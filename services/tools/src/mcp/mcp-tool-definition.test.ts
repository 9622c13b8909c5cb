import { describe, expect, it } from "vitest";
import { validateToolArgs } from "../validate-args.js";
import { buildMcpToolDefinition, decideMcpRetry } from "./mcp-tool-definition.js";

const schema = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: { a: { type: "number" }, b: { type: "number", default: 2 } },
  required: ["a"],
};

describe("buildMcpToolDefinition", () => {
  const def = buildMcpToolDefinition(
    "calc",
    { name: "add", description: "Adds", inputSchema: schema, annotations: { readOnlyHint: true } },
    async () => ({ content: [] }),
  );

  it("publishes the server's schema and description under the mcp__ name", () => {
    expect(def.name).toBe("mcp__calc__add");
    expect(def.description).toBe("Adds");
    expect(def.jsonSchema).toEqual({
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number", default: 2 } },
      required: ["a"],
    });
    expect(def.retry).toBe("safe");
  });

  it("validates with the server's schema and passes the arguments on as they came", () => {
    expect(validateToolArgs(def, { a: 1, extra: true })).toEqual({ ok: true, value: { a: 1, extra: true } });
    const bad = validateToolArgs(def, { b: 1 });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.error).toMatch(/^Validation failed for tool "mcp__calc__add":\n {2}- a: /);
  });
});

describe("decideMcpRetry", () => {
  it("is safe only for read-only or idempotent tools", () => {
    const info = (annotations?: object) => ({
      name: "t",
      inputSchema: { type: "object" },
      ...(annotations ? { annotations } : {}),
    });
    expect(decideMcpRetry(info({ readOnlyHint: true }))).toBe("safe");
    expect(decideMcpRetry(info({ idempotentHint: true }))).toBe("safe");
    expect(decideMcpRetry(info({ readOnlyHint: false, destructiveHint: true }))).toBe("never");
    expect(decideMcpRetry(info())).toBe("never");
  });
});
