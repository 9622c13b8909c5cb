// Public surface of @fleet/gateway: the HTTP gateway, its settings, and what clients of it reuse
// (the session-state JSON of a fold, webhook signature checks).

export { PendingApproval } from "@fleet/protocol";
export { CommandBody, CommandOutcome, CommandPending, SessionCreated } from "./api-schemas.js";
export { GatewayEnv } from "./config.js";
export { GATEWAY_VERSION, type Gateway, GatewayConfigError, type GatewayOptions, startGateway } from "./gateway.js";
export { ErrorBody } from "./http/api-error.js";
export { openApiPath } from "./http/openapi.js";
export {
  LOCAL_TENANT,
  loadTokensFile,
  type Principal,
  Role,
  TokensFile,
  type TokenTable,
  tokenTable,
} from "./http/tokens-file.js";
export { SessionState, sessionStateOf } from "./session-state.js";
export { checkIdentities, type TenantIdentity, tenantIdentities } from "./tenant-identities.js";
export { type GatewayWebOptions, webOptionsOf } from "./web-config.js";
export { IDEMPOTENCY_HEADER, SIGNATURE_HEADER, signBody, verifySignature } from "./webhooks/signature.js";
export { WEBHOOK_EVENT_TYPES, WebhookDelivery, WebhookDetail, WebhookStatus } from "./webhooks/webhook-record.js";
