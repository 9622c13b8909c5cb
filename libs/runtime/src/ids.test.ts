import { describe, expect, it } from "vitest";
import { newId } from "./ids.js";

describe("newId", () => {
  it("mints UUIDv7 strings carrying the timestamp, unique across pool refills", () => {
    const ids = Array.from({ length: 1_000 }, () => newId(1_764_450_000_000));
    expect(new Set(ids).size).toBe(1_000);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Number.parseInt(ids[0]!.replace(/-/g, "").slice(0, 12), 16)).toBe(1_764_450_000_000);
    for (const ms of [0, 1, 0xffffff, 0x1000000, 2 ** 48 - 1]) {
      expect(Number.parseInt(newId(ms).replace(/-/g, "").slice(0, 12), 16)).toBe(ms);
    }
  });
});
