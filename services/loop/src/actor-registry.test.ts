import { describe, expect, it } from "vitest";
import { createActorRegistry } from "./actor-registry.js";
import type { SessionActor } from "./session-actor.js";

/** A registry whose loads resolve to distinct stand-in actors; records loads and drops. */
function registry() {
  const loads: number[] = [];
  const dropped: string[] = [];
  const actors = createActorRegistry({
    load: async (_sessionId, _partition, loadId) => {
      loads.push(loadId);
      return { loadId } as unknown as SessionActor;
    },
    onDrop: (sessionId) => dropped.push(sessionId),
    onLoadFailed: () => undefined,
  });
  return { actors, loads, dropped };
}

describe("actor registry", () => {
  it("a second get of a session waits for the same load", async () => {
    const { actors, loads } = registry();
    const [a, b] = await Promise.all([actors.get("s", 1), actors.get("s", 1)]);
    expect(a).toBe(b);
    expect(loads).toHaveLength(1);
  });

  it("an actor of an earlier load that dies late does not drop the session's new load", async () => {
    const { actors, loads, dropped } = registry();
    // Given: the session loaded (load 1), then let go when its partition's lease was lost.
    await actors.get("s", 1);
    const [first] = actors.entries();
    actors.drop("s", first?.loadId);
    expect(dropped).toEqual(["s"]);
    // And loaded again under the new lease (load 2).
    const again = await actors.get("s", 1);
    const [second] = actors.entries();
    expect(second?.loadId).not.toBe(first?.loadId);
    // When: load 1's actor, fenced by its append still in flight, drops itself.
    expect(actors.drop("s", first?.loadId)).toBe(false);
    // Then: load 2 stays listed (no second actor on the next command), and nothing was forgotten.
    expect(dropped).toEqual(["s"]);
    expect(await actors.get("s", 1)).toBe(again);
    expect(loads).toHaveLength(2);
    // Load 2's own drop, and a drop without a load id, still forget the session.
    expect(actors.drop("s", second?.loadId)).toBe(true);
    expect(actors.keys()).toEqual([]);
    await actors.get("s", 1);
    actors.drop("s");
    expect(dropped).toEqual(["s", "s", "s"]);
  });

  it("a failed load leaves no entry and does not drop a later load", async () => {
    let fail = true;
    const dropped: string[] = [];
    const failures: unknown[] = [];
    const actors = createActorRegistry({
      load: async () => {
        if (fail) throw new Error("no leader");
        return {} as SessionActor;
      },
      onDrop: (sessionId) => dropped.push(sessionId),
      onLoadFailed: (_sessionId, err) => failures.push(err),
    });
    await expect(actors.get("s", 1)).rejects.toThrow("no leader");
    expect(actors.keys()).toEqual([]);
    fail = false;
    await actors.get("s", 1);
    expect(actors.keys()).toEqual(["s"]);
    expect(failures).toHaveLength(1);
  });
});
