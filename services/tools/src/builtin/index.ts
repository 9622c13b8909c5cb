import type { AnyToolDefinition } from "../define-tool.js";
import { type BashToolOptions, createBashTool } from "./bash.js";
import { createEditTool } from "./edit.js";
import { createFindTool } from "./find.js";
import { createGrepTool } from "./grep.js";
import { createLsTool } from "./ls.js";
import { createReadTool, type ReadToolOptions } from "./read.js";
import { createWriteTool } from "./write.js";

export const BUILTIN_TOOL_NAMES = ["read", "write", "edit", "bash", "ls", "find", "grep"] as const;
export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number];

export interface BuiltinToolOptions {
  read?: ReadToolOptions;
  bash?: BashToolOptions;
}

/** pi's coding tools, each confined to the call's workspace. */
export function createBuiltinTools(opts: BuiltinToolOptions = {}): Record<BuiltinToolName, AnyToolDefinition> {
  return {
    read: createReadTool(opts.read),
    write: createWriteTool(),
    edit: createEditTool(),
    bash: createBashTool(opts.bash),
    ls: createLsTool(),
    find: createFindTool(),
    grep: createGrepTool(),
  };
}

/** The built-in tools with default options, in pi's order. */
export const builtinTools: readonly AnyToolDefinition[] = Object.values(createBuiltinTools());

/**
 * Picks built-in tools by a comma-separated list (`FLEET_TOOLS`); empty or `all` = every tool.
 * Returns an error (data) naming unknown tools.
 */
export function selectBuiltinTools(
  list: string,
  opts: BuiltinToolOptions = {},
): { ok: true; tools: AnyToolDefinition[] } | { ok: false; error: string } {
  const all = createBuiltinTools(opts);
  const names = list
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0 || (names.length === 1 && names[0] === "all")) return { ok: true, tools: Object.values(all) };
  const unknown = names.filter((n) => !(BUILTIN_TOOL_NAMES as readonly string[]).includes(n));
  if (unknown.length) {
    return {
      ok: false,
      error: `unknown tool(s) ${unknown.join(", ")}; built-in tools are ${BUILTIN_TOOL_NAMES.join(", ")}`,
    };
  }
  return { ok: true, tools: [...new Set(names)].map((n) => all[n as BuiltinToolName]) };
}
