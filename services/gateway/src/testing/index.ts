// Test entry of @fleet/gateway (`@fleet/gateway/testing`, sources only, not built): an SSE client.

export { openSse, type SseFrame, type SseStream, sseParser } from "./sse-reader.js";
