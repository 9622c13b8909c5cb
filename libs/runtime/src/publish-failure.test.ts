import { describe, expect, it } from "vitest";
import {
  isStorageFullError,
  isTransientPublishFailure,
  NO_STREAM,
  PUBLISH_FAILED,
  PUBLISH_TIMEOUT,
  publishFailureCause,
  WRONG_LAST_SEQUENCE,
} from "./publish-failure.js";

describe("publish failures", () => {
  it("classifies a full store, an election, a timeout and a lost connection as passing; a fence as final", () => {
    const causes = [10023, 10002, 10047, NO_STREAM, 10008, 10074, PUBLISH_TIMEOUT, PUBLISH_FAILED, WRONG_LAST_SEQUENCE];
    expect(causes.map(publishFailureCause)).toEqual([
      "storage_full",
      "storage_full",
      "storage_full",
      "unavailable",
      "unavailable",
      "unavailable",
      "timeout",
      "connection",
      "rejected",
    ]);
    expect(causes.map(isTransientPublishFailure)).toEqual([true, true, true, true, true, true, true, true, false]);
    // "message size exceeds maximum allowed": retrying the same message changes nothing.
    expect(publishFailureCause(10054)).toBe("rejected");
  });

  it("recognises a thrown storage refusal by its code, or by the server's text when the code is gone", () => {
    const apiError = Object.assign(new Error("insufficient resources"), { code: 10023 });
    expect(isStorageFullError(apiError)).toBe(true);
    expect(isStorageFullError(Object.assign(new Error("wrong last sequence: 4"), { code: 10071 }))).toBe(false);
    expect(isStorageFullError(new Error("resource limits exceeded for account"))).toBe(true);
    expect(isStorageFullError(new Error("TIMEOUT"))).toBe(false);
    expect(isStorageFullError(undefined)).toBe(false);
  });
});
