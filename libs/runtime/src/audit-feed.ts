// The audit feed's mirrors in an auditor account (created once, by the account's audit-admin user).
import { auditMirrorStream } from "@fleet/protocol";
import { jetstreamManager, type StreamConfig } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

/**
 * Creates the mirror of each of `tenant`'s event streams (FLEET_EVENTS, or the K groups'
 * `FLEET_EVENTS_G<g>`) in the connection's (auditor) account, or finds it. `created` when this call
 * created any; `messages` counts every mirror's messages. Errors are data (a refused request names
 * the subject).
 */
export async function ensureAuditMirror(
  nc: NatsConnection,
  tenant: string,
  groups = 1,
): Promise<{ ok: true; created: boolean; messages: number } | { ok: false; error: string }> {
  let created = false;
  let messages = 0;
  try {
    const jsm = await jetstreamManager(nc);
    for (let g = 0; g < groups; g++) {
      const spec = auditMirrorStream(tenant, g, groups);
      const existing = await jsm.streams.info(spec.name).catch(() => null);
      if (existing) {
        const source = existing.config.mirror?.external?.api;
        if (source !== spec.mirror.external.api) {
          return {
            ok: false,
            error: `${spec.name} exists here but does not mirror tenant ${tenant} (${source ?? "no mirror"})`,
          };
        }
        messages += existing.state.messages;
        continue;
      }
      const info = await jsm.streams.add(spec as unknown as Partial<StreamConfig> & { name: string });
      created = true;
      messages += info.state.messages;
    }
    return { ok: true, created, messages };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}
