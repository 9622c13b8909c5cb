import { describe, expect, it } from "vitest";
import { chooseProvider } from "./up.js";

describe("fleet up: the loop's provider", () => {
  it("a provider/modelId default model picks a pi-ai provider, and the loop gets it", () => {
    const choice = chooseProvider({ FLEET_DEFAULT_MODEL: "ollama/qwen2.5-coder:7b", FLEET_MODELS: "models.json" });
    expect(choice).toEqual({
      name: "ollama",
      env: { FLEET_PROVIDER: "ollama" },
      describe: "ollama/qwen2.5-coder:7b (pi-ai, models from models.json)",
    });
    expect(chooseProvider({ FLEET_PROVIDER: "openai", FLEET_DEFAULT_MODEL: "gpt-4.1" }).describe).toBe(
      "openai/gpt-4.1 (pi-ai)",
    );
  });

  it("Claude with a key, else the scripted demo, as before", () => {
    expect(chooseProvider({ ANTHROPIC_API_KEY: "sk" }).name).toBe("anthropic");
    expect(chooseProvider({ FLEET_DEFAULT_MODEL: "anthropic/claude-sonnet-5", ANTHROPIC_API_KEY: "sk" }).name).toBe(
      "anthropic",
    );
    expect(() => chooseProvider({ FLEET_DEFAULT_MODEL: "anthropic/claude-sonnet-5" })).toThrow(
      "FLEET_PROVIDER=anthropic needs ANTHROPIC_API_KEY",
    );
    expect(chooseProvider({}).name).toBe("scripted");
  });
});
