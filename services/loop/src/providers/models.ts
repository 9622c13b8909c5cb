import type { Cost, Usage } from "@fleet/protocol";

/** Prices in USD per million tokens. `cacheWrite` is the 5-minute ephemeral cache-write price. */
export interface ModelPrice {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
}

export interface ModelInfo {
  readonly id: string;
  /** False for ids missing from the table: zero prices and the default limits. */
  readonly known: boolean;
  readonly contextWindow: number;
  /** The API's `max_tokens` ceiling; the default `max_tokens` of a request. */
  readonly maxOutputTokens: number;
  readonly price: ModelPrice;
}

const OPUS_4_5_PLUS: ModelPrice = { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 };
const OPUS_4: ModelPrice = { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 };
const SONNET: ModelPrice = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const HAIKU_4_5: ModelPrice = { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 };

interface ModelRow {
  readonly ids: readonly string[];
  readonly contextWindow: number;
  readonly maxOutputTokens: number;
  readonly price: ModelPrice;
}

/**
 * Claude models (ids and dated aliases). Prices follow Anthropic's published per-MTok list prices for
 * the 4.x generation; the 5 generation is assumed to keep the Opus 4.5+/Sonnet price points.
 * Cache reads cost 0.1× input and 5-minute cache writes 1.25× input.
 */
const MODEL_ROWS: readonly ModelRow[] = [
  { ids: ["claude-opus-5"], contextWindow: 1_000_000, maxOutputTokens: 128_000, price: OPUS_4_5_PLUS },
  { ids: ["claude-sonnet-5"], contextWindow: 1_000_000, maxOutputTokens: 64_000, price: SONNET },
  { ids: ["claude-opus-4-8"], contextWindow: 1_000_000, maxOutputTokens: 128_000, price: OPUS_4_5_PLUS },
  { ids: ["claude-opus-4-7"], contextWindow: 1_000_000, maxOutputTokens: 128_000, price: OPUS_4_5_PLUS },
  { ids: ["claude-opus-4-6"], contextWindow: 1_000_000, maxOutputTokens: 128_000, price: OPUS_4_5_PLUS },
  { ids: ["claude-sonnet-4-6"], contextWindow: 1_000_000, maxOutputTokens: 64_000, price: SONNET },
  {
    ids: ["claude-opus-4-5", "claude-opus-4-5-20251101"],
    contextWindow: 200_000,
    maxOutputTokens: 64_000,
    price: OPUS_4_5_PLUS,
  },
  {
    ids: ["claude-sonnet-4-5", "claude-sonnet-4-5-20250929"],
    contextWindow: 200_000,
    maxOutputTokens: 64_000,
    price: SONNET,
  },
  {
    ids: ["claude-haiku-4-5", "claude-haiku-4-5-20251001"],
    contextWindow: 200_000,
    maxOutputTokens: 64_000,
    price: HAIKU_4_5,
  },
  {
    ids: ["claude-opus-4-1", "claude-opus-4-1-20250805"],
    contextWindow: 200_000,
    maxOutputTokens: 32_000,
    price: OPUS_4,
  },
  {
    ids: ["claude-opus-4-0", "claude-opus-4-20250514"],
    contextWindow: 200_000,
    maxOutputTokens: 32_000,
    price: OPUS_4,
  },
  {
    ids: ["claude-sonnet-4-0", "claude-sonnet-4-20250514"],
    contextWindow: 200_000,
    maxOutputTokens: 64_000,
    price: SONNET,
  },
];

const MODELS: ReadonlyMap<string, ModelInfo> = new Map(
  MODEL_ROWS.flatMap((row) =>
    row.ids.map((id): [string, ModelInfo] => [
      id,
      { id, known: true, contextWindow: row.contextWindow, maxOutputTokens: row.maxOutputTokens, price: row.price },
    ]),
  ),
);

/** Limits assumed for a model id missing from the table. */
export const DEFAULT_CONTEXT_WINDOW = 200_000;
export const DEFAULT_MAX_OUTPUT_TOKENS = 32_000;
const ZERO_PRICE: ModelPrice = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

/** Every model id in the table. */
export const knownModelIds = (): string[] => [...MODELS.keys()];

/** The table row for `modelId`; unknown ids get zero prices and the default limits (`known: false`). */
export function getModelInfo(modelId: string): ModelInfo {
  return (
    MODELS.get(modelId) ?? {
      id: modelId,
      known: false,
      contextWindow: DEFAULT_CONTEXT_WINDOW,
      maxOutputTokens: DEFAULT_MAX_OUTPUT_TOKENS,
      price: ZERO_PRICE,
    }
  );
}

/** USD cost of `usage` (token counts) at `price`. `total` is the sum of the four parts. */
export function computeCost(
  price: ModelPrice,
  usage: Pick<Usage, "input" | "output" | "cacheRead" | "cacheWrite">,
): Cost {
  const input = (price.input * usage.input) / 1_000_000;
  const output = (price.output * usage.output) / 1_000_000;
  const cacheRead = (price.cacheRead * usage.cacheRead) / 1_000_000;
  const cacheWrite = (price.cacheWrite * usage.cacheWrite) / 1_000_000;
  return { input, output, cacheRead, cacheWrite, total: input + output + cacheRead + cacheWrite };
}
