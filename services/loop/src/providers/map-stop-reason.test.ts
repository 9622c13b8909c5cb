import { describe, expect, it } from "vitest";
import { mapStopReason } from "./map-stop-reason.js";

describe("providers / stop reasons", () => {
  it("maps the normal endings", () => {
    expect(mapStopReason("end_turn")).toEqual({ ok: true, reason: "stop" });
    expect(mapStopReason("stop_sequence")).toEqual({ ok: true, reason: "stop" });
    expect(mapStopReason("max_tokens")).toEqual({ ok: true, reason: "length" });
    expect(mapStopReason("tool_use")).toEqual({ ok: true, reason: "toolUse" });
  });

  it("turns every other reason into an error naming it", () => {
    expect(mapStopReason("pause_turn")).toEqual({
      ok: false,
      errorMessage:
        'Anthropic stopped with stop_reason "pause_turn": the API paused a long-running turn (pause_turn), which Fleet does not resume',
    });
    expect(mapStopReason("refusal")).toEqual({
      ok: false,
      errorMessage: 'Anthropic stopped with stop_reason "refusal": the model refused to continue (refusal)',
    });
    expect(mapStopReason("model_context_window_exceeded")).toEqual({
      ok: false,
      errorMessage:
        'Anthropic stopped with stop_reason "model_context_window_exceeded": the conversation exceeded the model\'s context window (model_context_window_exceeded)',
    });
    expect(mapStopReason("sensitive")).toEqual({
      ok: false,
      errorMessage: 'Anthropic stopped with stop_reason "sensitive": this stop reason is not supported',
    });
    expect(mapStopReason(null)).toEqual({ ok: false, errorMessage: "Anthropic stream ended without a stop_reason" });
  });
});
