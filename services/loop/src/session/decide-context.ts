// What the pure deciders are given besides the fold: time and ids, the worker's defaults, what
// tools exist and how their arguments validate, the tenant's budget, the archive's name.
import { AGENT_TOOL_NAME } from "@fleet/protocol";
import type { DecideContext } from "../decide/decision.js";
import { validateToolArguments } from "../engine/index.js";
import { toolDefinitions } from "./llm-ports.js";
import type { SessionShell } from "./session-shell.js";

export function decideContextOf(shell: SessionShell): DecideContext {
  const deps = shell.deps;
  return {
    now: deps.now(),
    newId: deps.newId,
    defaults: deps.settings.defaults,
    isKnownTool: (name) =>
      deps.registry.get(name) !== undefined || (name === AGENT_TOOL_NAME && deps.subAgents !== undefined),
    validateToolArgs: (name, args) => {
      const tool = toolDefinitions(shell).find((t) => t.name === name);
      if (!tool) return { ok: false, error: `Tool ${name} not found` };
      const valid = validateToolArguments(tool, args);
      return valid.ok ? { ok: true } : valid;
    },
    tenantBudget: shell.budget.tenantBudget(),
    archiveRef: deps.lifecycle?.archive.ref,
  };
}
