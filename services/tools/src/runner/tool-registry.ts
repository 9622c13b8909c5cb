import { createHash } from "node:crypto";
import {
  decodeToolRegistration,
  encodeToolRegistration,
  type RunnerPresence,
  type ToolRegistration,
} from "@fleet/protocol";
import { compareVersions } from "@fleet/runtime";
import type { KV } from "@nats-io/kv";
import type { Logger } from "pino";
import { type AnyToolDefinition, toRegistration } from "../define-tool.js";

/** Hash of everything a registration promises the loop (description, schema, mode, retry, timeout). */
export function schemaHash(
  reg: Pick<ToolRegistration, "description" | "parameters" | "executionMode" | "retry" | "timeoutMs">,
) {
  const body = stableJson({
    description: reg.description,
    parameters: reg.parameters,
    executionMode: reg.executionMode,
    retry: reg.retry,
    timeoutMs: reg.timeoutMs,
  });
  return createHash("sha256").update(body).digest("hex").slice(0, 32);
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The names of the tools a runner serves; throws when a name is defined twice. */
export function toolNames(tools: readonly AnyToolDefinition[]): string[] {
  const names = new Set<string>();
  for (const t of tools) {
    if (names.has(t.name)) throw new Error(`tool ${t.name} is defined twice`);
    names.add(t.name);
  }
  return [...names];
}

/** What a runner's presence says it serves: each tool's version and schema hash. */
export const presenceTools = (tools: readonly AnyToolDefinition[]): RunnerPresence["tools"] =>
  Object.fromEntries(tools.map((t) => [t.name, { version: t.version, schemaHash: schemaHash(toRegistration(t)) }]));

export type RegistrationOutcome = { ok: true } | { ok: false; error: string };

/**
 * Registers each tool in KV `fleet_tools` (CAS with create/update, retried on races):
 * - absent or unreadable → written;
 * - same version, same schema → left alone;
 * - same version, different schema → a conflict if a *live* runner (presence in `fleet_leases`)
 *   serves that version with another schema hash: the runner must not start. Otherwise the stale
 *   registration is replaced (logged);
 * - different version → a rolling upgrade: replaced and logged (`tool_schema_replaced`), unless a
 *   live runner serves a newer version, which is kept (logged) while this older runner still serves.
 */
export async function registerTools(opts: {
  kv: KV;
  tools: readonly AnyToolDefinition[];
  runnerId: string;
  liveRunners: () => Promise<RunnerPresence[]>;
  now: () => number;
  logger: Pick<Logger, "info" | "warn">;
}): Promise<RegistrationOutcome> {
  const others = (await opts.liveRunners()).filter((r) => r.runnerId !== opts.runnerId);
  for (const tool of opts.tools) {
    const reg = toRegistration(tool);
    const hash = schemaHash(reg);
    const conflict = others.find(
      (r) => r.tools[tool.name]?.version === reg.version && r.tools[tool.name]?.schemaHash !== hash,
    );
    if (conflict) {
      return {
        ok: false,
        error:
          `tool "${tool.name}" version ${reg.version} is served by live runner ${conflict.runnerId} with a different schema ` +
          `(description, parameters, executionMode, retry or timeoutMs). Give this tool a new version for a rolling upgrade, or stop that runner first.`,
      };
    }
    const encoded = encodeToolRegistration({ ...reg, runnerId: opts.runnerId, registeredAt: opts.now() });
    if (!encoded.ok) throw new Error(`tool ${tool.name}: registration does not encode: ${encoded.error}`);
    let done = false;
    for (let attempt = 0; attempt < 5 && !done; attempt++) {
      const entry = await opts.kv.get(tool.name);
      try {
        if (entry?.operation !== "PUT") {
          await opts.kv.create(tool.name, encoded.bytes);
          opts.logger.info({ evt: "tool_registered", tool: tool.name, version: reg.version }, "tool registered");
          done = true;
          continue;
        }
        const existing = decodeToolRegistration(entry.value);
        if (existing.ok && existing.value.version === reg.version && schemaHash(existing.value) === hash) {
          opts.logger.info(
            { evt: "tool_registration_current", tool: tool.name, version: reg.version },
            "tool registration is current",
          );
          done = true;
          continue;
        }
        if (existing.ok && existing.value.version !== reg.version) {
          const newerLive =
            compareVersions(existing.value.version, reg.version) > 0 &&
            others.some((r) => r.tools[tool.name]?.version === existing.value.version);
          if (newerLive) {
            opts.logger.warn(
              {
                evt: "tool_registration_kept_newer",
                tool: tool.name,
                registered: existing.value.version,
                ours: reg.version,
              },
              "a live runner serves a newer version of this tool; its registration is kept",
            );
            done = true;
            continue;
          }
        }
        await opts.kv.update(tool.name, encoded.bytes, entry.revision);
        if (!existing.ok) {
          opts.logger.warn(
            { evt: "tool_registration_repaired", tool: tool.name },
            "unreadable tool registration replaced",
          );
        } else if (existing.value.version !== reg.version) {
          opts.logger.info(
            { evt: "tool_schema_replaced", tool: tool.name, from: existing.value.version, to: reg.version },
            "rolling upgrade: tool schema replaced",
          );
        } else {
          opts.logger.warn(
            {
              evt: "tool_registration_replaced",
              tool: tool.name,
              version: reg.version,
              previousRunner: existing.value.runnerId,
            },
            "stale registration of the same version replaced (its runner is not live)",
          );
        }
        done = true;
      } catch {
        // Lost a create/update race: read again.
      }
    }
    if (!done) return { ok: false, error: `tool "${tool.name}": could not write its registration to fleet_tools` };
  }
  return { ok: true };
}
