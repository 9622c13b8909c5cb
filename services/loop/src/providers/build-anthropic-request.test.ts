import { emptyUsage } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { buildAnthropicRequest, toAnthropicTool } from "./build-anthropic-request.js";
import { getModelInfo } from "./models.js";

const CACHE = { type: "ephemeral" };
const READ_SCHEMA = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };

describe("providers / buildAnthropicRequest", () => {
  it("builds the streaming request: system and last user turn cached, tools, thinking budget, default max_tokens", () => {
    const request = buildAnthropicRequest(
      {
        systemPrompt: "You are terse.",
        messages: [
          { role: "user", content: "read a.txt", timestamp: 1 },
          {
            role: "assistant",
            content: [{ type: "toolCall", id: "t1", name: "read", arguments: { path: "a.txt" } }],
            api: "anthropic-messages",
            provider: "anthropic",
            model: "claude-sonnet-5",
            usage: emptyUsage(),
            stopReason: "toolUse",
            timestamp: 2,
          },
        ],
        tools: [{ name: "read", description: "Read a file", parameters: READ_SCHEMA }],
      },
      { model: { provider: "anthropic", modelId: "claude-sonnet-5" }, thinkingLevel: "medium" },
      getModelInfo("claude-sonnet-5"),
    );
    expect(request).toEqual({
      model: "claude-sonnet-5",
      max_tokens: 64_000,
      system: [{ type: "text", text: "You are terse.", cache_control: CACHE }],
      messages: [
        { role: "user", content: "read a.txt" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "read", input: { path: "a.txt" } }] },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "t1",
              content: [{ type: "text", text: "No result provided" }],
              is_error: true,
              cache_control: CACHE,
            },
          ],
        },
      ],
      tools: [{ name: "read", description: "Read a file", input_schema: READ_SCHEMA }],
      thinking: { type: "enabled", budget_tokens: 10_240 },
      stream: true,
    });
  });

  it("omits a blank system prompt and empty tools; honours maxTokens; off disables thinking", () => {
    expect(
      buildAnthropicRequest(
        { systemPrompt: " ", messages: [{ role: "user", content: "hi", timestamp: 1 }], tools: [] },
        { model: { provider: "anthropic", modelId: "unknown-model" }, thinkingLevel: "off", maxTokens: 500 },
        getModelInfo("unknown-model"),
      ),
    ).toEqual({
      model: "unknown-model",
      max_tokens: 500,
      messages: [{ role: "user", content: [{ type: "text", text: "hi", cache_control: CACHE }] }],
      thinking: { type: "disabled" },
      stream: true,
    });
  });

  it("uses the default max output of an unknown model", () => {
    const request = buildAnthropicRequest(
      { systemPrompt: "", messages: [], tools: [] },
      { model: { provider: "anthropic", modelId: "proxy-x" }, thinkingLevel: "high" },
      getModelInfo("proxy-x"),
    );
    expect([request.max_tokens, request.thinking]).toEqual([32_000, { type: "enabled", budget_tokens: 24_576 }]);
  });

  it("sends a tool's JSON Schema whole, forcing type object", () => {
    const parameters = { properties: { n: { $ref: "#/$defs/N" } }, $defs: { N: { type: "integer" } } };
    expect(toAnthropicTool({ name: "count", description: "Count", parameters })).toEqual({
      name: "count",
      description: "Count",
      input_schema: { ...parameters, type: "object" },
    });
  });
});
