// The OpenAPI 3.1 document of the routes, generated from their zod schemas (pure).
import { jsonSchemaOptions, toJsonSchema } from "@fleet/protocol";
import { z } from "zod";
import { ErrorBody } from "./api-error.js";
import { type AnyRouteSpec, isTextBody, type ResponseSpec } from "./route-spec.js";

const STATUS_TEXT: Record<number, string> = {
  400: "Malformed input",
  401: "Missing or unknown bearer token",
  403: "The token's role does not allow this operation (or a non-loopback client without a tokens file)",
  404: "Unknown session or entry",
  413: "The request body is larger than the limit",
  503: "NATS (or the session store) is unreachable",
};

/** `/v1/sessions/:id` → `/v1/sessions/{id}`. */
export const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

/** Named schemas become `#/components/schemas/<name>`; every other schema is inlined. */
export interface OpenApiInput {
  title: string;
  version: string;
  description: string;
  routes: readonly AnyRouteSpec[];
  /** Shared schemas, by component name (the protocol's FleetEvent, SessionEntry, …). */
  components: Record<string, z.ZodType>;
}

export function buildOpenApi(input: OpenApiInput): Record<string, unknown> {
  const registry = z.registry<{ id: string }>();
  const named = new Map<z.ZodType, string>();
  const add = (schema: z.ZodType, id: string): string => {
    const existing = named.get(schema);
    if (existing) return existing;
    named.set(schema, id);
    registry.add(schema, { id });
    return id;
  };
  for (const [id, schema] of Object.entries(input.components)) add(schema, id);
  add(ErrorBody, "Error");
  const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });
  const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of input.routes) {
    const responses: Record<string, ResponseSpec> = { ...standardErrors(route), ...route.responses };
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: [route.tag],
      security: route.access === "public" ? [] : [{ bearer: [] }],
      parameters: [...parameters(route.params, "path"), ...parameters(route.query, "query")],
    };
    if (route.body) {
      operation.requestBody = isTextBody(route.body)
        ? {
            required: true,
            description: route.body.description,
            content: Object.fromEntries(route.body.contentTypes.map((t) => [t, { schema: { type: "string" } }])),
          }
        : {
            required: true,
            content: {
              "application/json": { schema: ref(add(route.body as z.ZodType, `${capital(route.operationId)}Body`)) },
            },
          };
    }
    operation.responses = Object.fromEntries(
      Object.entries(responses).map(([status, spec]) => {
        const contentType = spec.contentType ?? "application/json";
        const schema = spec.schema
          ? ref(add(spec.schema, `${capital(route.operationId)}${status}`))
          : Number(status) >= 400
            ? ref("Error")
            : contentType === "application/json"
              ? undefined
              : { type: "string" };
        return [
          status,
          {
            description: spec.description,
            ...(spec.headers
              ? {
                  headers: Object.fromEntries(
                    Object.entries(spec.headers).map(([h, d]) => [h, { description: d, schema: { type: "string" } }]),
                  ),
                }
              : {}),
            ...(schema ? { content: { [contentType]: { schema } } } : {}),
          },
        ];
      }),
    );
    const path = openApiPath(route.url);
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation };
  }

  const converted = z.toJSONSchema(registry, {
    ...jsonSchemaOptions("input"),
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Record<string, Record<string, unknown>> };
  const schemas = Object.fromEntries(
    Object.entries(converted.schemas).map(([id, { $schema: _s, $id: _i, ...rest }]) => [id, rest]),
  );
  return {
    openapi: "3.1.0",
    info: { title: input.title, version: input.version, description: input.description },
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    paths,
    components: {
      schemas,
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "A token of FLEET_GATEWAY_TOKENS" } },
    },
  };
}

function standardErrors(route: AnyRouteSpec): Record<number, ResponseSpec> {
  const out: Record<number, ResponseSpec> = {};
  const error = (status: number): ResponseSpec => ({ description: STATUS_TEXT[status] as string, schema: ErrorBody });
  if (route.params || route.query || route.body) out[400] = error(400);
  if (route.access !== "public") {
    out[401] = error(401);
    out[403] = error(403);
  }
  if (route.body) out[413] = error(413);
  if (route.usesNats) out[503] = error(503);
  return out;
}

/** The properties of an object schema as OpenAPI parameters. */
function parameters(schema: z.ZodType | undefined, where: "path" | "query"): unknown[] {
  if (!schema) return [];
  const json = toJsonSchema(schema) as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property as { description?: string };
    return {
      name,
      in: where,
      required: where === "path" || (json.required ?? []).includes(name),
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}
