// deploy/compose.yaml and deploy/k8s/*.yaml: every manifest parses; every Fleet container runs a
// command the build produces, with environment names its service reads and the NATS user and secret
// of its own tenant and role; the cluster runs 3 NATS nodes and 3 stream replicas.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { GatewayEnv } from "@fleet/gateway";
import { LoopEnv } from "@fleet/loop";
import { CLUSTER_NODES, type FleetRole, userOf } from "@fleet/protocol";
import { StoreEnv } from "@fleet/session-store";
import { ToolsEnv } from "@fleet/tools";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { REPO_ROOT } from "../../libs/protocol/scripts/deploy-files.js";

const DEPLOY = join(REPO_ROOT, "deploy");
/** Names a container may set besides its service's own settings: read by Node itself. */
const NODE_ENV_NAMES = ["NODE_OPTIONS"];
const SERVICES: Record<string, { role: FleetRole; env: readonly string[] }> = {
  "services/loop/dist/main.js": { role: "loop", env: Object.keys(LoopEnv.shape) },
  "services/tools/dist/main.js": { role: "tools", env: Object.keys(ToolsEnv.shape) },
  "services/session-store/dist/main.js": { role: "store", env: Object.keys(StoreEnv.shape) },
  "services/gateway/dist/main.js": { role: "gateway", env: Object.keys(GatewayEnv.shape) },
};
const GATEWAY = "services/gateway/dist/main.js";
const TOOLS = "services/tools/dist/main.js";

type Doc = Record<string, unknown>;
function parse(path: string): Doc[] {
  const docs = parseAllDocuments(readFileSync(path, "utf8"));
  const list = Array.isArray(docs) ? docs : [docs];
  for (const d of list)
    expect(
      d.errors.map((e) => e.message),
      path,
    ).toEqual([]);
  return list.map((d) => d.toJS() as Doc).filter(Boolean);
}

interface FleetContainer {
  where: string;
  command: string[];
  /** compose `security_opt`, or the k8s container's and pod's security contexts. */
  security: Doc;
  env: Record<string, string | { secret: string; key: string }>;
  envFiles: string[];
}

function k8sContainers(): FleetContainer[] {
  const out: FleetContainer[] = [];
  for (const file of readdirSync(join(DEPLOY, "k8s")).filter((f) => f.endsWith(".yaml"))) {
    for (const doc of parse(join(DEPLOY, "k8s", file))) {
      const spec = (doc.spec as { template?: { spec?: Doc & { containers?: Doc[] } } } | undefined)?.template?.spec;
      for (const c of spec?.containers ?? []) {
        if (!String(c.image).startsWith("fleet:")) continue;
        const env: FleetContainer["env"] = {};
        for (const e of (c.env ?? []) as { name: string; value?: string; valueFrom?: { secretKeyRef?: Doc } }[]) {
          const ref = e.valueFrom?.secretKeyRef;
          env[e.name] = ref ? { secret: String(ref.name), key: String(ref.key) } : String(e.value);
        }
        out.push({
          where: `k8s/${file} ${(doc.metadata as Doc).name}`,
          command: c.command as string[],
          security: { pod: spec?.securityContext, hostUsers: spec?.hostUsers, container: c.securityContext },
          env,
          envFiles: [],
        });
      }
    }
  }
  return out;
}

const compose = parse(join(DEPLOY, "compose.yaml"))[0] as { services: Record<string, Doc> };
function composeContainers(): FleetContainer[] {
  return Object.entries(compose.services)
    .filter(([, s]) => String(s.image).startsWith("fleet:"))
    .map(([name, s]) => ({
      where: `compose ${name}`,
      command: s.command as string[],
      security: { securityOpt: s.security_opt },
      env: (s.environment ?? {}) as Record<string, string>,
      envFiles: (s.env_file ?? []) as string[],
    }));
}

const containers = [...k8sContainers(), ...composeContainers()];

describe("deploy / manifests", () => {
  it("finds the loop, tools, store and gateway in compose and in k8s", () => {
    const commands = (prefix: string) =>
      containers
        .filter((c) => c.where.startsWith(prefix))
        .map((c) => c.command.at(-1))
        .sort();
    expect(commands("k8s")).toEqual(Object.keys(SERVICES).sort());
    expect(commands("compose")).toEqual(Object.keys(SERVICES).sort());
  });

  it("runs commands the build produces (tsc -b of a referenced project, src → dist)", () => {
    const references = (
      JSON.parse(readFileSync(join(REPO_ROOT, "tsconfig.json"), "utf8")) as {
        references: { path: string }[];
      }
    ).references.map((r) => r.path);
    expect(readFileSync(join(REPO_ROOT, "Dockerfile"), "utf8")).toMatch(/npx tsc -b/);
    for (const c of containers) {
      expect(c.command[0], c.where).toBe("node");
      const entry = c.command[1] ?? "";
      const pkg = entry.split("/dist/")[0] ?? "";
      const tsconfig = JSON.parse(readFileSync(join(REPO_ROOT, pkg, "tsconfig.json"), "utf8")) as {
        compilerOptions: { rootDir: string; outDir: string };
      };
      expect(tsconfig.compilerOptions, c.where).toMatchObject({ rootDir: "src", outDir: "dist" });
      expect(references, c.where).toContain(pkg);
      expect(existsSync(join(REPO_ROOT, entry.replace("/dist/", "/src/").replace(/\.js$/, ".ts"))), c.where).toBe(true);
    }
  });

  it("sets only environment names the service reads", () => {
    for (const c of containers) {
      const service = SERVICES[c.command[1] ?? ""];
      const unknown = Object.keys(c.env).filter((n) => !service?.env.includes(n) && !NODE_ENV_NAMES.includes(n));
      expect(unknown, c.where).toEqual([]);
    }
  });

  it("logs every container in as its tenant's user for its role, with the password from a secret", () => {
    for (const c of containers) {
      const { role } = SERVICES[c.command[1] ?? ""] ?? { role: "reader" };
      const tenant = String(c.env.FLEET_TENANT);
      expect(c.env.NATS_URL, c.where).toMatch(/^nats:\/\//);
      if (c.where.startsWith("k8s")) {
        expect(c.env.NATS_USER, c.where).toBe(userOf(tenant, role));
        expect(c.env.NATS_PASSWORD, c.where).toEqual({ secret: `fleet-${tenant}-nats`, key: role });
      } else {
        expect(c.envFiles, c.where).toEqual([`secrets/${userOf(tenant, role)}.env`]);
      }
      const host = c.command[1] === GATEWAY ? c.env.FLEET_GATEWAY_HOST : c.env.FLEET_OPS_HOST;
      expect(host, `${c.where}: readiness probes reach the ops server`).toBe("0.0.0.0");
    }
  });

  it("runs a 3-node NATS cluster from the generated ConfigMap, with 3 stream replicas", () => {
    const docs = readdirSync(join(DEPLOY, "k8s")).flatMap((f) => parse(join(DEPLOY, "k8s", f)));
    const nats = docs.find((d) => d.kind === "StatefulSet") as { spec: { replicas: number; template: Doc } };
    expect(nats.spec.replicas).toBe(CLUSTER_NODES.length);
    const configMap = docs.find((d) => d.kind === "ConfigMap") as { metadata: { name: string }; data: Doc };
    expect(JSON.stringify(nats.spec.template)).toContain(configMap.metadata.name);
    expect(Object.keys(configMap.data).sort()).toEqual([
      "accounts.conf",
      ...CLUSTER_NODES.map((n) => `cluster-${n}.conf`),
    ]);
    for (const c of containers.filter((x) => x.where.startsWith("k8s"))) {
      expect(c.env.FLEET_STREAM_REPLICAS, c.where).toBe("3");
    }
  });

  it("starts compose's nats-server with a generated config", () => {
    const nats = compose.services.nats as { command: string[]; volumes: string[] };
    const file = (nats.command.at(-1) ?? "").replace("/etc/nats/", "");
    expect(nats.volumes).toContain("./nats:/etc/nats:ro");
    expect(existsSync(join(DEPLOY, "nats", file))).toBe(true);
  });

  it("gives the gateway its tenant, a tokens file from the secrets, and a published port", () => {
    for (const c of containers.filter((x) => x.command[1] === GATEWAY)) {
      expect(c.env.FLEET_GATEWAY_TOKENS, c.where).toBe("/run/fleet/tokens.json");
      expect(c.env.FLEET_TENANT, c.where).toBe("acme");
    }
    const gateway = compose.services.gateway as { volumes: string[]; ports: string[] };
    expect(gateway.volumes).toEqual(["./secrets/acme-gateway-tokens.json:/run/fleet/tokens.json:ro"]);
    expect(gateway.ports).toEqual(["127.0.0.1:8787:8787"]);
  });

  it("lets bubblewrap start in the tool runners' containers, which stay unprivileged", () => {
    const tools = containers.filter((c) => c.command[1] === TOOLS);
    expect(tools.map((c) => c.where.split(" ")[0])).toEqual(["k8s/fleet.yaml", "compose"]);
    for (const c of tools) {
      if (c.where.startsWith("compose")) {
        expect(c.security.securityOpt, c.where).toEqual([
          "seccomp=unconfined",
          "apparmor=unconfined",
          "systempaths=unconfined",
        ]);
      } else {
        expect(c.security, c.where).toEqual({
          pod: { fsGroup: 1000, runAsNonRoot: true, runAsUser: 1000 },
          hostUsers: false,
          container: {
            allowPrivilegeEscalation: false,
            capabilities: { drop: ["ALL"] },
            seccompProfile: { type: "Unconfined" },
            appArmorProfile: { type: "Unconfined" },
            procMount: "Unmasked",
          },
        });
      }
    }
    // No other container loosens anything.
    for (const c of containers.filter((x) => x.command[1] !== TOOLS)) {
      expect([c.security.securityOpt, c.security.container, c.security.hostUsers], c.where).toEqual([
        undefined,
        undefined,
        undefined,
      ]);
    }
  });
});
