import { describe, expect, it } from "vitest";
import { redactSecrets, redactText } from "./redact.js";

describe("redact-hook / redactSecrets", () => {
  it("replaces each kind of secret with its marker", () => {
    const text = [
      "anthropic sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv",
      "openai sk-proj-abcdefghijklmnopqrstuvwx",
      "aws AKIAIOSFODNN7EXAMPLE",
      `github ghp_${"a".repeat(36)}`,
      "slack xoxb-1234567890-abcdef",
      "auth Bearer abcdefghijklmnopqrstuvwxyz.0123",
      "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    ].join("\n");
    expect(redactText(text)).toEqual({
      text: [
        "anthropic [REDACTED:anthropic_key]",
        "openai [REDACTED:openai_key]",
        "aws [REDACTED:aws_access_key]",
        "github [REDACTED:github_token]",
        "slack [REDACTED:slack_token]",
        "auth [REDACTED:bearer_token]",
        "[REDACTED:private_key]",
      ].join("\n"),
      count: 7,
    });
  });

  it("walks messages, leaves image data and signatures alone, and returns the same value when clean", () => {
    const key = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv";
    const messages = [
      {
        role: "user",
        content: [
          { type: "text", text: `use ${key}` },
          { type: "image", data: key, mimeType: "x" },
        ],
      },
      { role: "assistant", content: [{ type: "thinking", thinking: "ok", thinkingSignature: key }] },
      { role: "toolResult", content: [{ type: "text", text: "clean" }] },
    ];
    const out = redactSecrets(messages);
    expect(out.count).toBe(1);
    expect(out.value[0]?.content[0]).toEqual({ type: "text", text: "use [REDACTED:anthropic_key]" });
    expect(out.value[0]?.content[1]).toBe(messages[0]?.content[1]);
    expect(out.value[1]).toBe(messages[1]);
    expect(out.value[2]).toBe(messages[2]);
    const clean = [{ role: "user", content: "nothing here" }];
    expect(redactSecrets(clean)).toEqual({ value: clean, count: 0 });
    expect(redactSecrets(clean).value).toBe(clean);
  });
});
