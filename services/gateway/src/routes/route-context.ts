// What the route groups share.
import type { Logger } from "pino";
import type { GatewayMetrics } from "../metrics.js";
import type { TenantLinks } from "../tenant-links.js";

export interface RouteContext {
  links: TenantLinks;
  logger: Logger;
  metrics: GatewayMetrics;
  /** Default wait for a command's outcome. */
  commandTimeoutMs: number;
  keepaliveMs: number;
  sseBufferBytes: number;
}
