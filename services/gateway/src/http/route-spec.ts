// A route as data: method, path, access, zod schemas of its inputs and answers, and its handler.
// The same spec registers the Fastify route, validates the request and writes the OpenAPI entry.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import type { ApiError } from "./api-error.js";
import type { Access } from "./authenticate.js";
import { strictSchema } from "./strict-schema.js";
import type { Principal } from "./tokens-file.js";

/** A documented answer: JSON with a schema, or another content type (`text/event-stream`, JSONL). */
export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  /** Default `application/json`. */
  contentType?: string;
  /** Response headers, name → description. */
  headers?: Record<string, string>;
}

/** A body that is not JSON: the raw text, for these content types. */
export interface TextBodySpec {
  contentTypes: readonly string[];
  description: string;
}

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  principal: Principal;
  request: FastifyRequest;
  reply: FastifyReply;
}

/** What a handler answers: JSON, text, an error, or `hijacked` (it wrote the raw response itself). */
export type RouteOutput =
  | { status: number; json: unknown; headers?: Record<string, string> }
  | { status: number; text: string; contentType: string; headers?: Record<string, string> }
  | { status: number; bytes: Uint8Array; contentType: string; headers?: Record<string, string> }
  | { hijacked: true }
  | ApiError;

export interface RouteSpec<P = unknown, Q = unknown, B = unknown> {
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** Fastify syntax: `/v1/sessions/:id`. */
  url: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  access: Access;
  /** Does the route talk to NATS (then it may answer 503)? */
  usesNats: boolean;
  /**
   * May a stream ticket of the session in `:id` (`?ticket=`) stand in for the bearer token? It
   * grants `read` for that session only (see http/stream-ticket.ts).
   */
  ticketAuth?: boolean;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  /** A JSON body's schema is made strict at every depth (`strictSchema`): unknown keys are a 400. */
  body?: z.ZodType<B> | TextBodySpec;
  /** Success answers and route-specific errors; 400/401/403/413/503 are added from the fields above. */
  responses: Record<number, ResponseSpec>;
  handler(input: RouteInput<P, Q, B>): Promise<RouteOutput>;
}

/** Erases a spec's type parameters, for lists of routes. */
export type AnyRouteSpec = RouteSpec<never, never, never>;

export const isTextBody = (body: RouteSpec["body"]): body is TextBodySpec =>
  body !== undefined && "contentTypes" in body;

/** The route as data, its JSON body schema made strict. */
export const defineRoute = <P, Q, B>(spec: RouteSpec<P, Q, B>): AnyRouteSpec =>
  (spec.body === undefined || isTextBody(spec.body)
    ? spec
    : { ...spec, body: strictSchema(spec.body) }) as unknown as AnyRouteSpec;
