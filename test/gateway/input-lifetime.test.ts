// Inputs written for a command that was never accepted do not stay: they are in `fleet_inputs`
// only, never copied to `fleet_blobs`, and age out with the bucket (3 s here, 24 h by default).
import { OBJECT_STORES } from "@fleet/protocol";
import { createBlobAccess } from "@fleet/runtime";
import { fakeReply } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayStack, startGatewayStack } from "./support.js";

let stack: GatewayStack;

beforeAll(async () => {
  stack = await startGatewayStack({ inputTtlMs: 3_000 });
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

describe("gateway / input lifetime", () => {
  it("lets the inputs of a command that was never accepted age out of fleet_inputs, never into fleet_blobs", async () => {
    const blobs = createBlobAccess(stack.client.nc);
    // A prompt while a run is active is rejected busy: its 100 kB text was written to fleet_inputs.
    stack.fake.script(fakeReply("slow answer", { eventDelayMs: 500 }));
    await stack.client.prompt("s-busy", "first");
    const rejected = await stack.client.outcomeOf(
      "s-busy",
      { type: "prompt", text: "y".repeat(100_000) },
      {
        commandId: "c-never",
      },
    );
    expect(rejected.event).toMatchObject({ type: "command_rejected", code: "busy" });
    const part = { bucket: OBJECT_STORES.inputs.name, name: "input/s-busy/c-never/0" };
    expect(await blobs.info(part)).toMatchObject({ size: 100_000 });
    expect(await blobs.info({ ...part, bucket: OBJECT_STORES.blobs.name })).toBeUndefined();
    // The bucket's lifetime (3 s in this test, 24 h by default) removes it.
    await expect.poll(async () => blobs.info(part), { timeout: 15_000, interval: 500 }).toBeUndefined();
  }, 60_000);
});
