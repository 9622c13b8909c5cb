// Renders nats-server configuration files (pure).

/** JetStream resource limits in bytes; unset means the server default (a share of RAM / disk). */
export interface JetStreamLimits {
  readonly maxMemoryStore?: number;
  readonly maxFileStore?: number;
}

/** Inputs of one nats-server config file. */
export interface NatsConfigInput {
  readonly host: string;
  readonly port: number;
  readonly storeDir: string;
  readonly serverName?: string;
  readonly maxPayload?: number;
  readonly monitorPort?: number;
  readonly jetstream?: JetStreamLimits;
  /** Config text appended as is (e.g. `include "/abs/accounts.conf"` for accounts and users). */
  readonly extra?: string;
  readonly cluster?: {
    readonly name: string;
    readonly port: number;
    /** Route URLs of the other nodes (`nats-route://host:port`), never this node's own. */
    readonly routes: readonly string[];
  };
}

/** The nats-server config text (server 2.9 syntax); strings are JSON-quoted so paths may contain spaces. */
export function buildNatsConfig(input: NatsConfigInput): string {
  const q = (s: string): string => JSON.stringify(s);
  const lines: string[] = [];
  if (input.serverName !== undefined) lines.push(`server_name: ${q(input.serverName)}`);
  lines.push(`listen: ${q(`${input.host}:${input.port}`)}`);
  if (input.maxPayload !== undefined) lines.push(`max_payload: ${input.maxPayload}`);
  if (input.monitorPort !== undefined) lines.push(`http: ${q(`${input.host}:${input.monitorPort}`)}`);
  lines.push("jetstream {", `  store_dir: ${q(input.storeDir)}`);
  if (input.jetstream?.maxMemoryStore !== undefined)
    lines.push(`  max_memory_store: ${input.jetstream.maxMemoryStore}`);
  if (input.jetstream?.maxFileStore !== undefined) lines.push(`  max_file_store: ${input.jetstream.maxFileStore}`);
  lines.push("}");
  if (input.cluster !== undefined) {
    lines.push(
      "cluster {",
      `  name: ${q(input.cluster.name)}`,
      `  listen: ${q(`${input.host}:${input.cluster.port}`)}`,
      `  routes: [${input.cluster.routes.map(q).join(", ")}]`,
      "}",
    );
  }
  if (input.extra !== undefined) lines.push(input.extra);
  return `${lines.join("\n")}\n`;
}
