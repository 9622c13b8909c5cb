// JSON Schemas of the wire formats, generated from the zod schemas (zod 4 `z.toJSONSchema`).
// Pure: `buildJsonSchemas()` returns file name → file text; write-schemas.ts writes them to schemas/.
import {
  COMMAND_TYPES,
  FleetCommand,
  FleetEvent,
  RunnerPresence,
  SessionConfig,
  SessionEntry,
  STORE_OPS,
  StoreReply,
  StoreRequest,
  ToolCallRequest,
  ToolRegistration,
  ToolResultRecord,
} from "@fleet/protocol";
import { z } from "zod";

/** Command types whose schema requires exactly one of `text` and `message` (a zod refinement). */
const MESSAGE_INPUT_COMMANDS = new Set(["prompt", "steer", "follow_up", "next_turn"]);

/** The top-level schemas, by file name (without `.json`) and title. */
function topLevelSchemas(): Array<{ file: string; title: string; schema: z.ZodType }> {
  const list: Array<{ file: string; title: string; schema: z.ZodType }> = [
    { file: "fleet-event", title: "FleetEvent", schema: FleetEvent },
    { file: "fleet-command", title: "FleetCommand", schema: FleetCommand },
    { file: "tool-call-request", title: "ToolCallRequest", schema: ToolCallRequest },
    { file: "tool-result-record", title: "ToolResultRecord", schema: ToolResultRecord },
    { file: "tool-registration", title: "ToolRegistration", schema: ToolRegistration },
    { file: "runner-presence", title: "RunnerPresence", schema: RunnerPresence },
    { file: "session-entry", title: "SessionEntry", schema: SessionEntry },
    { file: "session-config", title: "SessionConfig", schema: SessionConfig },
  ];
  for (const op of STORE_OPS) {
    const name = op.replace(/_/g, "-");
    list.push({ file: `store-${name}-request`, title: `StoreRequest.${op}`, schema: StoreRequest[op] });
    list.push({ file: `store-${name}-reply`, title: `StoreReply.${op}`, schema: StoreReply[op] });
  }
  return list;
}

/**
 * Every schema describes what the decoders accept (`io: "input"`: fields with defaults are
 * optional). Refinements JSON Schema cannot express are dropped, except the message-input rule of
 * `prompt`/`steer`/`follow_up`/`next_turn`, written as `oneOf` required `text` / required `message`.
 * Anything zod cannot represent becomes `{}` (`unrepresentable: "any"`).
 */
export function buildJsonSchemas(): Record<string, string> {
  const files: Record<string, string> = {};
  for (const { file, title, schema } of topLevelSchemas()) {
    const json = z.toJSONSchema(schema, {
      io: "input",
      unrepresentable: "any",
      override: ({ jsonSchema }) => {
        const type = (jsonSchema.properties?.type as { const?: unknown } | undefined)?.const;
        const isCommand = typeof type === "string" && (COMMAND_TYPES as string[]).includes(type);
        if (isCommand && MESSAGE_INPUT_COMMANDS.has(type) && jsonSchema.properties?.text) {
          jsonSchema.oneOf = [{ required: ["text"] }, { required: ["message"] }];
        }
      },
    });
    const { $schema, ...rest } = json;
    files[`${file}.json`] = `${JSON.stringify({ $schema, title, ...rest }, null, 2)}\n`;
  }
  return files;
}
