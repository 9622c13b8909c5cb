import { toolErrorText } from "@fleet/protocol";

/** Throws pi's `Operation aborted` when the call was aborted. */
export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new Error(toolErrorText.aborted);
}
