// The audit feed's mirror in an auditor account (created once, by the account's audit-admin user).
import { auditMirrorStream } from "@fleet/protocol";
import { jetstreamManager, type StreamConfig } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

/**
 * Creates the mirror of `tenant`'s FLEET_EVENTS in the connection's (auditor) account, or finds it.
 * Returns the mirror's message count; errors are data (a refused request names the subject).
 */
export async function ensureAuditMirror(
  nc: NatsConnection,
  tenant: string,
): Promise<{ ok: true; created: boolean; messages: number } | { ok: false; error: string }> {
  const spec = auditMirrorStream(tenant);
  try {
    const jsm = await jetstreamManager(nc);
    const existing = await jsm.streams.info(spec.name).catch(() => null);
    if (existing) {
      const source = existing.config.mirror?.external?.api;
      if (source !== spec.mirror.external.api) {
        return {
          ok: false,
          error: `${spec.name} exists here but does not mirror tenant ${tenant} (${source ?? "no mirror"})`,
        };
      }
      return { ok: true, created: false, messages: existing.state.messages };
    }
    const info = await jsm.streams.add(spec as unknown as Partial<StreamConfig> & { name: string });
    return { ok: true, created: true, messages: info.state.messages };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}
