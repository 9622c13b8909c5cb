// Free TCP port discovery on the loopback interface.

import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** The lowest port handed out below the ephemeral range. */
const LOWEST = 10_000;
const ATTEMPTS = 64;

/**
 * Returns a TCP port that was free on `host` a moment ago. It is drawn at random below the kernel's
 * ephemeral range (Linux: `ip_local_port_range`, 32768–60999 by default), from which every
 * `listen(0)` and every outgoing connection takes its port: a server another test starts on port 0,
 * or a client's connection, never takes it between this call and the caller's bind (a `fleet up`
 * gateway once got another test's HTTP server's 404s on its chosen port). Where that range cannot be
 * read or leaves no room below it, the OS picks (`listen(0)`).
 * Contract: another caller of this function may still draw the same port before the caller binds
 * it; callers that spawn servers retry on "address already in use".
 */
export async function getFreePort(host = "127.0.0.1"): Promise<number> {
  const highest = ephemeralLow() - 1;
  if (highest > LOWEST) {
    for (let i = 0; i < ATTEMPTS; i++) {
      const port = LOWEST + Math.floor(Math.random() * (highest - LOWEST + 1));
      if ((await listenOnce(host, port)) !== undefined) return port;
    }
  }
  const port = await listenOnce(host, 0);
  if (port === undefined) throw new Error(`getFreePort: no port could be bound on ${host}`);
  return port;
}

/** The first port of the kernel's ephemeral range; 0 when it cannot be read. */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) ? low : 0;
  } catch {
    return 0;
  }
}

/** Binds `port` (0: any) on `host` and closes it again: the port bound, or undefined when it was taken. */
function listenOnce(host: string, port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(undefined));
    server.listen({ host, port, exclusive: true }, () => {
      const address = server.address();
      const bound = address !== null && typeof address === "object" ? address.port : undefined;
      server.close(() => resolve(bound));
    });
  });
}
