// Free TCP port discovery on the loopback interface.

import { createServer } from "node:net";

/**
 * Returns a TCP port that was free on `host` a moment ago (the OS picks it, then the probe socket closes).
 * Contract: another process may grab the port before the caller binds it; callers that spawn servers retry
 * on "address already in use".
 */
export function getFreePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === "string") {
        server.close();
        reject(new Error("getFreePort: server.address() returned no port"));
        return;
      }
      const { port } = address;
      server.close(() => resolve(port));
    });
  });
}
