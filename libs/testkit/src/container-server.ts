// Starts a server image through testcontainers (lazy import) on a fixed host port.

import { trackResource } from "./cleanup-registry.js";

/** What to run in the container. */
export interface ContainerSpec {
  readonly label: string;
  readonly image: string;
  readonly command: readonly string[];
  readonly containerPort: number;
  /** Bound on 127.0.0.1-reachable host port, fixed so a restart keeps the URL. */
  readonly hostPort: number;
  readonly readyPattern: RegExp;
  readonly startTimeoutMs: number;
  readonly bindMount?: { readonly source: string; readonly target: string };
}

/** A running container. */
export interface ContainerServer {
  readonly host: string;
  stop(): Promise<void>;
  restart(): Promise<void>;
}

/** Starts the container and resolves once `readyPattern` appears in its log. */
export async function startContainerServer(spec: ContainerSpec): Promise<ContainerServer> {
  const { GenericContainer, Wait } = await import("testcontainers");
  let builder = new GenericContainer(spec.image)
    .withCommand([...spec.command])
    .withExposedPorts({ container: spec.containerPort, host: spec.hostPort })
    .withWaitStrategy(Wait.forLogMessage(spec.readyPattern))
    .withStartupTimeout(spec.startTimeoutMs);
  if (spec.bindMount !== undefined) builder = builder.withBindMounts([{ ...spec.bindMount, mode: "rw" }]);
  const container = await builder.start();
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await container.stop();
    untrack();
  };
  const untrack = trackResource({
    label: `${spec.label} container ${container.getId().slice(0, 12)}`,
    // testcontainers' Ryuk reaper removes containers of a dead process; nothing synchronous to do here.
    killSync: () => {},
    stop,
  });
  return {
    host: container.getHost(),
    stop,
    restart: async () => {
      await container.restart();
    },
  };
}
