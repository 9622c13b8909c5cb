// Checks answers against the gateway's OpenAPI document (ajv, JSON Schema 2020-12) and records
// which operations were exercised, so a test can require every route to be covered.
import { Ajv2020 } from "ajv/dist/2020.js";

interface Operation {
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
}
type Doc = { paths: Record<string, Record<string, Operation>> } & Record<string, unknown>;

export function openApiChecker(doc: Doc) {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema(doc, "openapi");
  const seen = new Set<string>();
  // Literal paths win over templates (`/v1/sessions/import` over `/v1/sessions/{id}`).
  const params = (path: string) => path.split("{").length;
  const templates = Object.keys(doc.paths)
    .sort((a, b) => params(a) - params(b))
    .map((path) => ({ path, regex: new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`) }));

  return {
    /** Throws when the answer's status is not documented or its JSON body does not match. */
    check(method: string, url: string, status: number, contentType: string | null, body: unknown): void {
      const path = url.split("?")[0] as string;
      const template = templates.find((t) => t.regex.test(path))?.path;
      if (!template) throw new Error(`${method} ${path}: not in the OpenAPI document`);
      const operation = doc.paths[template]?.[method.toLowerCase()];
      if (!operation) throw new Error(`${method} ${template}: method not in the OpenAPI document`);
      const response = operation.responses[String(status)];
      if (!response) throw new Error(`${method} ${template}: status ${status} is not documented`);
      seen.add(`${method.toUpperCase()} ${template}`);
      const media = Object.keys(response.content ?? {});
      if (media.length === 0) return;
      const type = (contentType ?? "").split(";")[0]?.trim() ?? "";
      if (!media.includes(type))
        throw new Error(`${method} ${template} ${status}: content type ${type} not in ${media}`);
      if (type !== "application/json") return;
      const pointer = `openapi#/paths/${template.replace(/~/g, "~0").replace(/\//g, "~1")}/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
      const validate = ajv.getSchema(pointer);
      if (!validate) throw new Error(`no schema at ${pointer}`);
      if (!validate(body)) {
        throw new Error(
          `${method} ${template} ${status}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(body).slice(0, 300)}`,
        );
      }
    },
    /** Operations of the document not exercised yet. */
    missing(): string[] {
      const all = Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
      );
      return all.filter((op) => !seen.has(op));
    },
  };
}
