// pi's `models.json` (pi coding-agent 0.73.1, docs/models.md): custom providers and models, and
// overrides of pi-ai's built-in ones. Read from FLEET_MODELS.
import { z } from "zod";

const Cost = z.object({ input: z.number(), output: z.number(), cacheRead: z.number(), cacheWrite: z.number() });
const Input = z.array(z.enum(["text", "image"]));
const ThinkingLevelMap = z.partialRecord(
  z.enum(["off", "minimal", "low", "medium", "high", "xhigh"]),
  z.string().nullable(),
);
/** Any of pi-ai's compat objects (OpenAI Completions, Responses, Anthropic): passed to pi-ai as is. */
const Compat = z.record(z.string(), z.unknown());
const Positive = z.number().positive();

const ModelDefinition = z.object({
  id: z.string().min(1),
  name: z.string().min(1).optional(),
  api: z.string().min(1).optional(),
  baseUrl: z.string().min(1).optional(),
  reasoning: z.boolean().optional(),
  thinkingLevelMap: ThinkingLevelMap.optional(),
  input: Input.optional(),
  cost: Cost.optional(),
  contextWindow: Positive.optional(),
  maxTokens: Positive.optional(),
  headers: z.record(z.string(), z.string()).optional(),
  compat: Compat.optional(),
});
export type ModelDefinition = z.infer<typeof ModelDefinition>;

const ModelOverride = z.object({
  name: z.string().min(1).optional(),
  reasoning: z.boolean().optional(),
  thinkingLevelMap: ThinkingLevelMap.optional(),
  input: Input.optional(),
  cost: Cost.partial().optional(),
  contextWindow: Positive.optional(),
  maxTokens: Positive.optional(),
  headers: z.record(z.string(), z.string()).optional(),
  compat: Compat.optional(),
});
export type ModelOverride = z.infer<typeof ModelOverride>;

const ProviderConfig = z.object({
  name: z.string().min(1).optional(),
  baseUrl: z.string().min(1).optional(),
  /** The name of an environment variable holding the key, else the key itself. */
  apiKey: z.string().min(1).optional(),
  api: z.string().min(1).optional(),
  headers: z.record(z.string(), z.string()).optional(),
  compat: Compat.optional(),
  authHeader: z.boolean().optional(),
  models: z.array(ModelDefinition).optional(),
  modelOverrides: z.record(z.string(), ModelOverride).optional(),
});
export type ProviderConfig = z.infer<typeof ProviderConfig>;

export const ModelsJson = z.object({ providers: z.record(z.string().min(1), ProviderConfig) });
export type ModelsJson = z.infer<typeof ModelsJson>;

export type ParsedModelsJson = { ok: true; value: ModelsJson } | { ok: false; error: string };

/**
 * Parses a models.json text as pi does: `//` line comments and trailing commas allowed, then the
 * schema, then pi's checks (a custom provider with models needs `baseUrl` and `apiKey`, every model
 * an `api`). `!command` values (pi runs them in a shell) are refused: Fleet never runs a command
 * from its configuration. Never throws.
 */
export function parseModelsJson(text: string, builtInProviders: ReadonlySet<string>): ParsedModelsJson {
  let raw: unknown;
  try {
    raw = JSON.parse(stripJsonComments(text));
  } catch (err) {
    return { ok: false, error: `not valid JSON: ${(err as Error).message}` };
  }
  const parsed = ModelsJson.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.map(String).join(".") || "root"}: ${i.message}`);
    return { ok: false, error: `invalid models.json: ${issues.join("; ")}` };
  }
  for (const [name, provider] of Object.entries(parsed.data.providers)) {
    const problem = checkProvider(name, provider, builtInProviders.has(name));
    if (problem) return { ok: false, error: problem };
  }
  return { ok: true, value: parsed.data };
}

function checkProvider(name: string, provider: ProviderConfig, builtIn: boolean): string | undefined {
  const values = [
    provider.apiKey,
    ...Object.values(provider.headers ?? {}),
    ...(provider.models ?? []).flatMap((m) => Object.values(m.headers ?? {})),
    ...Object.values(provider.modelOverrides ?? {}).flatMap((m) => Object.values(m.headers ?? {})),
  ];
  if (values.some((v) => v?.startsWith("!"))) {
    return `provider ${name}: shell command values ("!…") are not supported; name an environment variable`;
  }
  const models = provider.models ?? [];
  const overrides = Object.keys(provider.modelOverrides ?? {}).length > 0;
  if (models.length === 0) {
    if (!provider.baseUrl && !provider.headers && !provider.compat && !overrides) {
      return `provider ${name}: must specify "baseUrl", "headers", "compat", "modelOverrides", or "models"`;
    }
    return undefined;
  }
  if (!builtIn && !provider.baseUrl) return `provider ${name}: "baseUrl" is required when defining custom models`;
  if (!builtIn && !provider.apiKey) return `provider ${name}: "apiKey" is required when defining custom models`;
  const missingApi = models.find((m) => !m.api && !provider.api && !builtIn);
  if (missingApi) return `provider ${name}, model ${missingApi.id}: no "api" specified. Set at provider or model level`;
  return undefined;
}

/** pi's comment stripping: `//` line comments and trailing commas, string literals untouched. */
function stripJsonComments(input: string): string {
  return input
    .replace(/"(?:\\.|[^"\\])*"|\/\/[^\n]*/g, (m) => (m[0] === '"' ? m : ""))
    .replace(/"(?:\\.|[^"\\])*"|,(\s*[}\]])/g, (m, tail: string | undefined) => tail ?? (m[0] === '"' ? m : ""));
}
