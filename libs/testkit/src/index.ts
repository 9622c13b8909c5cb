// Public entry of @fleet/testkit: real nats-server / redis-server for tests, and fakes of the Anthropic
// and OpenAI APIs.
// vitest hooks live in the `@fleet/testkit/vitest` subpath.

export { listRunningServers, stopAllServers } from "./cleanup-registry.js";
export { hasContainerRuntime, type ServerBackend } from "./container-runtime.js";
export {
  fakeContextOverflow,
  fakeHttpError,
  fakeOverloaded,
  fakeRateLimited,
  fakeReply,
  fakeStreamError,
  fakeText,
  fakeThinking,
  fakeToolUse,
} from "./fake-anthropic-builders.js";
export {
  buildMessage,
  buildSseEvents,
  DEFAULT_CHUNK_CHARS,
  encodeSseEvent,
  type ReplyContext,
  type SseEvent,
  splitIntoChunks,
} from "./fake-anthropic-events.js";
export { type FakeAnthropic, type FakeAnthropicOptions, startFakeAnthropic } from "./fake-anthropic-server.js";
export { type StatelessPlan, type StatelessToolUse, statelessResponder } from "./fake-anthropic-stateless.js";
export {
  type FakeBlock,
  type FakeHttpErrorReply,
  type FakeMessageReply,
  type FakeReply,
  type FakeResponder,
  type FakeStopReason,
  type FakeUsage,
  MessagesRequestBody,
  type RecordedRequest,
  type RequestOutcome,
} from "./fake-anthropic-types.js";
export {
  openAIContextOverflow,
  openAIHttpError,
  openAIRateLimited,
  openAIReasoning,
  openAIReply,
  openAIText,
  openAIToolCall,
} from "./fake-openai-builders.js";
export { buildChatChunks, buildResponsesEvents, type OpenAIReplyContext } from "./fake-openai-events.js";
export { type FakeOpenAI, type FakeOpenAIOptions, startFakeOpenAI } from "./fake-openai-server.js";
export type {
  FakeOpenAIAnswer,
  FakeOpenAIApi,
  FakeOpenAIBlock,
  FakeOpenAIHttpError,
  FakeOpenAIReply,
  FakeOpenAIResponder,
  FakeOpenAIUsage,
  OpenAIRequestBody,
  RecordedOpenAIRequest,
} from "./fake-openai-types.js";
export { findBinary } from "./find-binary.js";
export { getFreePort } from "./free-port.js";
export { type NatsCluster, type NatsClusterNode, type NatsClusterOptions, startNatsCluster } from "./nats-cluster.js";
export type { JetStreamLimits } from "./nats-config.js";
export { type NatsServer, type NatsServerOptions, startNats } from "./nats-server.js";
export { isPidAlive } from "./process-alive.js";
export { cpuSecondsOf } from "./process-cpu.js";
export { type RedisCluster, type RedisClusterOptions, startRedisCluster } from "./redis-cluster.js";
export { type RedisReply, sendRedisCommand } from "./redis-command.js";
export { type RedisServer, type RedisServerOptions, startRedis } from "./redis-server.js";
export {
  canCreateTestCertificates,
  createTestCertificates,
  natsTlsConfig,
  type TestCertificates,
} from "./test-certificates.js";
