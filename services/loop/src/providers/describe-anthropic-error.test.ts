import { APIConnectionError, APIError, APIUserAbortError } from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { describeAnthropicError } from "./describe-anthropic-error.js";

const body = (type: string, message: string) => ({ type: "error", error: { type, message } });

describe("providers / describeAnthropicError", () => {
  it("names status, error type and the API's message of an HTTP error", () => {
    const error = APIError.generate(
      400,
      body("invalid_request_error", "max_tokens: Field required"),
      undefined,
      new Headers(),
    );
    expect(describeAnthropicError(error)).toBe("400 invalid_request_error: max_tokens: Field required");
    const overloaded = APIError.generate(529, body("overloaded_error", "Overloaded"), undefined, new Headers());
    expect(describeAnthropicError(overloaded)).toBe("529 overloaded_error: Overloaded");
  });

  it("names the error type and message of an SSE error event (no status)", () => {
    const error = new APIError(undefined, body("overloaded_error", "Overloaded"), undefined, new Headers());
    expect(describeAnthropicError(error)).toBe("overloaded_error: Overloaded");
  });

  it("falls back to the SDK's message when the body has no error message", () => {
    expect(describeAnthropicError(APIError.generate(502, undefined, undefined, new Headers()))).toBe(
      "502 status code (no body)",
    );
  });

  it("adds the cause of a connection error", () => {
    const error = new APIConnectionError({ cause: new Error("connect ECONNREFUSED 127.0.0.1:9") });
    expect(describeAnthropicError(error)).toBe("Connection error.: connect ECONNREFUSED 127.0.0.1:9");
  });

  it("uses the message of other errors and values", () => {
    expect(describeAnthropicError(new APIUserAbortError())).toBe("Request was aborted.");
    expect(describeAnthropicError(new TypeError("boom"))).toBe("boom");
    expect(describeAnthropicError("plain")).toBe("plain");
    expect(describeAnthropicError(42)).toBe("Unknown error: 42");
  });
});
