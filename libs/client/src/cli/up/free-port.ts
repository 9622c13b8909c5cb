import { createServer } from "node:net";

/** A TCP port that was free on 127.0.0.1 a moment ago (callers retry on "address already in use"). */
export function getFreePort(): Promise<number> {
  return listenOnce("127.0.0.1", 0);
}

/** `preferred` when it is free on `host` now, else any free port. */
export function preferredPort(host: string, preferred: number): Promise<number> {
  return listenOnce(host, preferred).catch(() => getFreePort());
}

function listenOnce(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen({ host, port, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error("no free port"))));
    });
  });
}
