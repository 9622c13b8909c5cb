import { getModel, getProviders } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { createModelCatalog } from "./model-catalog.js";
import { getModelInfo } from "./models.js";
import { type ModelsJson, parseModelsJson } from "./models-json.js";

const BUILT_IN = new Set(getProviders());

function parsed(json: unknown): ModelsJson {
  const result = parseModelsJson(JSON.stringify(json), BUILT_IN);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

describe("parseModelsJson (pi's models.json)", () => {
  it("accepts pi's comments and trailing commas", () => {
    const text = `{
      // local models
      "providers": { "ollama": { "baseUrl": "http://localhost:11434/v1", "api": "openai-completions",
        "apiKey": "ollama", "models": [{ "id": "llama3.1:8b" },], }, },
    }`;
    const result = parseModelsJson(text, BUILT_IN);
    expect(result.ok && result.value.providers.ollama?.models?.[0]?.id).toBe("llama3.1:8b");
  });

  it("refuses what pi refuses, and shell commands, with a clear error", () => {
    const check = (json: unknown) => {
      const result = parseModelsJson(JSON.stringify(json), BUILT_IN);
      return result.ok ? "ok" : result.error;
    };
    expect(check({ providers: { x: { api: "openai-completions", apiKey: "k", models: [{ id: "m" }] } } })).toBe(
      'provider x: "baseUrl" is required when defining custom models',
    );
    expect(check({ providers: { x: { baseUrl: "http://h", api: "openai-completions", models: [{ id: "m" }] } } })).toBe(
      'provider x: "apiKey" is required when defining custom models',
    );
    expect(check({ providers: { x: { baseUrl: "http://h", apiKey: "k", models: [{ id: "m" }] } } })).toBe(
      'provider x, model m: no "api" specified. Set at provider or model level',
    );
    expect(check({ providers: { openai: { apiKey: "!op read secret", baseUrl: "http://h" } } })).toContain(
      "shell command values",
    );
    expect(check({ providers: { x: { models: [{ id: "m", contextWindow: -1 }] } } })).toContain(
      "providers.x.models.0.contextWindow",
    );
    expect(check("{")).toContain("invalid models.json");
    expect(parseModelsJson("{", BUILT_IN)).toMatchObject({
      ok: false,
      error: expect.stringContaining("not valid JSON"),
    });
  });
});

describe("createModelCatalog", () => {
  const config = parsed({
    providers: {
      vllm: {
        baseUrl: "http://gpu:8000/v1",
        api: "openai-completions",
        apiKey: "VLLM_KEY",
        headers: { "x-team": "TEAM_HEADER" },
        authHeader: true,
        compat: { supportsDeveloperRole: false },
        models: [{ id: "qwen", compat: { maxTokensField: "max_tokens" } }],
      },
      openai: {
        baseUrl: "https://proxy.example/v1",
        modelOverrides: { "gpt-4o-mini": { contextWindow: 64_000, cost: { output: 1 } } },
      },
    },
  });
  const catalog = createModelCatalog(config, { VLLM_KEY: "sk-vllm", TEAM_HEADER: "fleet" });

  it("a custom model gets pi's defaults, the provider's endpoint, merged compat, key and headers", () => {
    const resolved = catalog.resolve({ provider: "vllm", modelId: "qwen" });
    expect(resolved?.model).toMatchObject({
      id: "qwen",
      api: "openai-completions",
      provider: "vllm",
      baseUrl: "http://gpu:8000/v1",
      reasoning: false,
      input: ["text"],
      contextWindow: 128_000,
      maxTokens: 16_384,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      compat: { supportsDeveloperRole: false, maxTokensField: "max_tokens" },
    });
    expect(resolved?.apiKey).toBe("sk-vllm");
    expect(resolved?.headers).toEqual({ "x-team": "fleet", Authorization: "Bearer sk-vllm" });
    expect(catalog.info({ provider: "vllm", modelId: "qwen" })).toMatchObject({
      known: true,
      contextWindow: 128_000,
      maxOutputTokens: 16_384,
    });
  });

  it("a built-in model takes the provider's baseUrl and its override; the rest is pi-ai's", () => {
    const builtIn = getModel("openai", "gpt-4o-mini");
    const resolved = catalog.resolve({ provider: "openai", modelId: "gpt-4o-mini" });
    expect(resolved?.model).toMatchObject({
      baseUrl: "https://proxy.example/v1",
      api: builtIn.api,
      contextWindow: 64_000,
      cost: { ...builtIn.cost, output: 1 },
    });
    expect(catalog.info({ provider: "openai", modelId: "gpt-4o" }).price).toEqual(getModel("openai", "gpt-4o").cost);
  });

  it("anthropic is Fleet's own table; an unknown model is unknown, priced at zero", () => {
    expect(catalog.info({ provider: "anthropic", modelId: "claude-sonnet-5" })).toEqual(
      getModelInfo("claude-sonnet-5"),
    );
    expect(catalog.resolve({ provider: "vllm", modelId: "nope" })).toBeUndefined();
    expect(catalog.info({ provider: "nobody", modelId: "x" })).toMatchObject({
      known: false,
      price: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    });
  });

  it("lists pi-ai's providers and models.json's", () => {
    const providers = catalog.providers();
    expect(providers).toContain("vllm");
    expect(providers).toContain("openai");
    expect(providers).toContain("google");
  });
});
