// JSON Schemas of the wire formats, generated from the zod schemas (zod 4 `z.toJSONSchema`).
// Pure: `buildJsonSchemas()` returns file name → file text; write-schemas.ts writes them to schemas/.
import {
  AgentLatest,
  AgentVersion,
  FleetCommand,
  FleetEvent,
  RunnerPresence,
  ScheduleDefinition,
  ScheduleEvent,
  SessionConfig,
  SessionEntry,
  STORE_OPS,
  StoreAppliedNotice,
  StoreReply,
  StoreRequest,
  ToolCallRequest,
  ToolRegistration,
  ToolResultRecord,
  toJsonSchema,
} from "@fleet/protocol";
import type { z } from "zod";

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
    { file: "schedule-event", title: "ScheduleEvent", schema: ScheduleEvent },
    { file: "schedule-definition", title: "ScheduleDefinition", schema: ScheduleDefinition },
    { file: "agent-version", title: "AgentVersion", schema: AgentVersion },
    { file: "agent-latest", title: "AgentLatest", schema: AgentLatest },
    { file: "store-applied-notice", title: "StoreAppliedNotice", schema: StoreAppliedNotice },
  ];
  for (const op of STORE_OPS) {
    const name = op.replace(/_/g, "-");
    list.push({ file: `store-${name}-request`, title: `StoreRequest.${op}`, schema: StoreRequest[op] });
    list.push({ file: `store-${name}-reply`, title: `StoreReply.${op}`, schema: StoreReply[op] });
  }
  return list;
}

/** Every schema as `toJsonSchema` writes it (see `jsonSchemaOptions`), with its title. */
export function buildJsonSchemas(): Record<string, string> {
  const files: Record<string, string> = {};
  for (const { file, title, schema } of topLevelSchemas()) {
    const { $schema, ...rest } = toJsonSchema(schema);
    files[`${file}.json`] = `${JSON.stringify({ $schema, title, ...rest }, null, 2)}\n`;
  }
  return files;
}
