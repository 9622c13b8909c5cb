// Tool-argument validation with pi's error text, on ajv 8 (pi 0.73 uses TypeBox; the texts agree on
// the common keywords, see README "Validation").
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { thrownText } from "./messages.js";
import type { ToolDefinition } from "./types.js";

const ajv = new Ajv({ coerceTypes: true, allErrors: true, strict: false, validateFormats: false });
const validators = new WeakMap<object, ValidateFunction>();

export type ValidatedArguments = { ok: true; args: unknown } | { ok: false; error: string };

/** The compiled validator of a schema object: compiled on first use, then cached for that object. */
export function validatorFor(schema: Record<string, unknown>): ValidateFunction {
  let validate = validators.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    validators.set(schema, validate);
  }
  return validate;
}

/** Deep copy of a JSON value (tool arguments are parsed JSON): arrays, plain objects, primitives. */
function cloneJson(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(cloneJson);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) copy[key] = cloneJson((value as Record<string, unknown>)[key]);
  return copy;
}

/** pi's path: dotted instance path, `root` for the object itself, the missing key for `required`. */
function pathOf(error: ErrorObject): string {
  const base = error.instancePath.replace(/^\//, "").replace(/\//g, ".");
  if (error.keyword === "required") {
    const missing = (error.params as { missingProperty?: string }).missingProperty;
    if (missing) return base ? `${base}.${missing}` : missing;
  }
  return base || "root";
}

/** TypeBox's wording where it differs from ajv's. */
function messageOf(error: ErrorObject): string {
  if (error.keyword === "required") {
    return `must have required properties ${(error.params as { missingProperty?: string }).missingProperty ?? ""}`;
  }
  if (error.keyword === "additionalProperties") return "must not have additional properties";
  return error.message ?? "is invalid";
}

/**
 * Validates a deep copy of `rawArguments` against the tool's schema, coercing primitive types in
 * the copy (pi's coercion), and returns the copy. On failure returns pi's exact text:
 * `Validation failed for tool "<name>":\n  - <path>: <message>…\n\nReceived arguments:\n<raw JSON, 2-space>`.
 * A schema ajv cannot compile fails with the compiler's message. Never throws.
 */
export function validateToolArguments(tool: ToolDefinition, rawArguments: unknown): ValidatedArguments {
  let validate: ValidateFunction;
  let args: unknown;
  try {
    validate = validatorFor(tool.parameters);
    args = cloneJson(rawArguments);
  } catch (error) {
    return { ok: false, error: thrownText(error) };
  }
  if (validate(args)) return { ok: true, args };
  const lines =
    (validate.errors ?? []).map((e) => `  - ${pathOf(e)}: ${messageOf(e)}`).join("\n") || "Unknown validation error";
  return {
    ok: false,
    error: `Validation failed for tool "${tool.name}":\n${lines}\n\nReceived arguments:\n${JSON.stringify(rawArguments, null, 2)}`,
  };
}
