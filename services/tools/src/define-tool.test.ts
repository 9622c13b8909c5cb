import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool, toRegistration, toToolOutput } from "./define-tool.js";
import { validateToolArgs } from "./validate-args.js";

const greet = defineTool({
  name: "greet",
  description: "Greets someone",
  parameters: z.object({ name: z.string().describe("Who"), times: z.number().int().min(1).default(1) }),
  execute: ({ name, times }) => `hello ${name}`.repeat(times),
});

describe("defineTool", () => {
  it("fills defaults and generates the input JSON Schema without $schema", () => {
    expect(toRegistration(greet)).toEqual({
      name: "greet",
      description: "Greets someone",
      parameters: {
        type: "object",
        properties: {
          name: { type: "string", description: "Who" },
          times: { type: "integer", minimum: 1, maximum: 9007199254740991, default: 1 },
        },
        required: ["name"],
      },
      executionMode: "parallel",
      retry: "safe",
      timeoutMs: 180_000,
      version: "1",
    });
  });

  it("refuses invalid names and timeouts", () => {
    const spec = { description: "", parameters: z.object({}), execute: () => "" };
    expect(() => defineTool({ ...spec, name: "a.b" })).toThrow('invalid tool name "a.b"');
    expect(() => defineTool({ ...spec, name: "ok", timeoutMs: 0 })).toThrow(
      "tool ok: timeoutMs must be a positive integer",
    );
  });

  it("normalises a string result to one text block", () => {
    expect(toToolOutput("hi")).toEqual({ content: [{ type: "text", text: "hi" }] });
  });
});

describe("validateToolArgs", () => {
  it("returns parsed arguments with defaults", () => {
    expect(validateToolArgs(greet, { name: "Ada" })).toEqual({ ok: true, value: { name: "Ada", times: 1 } });
  });

  it("coerces top-level numeric and boolean strings like pi", () => {
    expect(validateToolArgs(greet, { name: "Ada", times: " 2 " })).toEqual({
      ok: true,
      value: { name: "Ada", times: 2 },
    });
  });

  it("formats errors like pi, with dotted paths and root", () => {
    const nested = defineTool({
      name: "nested",
      description: "",
      parameters: z.object({ items: z.array(z.object({ id: z.string() })) }),
      execute: () => "",
    });
    expect(validateToolArgs(nested, { items: [{ id: 1 }] })).toEqual({
      ok: false,
      error:
        'Validation failed for tool "nested":\n  - items.0.id: Invalid input: expected string, received number\n\nReceived arguments:\n{\n  "items": [\n    {\n      "id": 1\n    }\n  ]\n}',
    });
    expect(validateToolArgs(nested, "nope")).toEqual({
      ok: false,
      error:
        'Validation failed for tool "nested":\n  - root: Invalid input: expected object, received string\n\nReceived arguments:\n"nope"',
    });
  });
});
