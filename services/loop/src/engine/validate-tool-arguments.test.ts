// Argument validation: pi's text, coercion on a copy, validator cache.
import { describe, expect, it } from "vitest";
import type { ToolDefinition } from "./types.js";
import { validateToolArguments, validatorFor } from "./validate-tool-arguments.js";

const tool = (parameters: Record<string, unknown>): ToolDefinition => ({ name: "t", description: "", parameters });
const schema = {
  type: "object",
  properties: {
    text: { type: "string" },
    n: { type: "integer", minimum: 1 },
    flag: { type: "boolean" },
    nested: { type: "object", properties: { k: { type: "number" } }, required: ["k"] },
  },
  required: ["text"],
  additionalProperties: false,
};

describe("validateToolArguments", () => {
  it("coerces primitives on a deep copy, leaving the raw arguments untouched", () => {
    const raw = { text: 5, n: "3", flag: "true", nested: { k: "1.5" } };
    const result = validateToolArguments(tool(schema), raw);
    expect(result).toEqual({ ok: true, args: { text: "5", n: 3, flag: true, nested: { k: 1.5 } } });
    expect(raw).toEqual({ text: 5, n: "3", flag: "true", nested: { k: "1.5" } });
  });

  it("lists every error with pi's path rules (dotted, required key, root), then the raw arguments", () => {
    const raw = { n: 0, nested: {}, extra: true };
    const result = validateToolArguments(tool(schema), raw);
    expect(result).toEqual({
      ok: false,
      error: [
        'Validation failed for tool "t":',
        "  - text: must have required properties text",
        "  - root: must not have additional properties",
        "  - n: must be >= 1",
        "  - nested.k: must have required properties k",
        "",
        "Received arguments:",
        JSON.stringify(raw, null, 2),
      ].join("\n"),
    });
  });

  it("a schema that does not compile fails with the compiler's message", () => {
    const result = validateToolArguments(tool({ type: "object", properties: { a: { type: "no-such-type" } } }), {});
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toMatch(/no-such-type|type must be/);
  });

  it("caches the compiled validator per schema object", () => {
    const parameters = { type: "object", properties: { a: { type: "string" } } };
    const def = tool(parameters);
    expect(validateToolArguments(def, { a: 1 })).toEqual({ ok: true, args: { a: "1" } });
    expect(validatorFor(parameters)).toBe(validatorFor(parameters));
    expect(validatorFor({ ...parameters })).not.toBe(validatorFor(parameters));
  });
});
