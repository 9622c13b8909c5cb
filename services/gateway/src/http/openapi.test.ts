import { describe, expect, it } from "vitest";
import { z } from "zod";
import { buildOpenApi, openApiPath } from "./openapi.js";
import { defineRoute } from "./route-spec.js";

const Thing = z.object({ name: z.string() });
const route = defineRoute({
  method: "POST",
  url: "/v1/things/:id",
  operationId: "makeThing",
  summary: "Make a thing",
  tag: "things",
  access: "operate",
  usesNats: true,
  params: z.object({ id: z.string() }),
  query: z.object({ dry: z.string().optional() }),
  body: Thing,
  responses: { 201: { description: "made", schema: Thing }, 404: { description: "none" } },
  handler: async () => ({ status: 201, json: {} }),
});

describe("gateway / OpenAPI", () => {
  it("documents parameters, body, answers and the standard errors of a route", () => {
    const doc = buildOpenApi({ title: "t", version: "1", description: "d", routes: [route], components: { Thing } });
    expect(openApiPath("/v1/things/:id/parts/:part")).toBe("/v1/things/{id}/parts/{part}");
    const op = (doc.paths as Record<string, Record<string, Record<string, unknown>>>)["/v1/things/{id}"]?.post;
    expect(op?.parameters).toEqual([
      { name: "id", in: "path", required: true, schema: { type: "string" } },
      { name: "dry", in: "query", required: false, schema: { type: "string" } },
    ]);
    expect(op?.requestBody).toEqual({
      required: true,
      content: { "application/json": { schema: { $ref: "#/components/schemas/MakeThingBody" } } },
    });
    expect(Object.keys(op?.responses as object).sort()).toEqual(["201", "400", "401", "403", "404", "413", "503"]);
    const schemas = (doc.components as { schemas: Record<string, unknown> }).schemas;
    expect(schemas.Thing).toMatchObject({ type: "object", required: ["name"] });
    // A body is strict (an unknown key is a 400), so it is its own schema.
    expect(schemas.MakeThingBody).toMatchObject({ type: "object", additionalProperties: false });
    expect(schemas.Error).toBeDefined();
  });
});
