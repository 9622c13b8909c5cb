import { type Logger, pino } from "pino";

export type { Logger };

/**
 * The one root logger of a service process. Secrets never reach the output: API keys and
 * authorization headers are redacted wherever they appear.
 */
export function createLogger(
  service: string,
  opts: {
    level?: string;
    version?: string;
    /** Sees every record's merging object (child loggers included), e.g. for a benchmark to count events. */
    onRecord?: (fields: unknown) => void;
  } = {},
): Logger {
  const onRecord = opts.onRecord;
  return pino({
    name: service,
    level: opts.level ?? process.env.LOG_LEVEL ?? "info",
    base: { service, version: opts.version ?? "0.1.0", pid: process.pid },
    redact: {
      paths: [
        "apiKey",
        "*.apiKey",
        "headers.authorization",
        "*.headers.authorization",
        "headers['x-api-key']",
        "*.headers['x-api-key']",
        "ANTHROPIC_API_KEY",
        "*.ANTHROPIC_API_KEY",
        "password",
        "*.password",
        "pass",
        "*.pass",
        "token",
        "*.token",
        "NATS_PASSWORD",
        "*.NATS_PASSWORD",
        "NATS_TOKEN",
        "*.NATS_TOKEN",
      ],
      censor: "[redacted]",
    },
    serializers: { err: pino.stdSerializers.err },
    ...(onRecord
      ? {
          hooks: {
            logMethod(args, method) {
              onRecord(args[0]);
              method.apply(this, args);
            },
          },
        }
      : {}),
  });
}
