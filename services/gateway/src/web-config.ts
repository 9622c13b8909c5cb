// The gateway's settings for browsers (CORS, stream tickets) and for webhook safety, from the
// environment, and the options they become.
import { envInt } from "@fleet/runtime";
import { z } from "zod";
import { MIN_TICKET_KEY_CHARS, ticketKeyOf } from "./http/stream-ticket.js";
import { type AddressAllowance, parseAllowance } from "./webhooks/address-policy.js";

/** The items of a comma-separated setting, trimmed; unset or empty: none. */
const itemsOf = (v: string | undefined): string[] =>
  (v ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);

/** A comma-separated list of browser origins (`scheme://host[:port]`); unset or empty: none. */
const envOriginList = () =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      const origins = itemsOf(v);
      const bad = origins.filter((o) => !isOrigin(o));
      if (bad.length > 0) {
        ctx.addIssue({ code: "custom", message: `not origins (scheme://host[:port], no path): ${bad.join(", ")}` });
        return z.NEVER;
      }
      return origins;
    });

const isOrigin = (origin: string) =>
  URL.canParse(origin) && /^https?:$/.test(new URL(origin).protocol) && new URL(origin).origin === origin;

export const GatewayWebEnv = {
  /**
   * Browser origins that may call the API from their pages (CORS), e.g. `https://console.example.com`;
   * default none. In loopback mode they may also write (the cross-origin check lets them through).
   */
  FLEET_GATEWAY_CORS_ORIGINS: envOriginList(),
  /**
   * HMAC key of stream tickets, at least 32 characters; every gateway behind one address must share
   * it. Unset: a random key per process (a ticket then works only on the gateway that issued it).
   */
  FLEET_GATEWAY_TICKET_KEY: z
    .string()
    .optional()
    .refine((v) => !v || v.length >= MIN_TICKET_KEY_CHARS, `must be at least ${MIN_TICKET_KEY_CHARS} characters`),
  /** How long a stream ticket may be used to open (or reopen) a stream. */
  FLEET_GATEWAY_TICKET_TTL_MS: envInt(60_000, 1_000, 3_600_000),
  /**
   * Webhook receivers at private, loopback and link-local addresses: unset or `0` refused, `1`
   * allowed, or a comma-separated list of the addresses and CIDR ranges allowed. Cloud metadata
   * addresses are refused unless listed.
   */
  FLEET_WEBHOOK_ALLOW_PRIVATE: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const allowance = parseAllowance(v);
      if ("error" in allowance) {
        ctx.addIssue({ code: "custom", message: allowance.error });
        return z.NEVER;
      }
      return allowance;
    }),
  /** DNS servers (`ip` or `ip:port`, comma-separated) that resolve webhook hosts; default the system's resolver. */
  FLEET_WEBHOOK_DNS_SERVERS: z.string().optional().transform(itemsOf),
  /** Failed delivery attempts in a row after which a webhook is disabled. */
  FLEET_GATEWAY_WEBHOOK_MAX_FAILURES: envInt(20, 1, 1_000_000),
};

/** What the gateway does for browsers and webhooks (the defaults are those of an empty environment). */
export interface GatewayWebOptions {
  corsOrigins: readonly string[];
  ticketKey: Buffer;
  ticketTtlMs: number;
  webhookAllowance: AddressAllowance;
  webhookDnsServers: readonly string[];
  webhookMaxFailures: number;
}

type WebEnv = { [K in keyof typeof GatewayWebEnv]: z.infer<(typeof GatewayWebEnv)[K]> };

export function webOptionsOf(env: Partial<WebEnv> = {}): GatewayWebOptions {
  return {
    corsOrigins: env.FLEET_GATEWAY_CORS_ORIGINS ?? [],
    ticketKey: ticketKeyOf(env.FLEET_GATEWAY_TICKET_KEY),
    ticketTtlMs: env.FLEET_GATEWAY_TICKET_TTL_MS ?? 60_000,
    webhookAllowance: env.FLEET_WEBHOOK_ALLOW_PRIVATE ?? { kind: "none" },
    webhookDnsServers: env.FLEET_WEBHOOK_DNS_SERVERS ?? [],
    webhookMaxFailures: env.FLEET_GATEWAY_WEBHOOK_MAX_FAILURES ?? 20,
  };
}
