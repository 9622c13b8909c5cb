// The SDK's calls on agents (PROTOCOL "Agents"): versions in KV `fleet_agents`, written once, with
// refusals and KV failures turned into FleetErrors.
import { AgentName, AgentSettings, type AgentVersion, AgentVersionNumber, KV_BUCKETS, validate } from "@fleet/protocol";
import { type AgentStore, AgentStoreError, type AgentSummary, createAgentStore } from "@fleet/runtime";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { FleetError, isFleetError } from "./errors.js";
import { describeError } from "./nats-failures.js";
import { operatorKvWriteError } from "./tenant-limits.js";

/** What `createAgent` / `updateAgent` write as the new version. */
export interface AgentDefinition {
  settings: AgentSettings;
  description?: string;
}

/** An agent with every version, and (when the store answered) how many sessions run each. */
export interface AgentDetails {
  name: string;
  latest: number;
  versions: AgentVersion[];
}

const WHAT = `agents in KV ${KV_BUCKETS.agents.name}`;

function checkedName(name: string): string {
  const parsed = validate(AgentName, name);
  if (!parsed.ok) throw new FleetError("invalid_input", "invalid", `agent name: ${parsed.error}`);
  return parsed.value;
}

function checkedDefinition(def: AgentDefinition): AgentDefinition {
  const settings = validate(AgentSettings, def.settings);
  if (!settings.ok) throw new FleetError("invalid_input", "invalid", `agent settings: ${settings.error}`);
  if (def.description !== undefined && (typeof def.description !== "string" || def.description.length > 4096)) {
    throw new FleetError("invalid_input", "invalid", "agent description: a string of at most 4096 characters");
  }
  return { settings: settings.value, ...(def.description !== undefined ? { description: def.description } : {}) };
}

/** A refusal of the store as a FleetError of kind `rejected` (`conflict`, `not_found`; `invalid` record: `protocol`). */
function refusal(err: AgentStoreError): FleetError {
  if (err.code === "invalid") return new FleetError("protocol", "invalid", err.message);
  return new FleetError("rejected", err.code === "exists" ? "conflict" : "not_found", err.message);
}

/** The tenant's agents over one connection: each call opens the bucket (cheap: one stream info). */
export class AgentsApi {
  readonly #nc: NatsConnection;
  readonly #now: () => number;
  constructor(nc: NatsConnection, now: () => number = Date.now) {
    this.#nc = nc;
    this.#now = now;
  }

  async #store(): Promise<AgentStore> {
    return createAgentStore(await new Kvm(this.#nc).open(KV_BUCKETS.agents.name));
  }

  async #read<T>(what: string, run: (store: AgentStore) => Promise<T>): Promise<T> {
    try {
      return await run(await this.#store());
    } catch (err) {
      if (err instanceof AgentStoreError) throw refusal(err);
      if (isFleetError(err)) throw err;
      throw new FleetError("unavailable", "kv", `cannot read ${what} (${describeError(err)})`, { cause: err });
    }
  }

  async #write(run: (store: AgentStore) => Promise<AgentVersion>): Promise<AgentVersion> {
    try {
      return await run(await this.#store());
    } catch (err) {
      if (err instanceof AgentStoreError) throw refusal(err);
      throw operatorKvWriteError(WHAT, err);
    }
  }

  /**
   * Writes version 1 of a new agent. Errors: `invalid_input`; `rejected`/`conflict` when the agent
   * exists; `unavailable` (`permission`: only an operator or the gateway may write agents).
   */
  create(name: string, def: AgentDefinition): Promise<AgentVersion> {
    const checked = checkedDefinition(def);
    const agent = checkedName(name);
    return this.#write((store) => store.create(agent, checked, this.#now()));
  }

  /**
   * Writes the agent's next version (never changes one). Concurrent updates each get their own
   * number. Errors as `create`; `rejected`/`not_found` when the agent does not exist.
   */
  update(name: string, def: AgentDefinition): Promise<AgentVersion> {
    const checked = checkedDefinition(def);
    const agent = checkedName(name);
    return this.#write((store) => store.update(agent, checked, this.#now()));
  }

  /** One version (absent: the latest). Errors: `rejected`/`not_found` when there is no such agent or version. */
  async get(name: string, version?: number): Promise<AgentVersion> {
    const agent = checkedName(name);
    if (version !== undefined && !AgentVersionNumber.safeParse(version).success) {
      throw new FleetError("invalid_input", "invalid", "agent version: a whole number from 1");
    }
    const found = await this.#read(WHAT, (store) => store.get(agent, version));
    if (!found) {
      throw new FleetError(
        "rejected",
        "not_found",
        `Agent ${agent}${version !== undefined ? `@${version}` : ""} not found`,
      );
    }
    return found;
  }

  /** Every agent with its latest version, by name. */
  list(): Promise<AgentSummary[]> {
    return this.#read(WHAT, (store) => store.list());
  }

  /** The agent with every version, oldest first. Errors: `rejected`/`not_found`. */
  async show(name: string): Promise<AgentDetails> {
    const agent = checkedName(name);
    const versions = await this.#read(WHAT, (store) => store.versions(agent));
    const latest = versions.at(-1);
    if (!latest) throw new FleetError("rejected", "not_found", `Agent ${agent} not found`);
    return { name: agent, latest: latest.version, versions };
  }
}
