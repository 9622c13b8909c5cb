// How request bodies become values: UTF-8 only, JSON within JSON_LIMITS (depth, values), checked
// before anything parses it. The byte limit is Fastify's (the route's `bodyLimit`), enforced as it reads.
import type { FastifyInstance } from "fastify";
import { JSON_LIMITS, jsonLimitViolation } from "./json-limits.js";

/** Content types read as raw text (pi v3 JSONL imports). */
export const TEXT_CONTENT_TYPES = ["application/jsonl", "application/x-ndjson", "text/plain"] as const;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** A refusal of the body, for Fastify's error handler (which answers 400 with the message). */
const refusal = (message: string): Error & { statusCode: number } =>
  Object.assign(new Error(message), { statusCode: 400 });

/** The body as text, or undefined when it is not UTF-8. */
function textOf(body: Buffer): string | undefined {
  try {
    return utf8.decode(body);
  } catch {
    return undefined;
  }
}

/** Replaces Fastify's JSON and text parsers; JSONL bodies are checked line by line. */
export function registerBodyParsers(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    const text = textOf(body as Buffer);
    if (text === undefined) return done(refusal("the body is not valid UTF-8"), undefined);
    const over = jsonLimitViolation(text, JSON_LIMITS);
    if (over !== undefined) return done(refusal(over), undefined);
    parseJson(request, text, done);
  });
  app.addContentTypeParser([...TEXT_CONTENT_TYPES], { parseAs: "buffer" }, (_request, body, done) => {
    const text = textOf(body as Buffer);
    if (text === undefined) return done(refusal("the body is not valid UTF-8"), undefined);
    const over = jsonLimitViolation(text, JSON_LIMITS, { lines: true });
    if (over !== undefined) return done(refusal(over), undefined);
    done(null, text);
  });
}
