import type { AnyToolDefinition } from "./define-tool.js";

export type ArgsValidation = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * Validates raw tool-call arguments with the tool's zod schema. Like pi-ai, top-level primitive
 * arguments the LLM sent as strings (`"10"`, `"true"`) are coerced to the schema's type first.
 * On failure the error text is pi's:
 * `Validation failed for tool "<name>":\n  - <path>: <message>\n\nReceived arguments:\n<pretty JSON>`
 * (`<path>` is dotted, `root` for the value itself). Never throws.
 */
export function validateToolArgs(tool: AnyToolDefinition, args: unknown): ArgsValidation {
  const coerced = coercePrimitives(tool.jsonSchema, args);
  const result = tool.parameters.safeParse(coerced);
  if (result.success) return { ok: true, value: result.data };
  const lines = result.error.issues.map((issue) => {
    const path = issue.path.map(String).join(".");
    return `  - ${path || "root"}: ${issue.message}`;
  });
  const errors = lines.join("\n") || "Unknown validation error";
  return {
    ok: false,
    error: `Validation failed for tool "${tool.name}":\n${errors}\n\nReceived arguments:\n${pretty(args)}`,
  };
}

function pretty(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? "undefined";
  } catch {
    return String(value);
  }
}

function coercePrimitives(schema: Record<string, unknown>, args: unknown): unknown {
  const props = schema.properties;
  if (!isRecord(args) || !isRecord(props)) return args;
  let out: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(args)) {
    const prop = props[key];
    if (typeof value !== "string" || !isRecord(prop)) continue;
    const converted = convert(value, prop.type);
    if (converted !== undefined) {
      out ??= { ...args };
      out[key] = converted;
    }
  }
  return out ?? args;
}

function convert(value: string, type: unknown): unknown {
  const trimmed = value.trim();
  if ((type === "number" || type === "integer") && trimmed !== "" && Number.isFinite(Number(trimmed))) {
    return Number(trimmed);
  }
  if (type === "boolean" && (trimmed === "true" || trimmed === "false")) return trimmed === "true";
  return undefined;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
