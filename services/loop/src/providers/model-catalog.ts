// Every model the loop can call: pi-ai's built-in registry, merged with a models.json (FLEET_MODELS)
// as pi coding-agent 0.73.1's ModelRegistry merges it.
import type { ModelRef } from "@fleet/protocol";
import { type Api, getEnvApiKey, getModels, getProviders, type Model } from "@mariozechner/pi-ai";
import {
  DEFAULT_CONTEXT_WINDOW,
  DEFAULT_MAX_OUTPUT_TOKENS,
  getModelInfo as getAnthropicModelInfo,
  type ModelInfo,
} from "./models.js";
import type { ModelDefinition, ModelOverride, ModelsJson, ProviderConfig } from "./models-json.js";

/** pi's defaults for a models.json model that leaves them out. */
export const CUSTOM_MODEL_DEFAULTS = { contextWindow: 128_000, maxTokens: 16_384 } as const;
const ZERO_COST = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

/** A model resolved for a call: pi-ai's `Model`, the key and the extra headers of its provider. */
export interface ResolvedModel {
  readonly model: Model<Api>;
  readonly apiKey: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
}

export interface ModelCatalog {
  /** Every provider name with at least one model (pi-ai's built-in ones and models.json's). */
  providers(): string[];
  /** The model `ref` names; undefined when neither pi-ai nor models.json knows it. */
  resolve(ref: ModelRef): ResolvedModel | undefined;
  /**
   * Limits and prices of `ref` (budgets, context window). `anthropic` models are Fleet's own
   * table (its native client serves them, so models.json does not apply to them); others pi-ai's or
   * models.json's; unknown: zero price.
   */
  info(ref: ModelRef): ModelInfo;
}

/**
 * The catalog over pi-ai's registry and `config` (a parsed models.json). A provider's `apiKey` and
 * header values name a variable of `env` (else they are literal); without an `apiKey` the key is
 * pi-ai's `getEnvApiKey` (the process environment's `OPENAI_API_KEY`, `GEMINI_API_KEY`, …).
 */
export function createModelCatalog(
  config: ModelsJson | undefined,
  env: Readonly<Record<string, string | undefined>>,
): ModelCatalog {
  const providers = config?.providers ?? {};
  const builtIn = new Set<string>(getProviders());
  const resolveValue = (value: string): string => env[value] || value;
  const resolveHeaders = (headers: Readonly<Record<string, string>> | undefined): Record<string, string> =>
    Object.fromEntries(Object.entries(headers ?? {}).map(([k, v]) => [k, resolveValue(v)]));
  const apiKeyOf = (provider: string): string | undefined => {
    const configured = providers[provider]?.apiKey;
    return configured ? resolveValue(configured) : getEnvApiKey(provider);
  };

  const find = (ref: ModelRef): { model: Model<Api>; headers?: Record<string, string> } | undefined => {
    const config = providers[ref.provider];
    const builtInModels = builtIn.has(ref.provider) ? (getModels(ref.provider as never) as Model<Api>[]) : [];
    const custom = config?.models?.find((m) => m.id === ref.modelId);
    if (config && custom) {
      const model = customModel(ref.provider, config, custom, builtInModels[0]);
      return model ? { model, ...(custom.headers ? { headers: custom.headers } : {}) } : undefined;
    }
    const base = builtInModels.find((m) => m.id === ref.modelId);
    if (!base) return undefined;
    const override = config?.modelOverrides?.[ref.modelId];
    const model = {
      ...applyOverride(base, override),
      ...(config?.baseUrl ? { baseUrl: config.baseUrl } : {}),
    };
    if (config?.compat) model.compat = mergeCompat(config.compat, override?.compat ?? {}) as never;
    return { model, ...(override?.headers ? { headers: override.headers } : {}) };
  };

  return {
    providers: () => [...new Set([...builtIn, ...Object.keys(providers)])].sort(),
    resolve(ref) {
      const found = find(ref);
      if (!found) return undefined;
      const config = providers[ref.provider];
      const apiKey = apiKeyOf(ref.provider);
      const headers = {
        ...resolveHeaders(config?.headers),
        ...resolveHeaders(found.headers),
        ...(config?.authHeader && apiKey ? { Authorization: `Bearer ${apiKey}` } : {}),
      };
      return { model: found.model, apiKey, headers };
    },
    info(ref) {
      if (ref.provider === "anthropic") return getAnthropicModelInfo(ref.modelId);
      const found = find(ref);
      if (!found) {
        return {
          id: ref.modelId,
          known: false,
          contextWindow: DEFAULT_CONTEXT_WINDOW,
          maxOutputTokens: DEFAULT_MAX_OUTPUT_TOKENS,
          price: ZERO_COST,
        };
      }
      const { model } = found;
      return {
        id: model.id,
        known: true,
        contextWindow: model.contextWindow,
        maxOutputTokens: model.maxTokens,
        price: model.cost,
      };
    },
  };
}

/** A models.json model; undefined when it has no `api` or `baseUrl` (pi skips it too). */
function customModel(
  provider: string,
  config: ProviderConfig,
  def: ModelDefinition,
  builtInDefault: Model<Api> | undefined,
): Model<Api> | undefined {
  const api = def.api ?? config.api ?? builtInDefault?.api;
  const baseUrl = def.baseUrl ?? config.baseUrl ?? builtInDefault?.baseUrl;
  if (!api || !baseUrl) return undefined;
  const compat = mergeCompat(config.compat ?? {}, def.compat ?? {});
  return {
    id: def.id,
    name: def.name ?? def.id,
    api,
    provider,
    baseUrl,
    reasoning: def.reasoning ?? false,
    ...(def.thinkingLevelMap ? { thinkingLevelMap: def.thinkingLevelMap } : {}),
    input: def.input ?? ["text"],
    cost: def.cost ?? ZERO_COST,
    contextWindow: def.contextWindow ?? CUSTOM_MODEL_DEFAULTS.contextWindow,
    maxTokens: def.maxTokens ?? CUSTOM_MODEL_DEFAULTS.maxTokens,
    ...(Object.keys(compat).length > 0 ? { compat: compat as never } : {}),
  };
}

/** pi's `applyModelOverride`: plain fields replace, `cost` and `compat` merge. */
function applyOverride(model: Model<Api>, override: ModelOverride | undefined): Model<Api> {
  if (!override) return { ...model };
  const { headers: _headers, cost, compat, thinkingLevelMap, ...plain } = override;
  return {
    ...model,
    ...plain,
    ...(thinkingLevelMap ? { thinkingLevelMap: { ...model.thinkingLevelMap, ...thinkingLevelMap } } : {}),
    ...(cost ? { cost: { ...model.cost, ...cost } } : {}),
    ...(compat ? { compat: mergeCompat((model.compat ?? {}) as Record<string, unknown>, compat) as never } : {}),
  };
}

/** pi's `mergeCompat`: the override wins field by field; the routing objects merge one level deeper. */
function mergeCompat(base: Record<string, unknown>, override: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base, ...override };
  for (const key of ["openRouterRouting", "vercelGatewayRouting"]) {
    if (base[key] || override[key]) {
      merged[key] = { ...(base[key] as object | undefined), ...(override[key] as object | undefined) };
    }
  }
  return merged;
}
