import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { collectDefaultMetrics, Registry } from "prom-client";

export interface OpsServer {
  registry: Registry;
  port: number;
  close(): Promise<void>;
}

/**
 * HTTP `/healthz` (process alive), `/readyz` (the service's own readiness check) and Prometheus
 * `/metrics`. Port 0 picks a free port.
 */
export async function startOpsServer(opts: {
  port: number;
  host?: string;
  ready: () => boolean | Promise<boolean>;
  registry?: Registry;
}): Promise<OpsServer> {
  const registry = opts.registry ?? new Registry();
  collectDefaultMetrics({ register: registry });
  const server: Server = createServer(async (req, res) => {
    try {
      if (req.url === "/healthz") {
        res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
      } else if (req.url === "/readyz") {
        const ready = await opts.ready();
        res.writeHead(ready ? 200 : 503, { "content-type": "text/plain" }).end(ready ? "ready\n" : "not ready\n");
      } else if (req.url === "/metrics") {
        res.writeHead(200, { "content-type": registry.contentType }).end(await registry.metrics());
      } else {
        res.writeHead(404).end();
      }
    } catch (err) {
      res.writeHead(500).end(String(err));
    }
  });
  await new Promise<void>((resolve) => server.listen(opts.port, opts.host ?? "127.0.0.1", resolve));
  return {
    registry,
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
