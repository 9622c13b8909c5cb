// Public surface of @fleet/session-store: the store service (projection and queries) and its settings.
// The parts that its integration tests drive one by one are in `@fleet/session-store/testing`.

export { StoreEnv } from "./config.js";
export { connectRedis, type StoreService, type StoreServiceOptions, startStoreService } from "./store-service.js";
