// The committed JSON Schemas (libs/protocol/schemas) must match the zod schemas: regenerate with
// `npm run schemas` when this fails.
// biome-ignore lint/style/noRestrictedImports: the test compares generated files on disk
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { buildJsonSchemas } from "../scripts/json-schemas.js";
import { COMMAND_TYPES } from "./commands.js";
import { FleetEvent } from "./events.js";

const DIR = new URL("../schemas/", import.meta.url);
const generated = buildJsonSchemas();

describe("JSON Schemas", () => {
  it("the files on disk are exactly the generated ones (run `npm run schemas` if stale)", () => {
    const onDisk = readdirSync(DIR)
      .filter((f) => f.endsWith(".json"))
      .sort();
    expect(onDisk).toEqual(Object.keys(generated).sort());
    for (const [name, text] of Object.entries(generated)) {
      expect(readFileSync(new URL(name, DIR), "utf8"), `${name} is stale`).toBe(text);
    }
  });

  it("cover every top-level wire schema", () => {
    expect(Object.keys(generated).sort()).toEqual(
      [
        "fleet-event",
        "fleet-command",
        "tool-call-request",
        "tool-result-record",
        "tool-registration",
        "runner-presence",
        "session-entry",
        "session-config",
        "schedule-event",
        "schedule-definition",
        "agent-version",
        "agent-latest",
        "store-applied-notice",
        ...[
          "get-context",
          "get-tree",
          "get-branch",
          "get-entry",
          "list-sessions",
          "export",
          "list-idle",
          "list-running",
          "list-approvals",
          "search-sessions",
          "count-agent-sessions",
        ].flatMap((op) => [`store-${op}-request`, `store-${op}-reply`]),
      ]
        .map((n) => `${n}.json`)
        .sort(),
    );
  });

  it("describe one variant per event and command type; message inputs require text xor message", () => {
    const event = JSON.parse(generated["fleet-event.json"] as string) as {
      oneOf: Array<{ properties: { type: { const: string } } }>;
    };
    expect(event.oneOf.map((o) => o.properties.type.const)).toEqual(FleetEvent.options.map((o) => o.shape.type.value));
    const command = JSON.parse(generated["fleet-command.json"] as string) as {
      oneOf: Array<{ properties: { type: { const: string } }; oneOf?: unknown }>;
    };
    expect(command.oneOf.map((o) => o.properties.type.const)).toEqual(COMMAND_TYPES);
    const withInput = command.oneOf.filter((o) => o.oneOf).map((o) => o.properties.type.const);
    expect(withInput).toEqual(["prompt", "steer", "follow_up", "next_turn"]);
    expect(command.oneOf[1]?.oneOf).toEqual([{ required: ["text"] }, { required: ["message"] }]);
  });

  it("describe what decoders accept: defaulted fields are optional", () => {
    const registration = JSON.parse(generated["tool-registration.json"] as string) as {
      required: string[];
      title: string;
    };
    expect(registration.title).toBe("ToolRegistration");
    expect(registration.required).toEqual(["name", "description", "parameters"]);
  });
});
