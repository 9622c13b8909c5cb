// Public surface of @fleet/protocol: the executable form of PROTOCOL.md. No I/O.

export { AssistantStreamEvent, type PiAssistantMessageEvent, StreamDelta } from "./assistant-stream.js";
export {
  type CommandDecoded,
  type Decoded,
  type DecodeIssue,
  decodeCommand,
  decodeEvent,
  decodeRunnerPresence,
  decoderFor,
  decodeToolCallRequest,
  decodeToolRegistration,
  decodeToolResultRecord,
  type Encoded,
  encodeCommand,
  encodeEvent,
  encoderFor,
  encodeToolCallRequest,
  encodeToolRegistration,
  encodeToolResultRecord,
  formatIssues,
  MAX_MESSAGE_BYTES,
  parseJson,
  validate,
} from "./codec.js";
export {
  COMMAND_TYPES,
  CommandEnvelope,
  type CommandOf,
  FleetCommand,
  type FleetCommandType,
} from "./commands.js";
export {
  applyConfigPatch,
  DEFAULT_SESSION_CONFIG,
  ModelRef,
  QueueMode,
  SessionConfig,
  SessionConfigPatch,
  sessionConfigWith,
  ToolExecutionMode,
} from "./config.js";
export {
  AssistantContentBlock,
  ImageContent,
  TextContent,
  ThinkingContent,
  ToolCallContent,
  ToolResultContentBlock,
  UserContentBlock,
} from "./content.js";
export { ErrorCode, ErrorInfo, ensureError, toolErrorText } from "./errors.js";
export {
  AGENT_EVENT_TYPES,
  ENTRY_EVENT_TYPES,
  type EntryEvent,
  type EntryEventType,
  EntryRef,
  type EventBody,
  EventMeta,
  type EventOf,
  FleetEvent,
  type FleetEventType,
  isEntryEvent,
  RejectionCode,
  ToolExecutionResult,
} from "./events.js";
export {
  EventId,
  isSessionId,
  isToolCallId,
  isToolName,
  SESSION_ID_PATTERN,
  SessionId,
  TOOL_CALL_ID_PATTERN,
  TOOL_NAME_PATTERN,
  ToolCallId,
  ToolName,
} from "./ids.js";
export {
  CONFIG_KEYS,
  DEFAULT_LEASE_TTL_MS,
  KV_BUCKETS,
  leaseKey,
  loopCommandConsumer,
  MIN_NATS_SERVER,
  ms,
  OBJECT_STORES,
  PROTOCOL_VERSION,
  STREAMS,
  type StreamKey,
  type StreamSpec,
  storeEventConsumer,
  toolCallConsumer,
  webhookConsumer,
} from "./jetstream-config.js";
export { type JsonSchemaOptions, jsonSchemaOptions, toJsonSchema } from "./json-schema.js";
export {
  ABORTED_ERROR_MESSAGE,
  AgentMessage,
  AssistantMessage,
  BranchSummaryMessage,
  CompactionSummaryMessage,
  ContextMessage,
  Cost,
  CustomMessage,
  emptyUsage,
  LlmMessage,
  StopReason,
  ThinkingLevel,
  ToolResultMessage,
  Usage,
  UserMessage,
} from "./messages.js";
export { DEFAULT_PARTITIONS, fnv1a32, partitionOf } from "./partition.js";
// pi v3 JSONL session files: export of a Fleet tree, import into an `import_session` command.
export {
  bashExecutionToText,
  exportPiJsonl,
  FLEET_ACTIVE_TOOLS_CUSTOM_TYPE,
  fromPiEntry,
  importPiJsonl,
  PI_BASH_EXECUTION_CUSTOM_TYPE,
  PI_SESSION_VERSION,
  type PiExportInput,
  type PiImport,
  type PiLineIssue,
  type PiSessionHeader,
  piFileOrder,
  piJsonlToImportCommand,
  toPiEntry,
} from "./pi-jsonl.js";
export {
  type AgentQueues,
  type AgentState,
  foldAgentEvents,
  foldAgentState,
  initialAgentState,
  withMessages,
} from "./reducers/agent-state.js";
export {
  applyDelta,
  applyDeltas,
  expandMessageUpdate,
  type PiMessageUpdate,
  type StreamingToolCall,
} from "./reducers/apply-deltas.js";
export {
  applySettingsEntry,
  buildContextFromPath,
  type ContextDefaults,
  entryToContextMessage,
  NO_CONTEXT_DEFAULTS,
  type PathContext,
} from "./reducers/build-context.js";
export {
  COMPACTION_DEFAULTS,
  type CompactionPlan,
  type CompactionRefusal,
  type CutPoint,
  computeFileLists,
  findCutPoint,
  findTurnStartIndex,
  formatFileLists,
  prepareCompaction,
  shouldCompact,
} from "./reducers/compaction.js";
export {
  BRANCH_SUMMARY_PREFIX,
  BRANCH_SUMMARY_SUFFIX,
  COMPACTION_SUMMARY_PREFIX,
  COMPACTION_SUMMARY_SUFFIX,
  convertToLlm,
} from "./reducers/convert-to-llm.js";
export {
  applyQueueUpdate,
  clearMessageQueues,
  type Drained,
  drainMessageQueue,
  emptyMessageQueues,
  enqueueMessage,
  hasQueuedMessages,
  type MessageQueues,
  QUEUE_KINDS,
  type QueueKind,
  sameQueues,
} from "./reducers/message-queues.js";
// Pure reducers: fold events into agent state, session tree and run position; plan compaction.
export { parseStreamingJson } from "./reducers/partial-json.js";
export {
  type EndedToolCall,
  findRunCursor,
  foldRunCursor,
  idleRunCursor,
  type RunCursor,
  type RunCursorKind,
  type RunProgress,
} from "./reducers/run-cursor.js";
export { serializeConversation, TOOL_RESULT_MAX_CHARS } from "./reducers/serialize-conversation.js";
export {
  applyConfigChange,
  buildContext,
  contextDefaults,
  emptySessionTree,
  entryFromEvent,
  foldSessionTree,
  foldSessionTreeEvents,
  foldSessionTreeInPlace,
  getBranch,
  getEntry,
  getTree,
  type SessionContext,
  type SessionTree,
  type TreeLookupError,
  type TreeView,
} from "./reducers/session-tree.js";
export {
  type ContextTokenEstimate,
  estimateContextTokens,
  estimateTokens,
  IMAGE_ESTIMATE_CHARS,
  usageTokens,
} from "./reducers/token-estimate.js";
export {
  CompactionEntry,
  MessageEntry,
  SessionEntry,
  type SessionEntryType,
} from "./session-entry.js";
export {
  SessionSummary,
  STORE_OPS,
  StoreError,
  type StoreOp,
  StoreReply,
  type StoreReplyOf,
  StoreRequest,
  type StoreRequestOf,
} from "./store-queries.js";
export {
  type PartitionedSubject,
  parseCommandSubject,
  parseEventSubject,
  parseToolCallSubject,
  parseToolCancelSubject,
  parseToolResultSubject,
  STORE_QUEUE_GROUP,
  subjects,
  toolCallMsgId,
} from "./subjects.js";
export {
  BlobRef,
  RUNNER_PRESENCE_KEYS,
  RunnerPresence,
  runnerPresenceKey,
  ToolCallRequest,
  ToolFinalRecord,
  ToolRegistration,
  ToolResultRecord,
  ToolRetryPolicy,
} from "./tool-records.js";
