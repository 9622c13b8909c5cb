// How Fleet turns its zod schemas into JSON Schema (draft 2020-12): the generated files in
// schemas/ and the gateway's OpenAPI document use the same options.
import { z } from "zod";
import { COMMAND_TYPES } from "./commands.js";

/** Command types whose schema requires exactly one of `text` and `message` (a zod refinement). */
const MESSAGE_INPUT_COMMANDS = new Set(["prompt", "steer", "follow_up", "next_turn"]);

/** Options of `z.toJSONSchema`, for a single schema or a registry. */
export type JsonSchemaOptions = NonNullable<Parameters<typeof z.toJSONSchema>[1]>;

/**
 * The schema describes what the decoders accept (`io: "input"`: fields with defaults are
 * optional), or with `io: "output"` what a decoder returns. Refinements JSON Schema cannot express
 * are dropped, except the message-input rule of `prompt`/`steer`/`follow_up`/`next_turn`, written as
 * `oneOf` required `text` / required `message`. Anything zod cannot represent becomes `{}`.
 */
export function jsonSchemaOptions(io: "input" | "output" = "input"): JsonSchemaOptions {
  return {
    io,
    unrepresentable: "any",
    override: ({ jsonSchema }) => {
      const type = (jsonSchema.properties?.type as { const?: unknown } | undefined)?.const;
      const isCommand = typeof type === "string" && (COMMAND_TYPES as string[]).includes(type);
      if (isCommand && MESSAGE_INPUT_COMMANDS.has(type) && jsonSchema.properties?.text) {
        jsonSchema.oneOf = [{ required: ["text"] }, { required: ["message"] }];
      }
    },
  };
}

/** One schema as a JSON Schema document. */
export function toJsonSchema(schema: z.ZodType, io: "input" | "output" = "input"): Record<string, unknown> {
  return z.toJSONSchema(schema, jsonSchemaOptions(io)) as Record<string, unknown>;
}
