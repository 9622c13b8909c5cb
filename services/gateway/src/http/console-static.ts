// The web console's static files at `/`: built assets by path, any other page path → index.html
// (the app routes itself). Paths under `/v1/` never fall back: they stay API 404s.
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";
import type { FastifyInstance } from "fastify";
import { apiError, errorBody } from "./api-error.js";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".map": "application/json",
};

/** Registers `GET /` and `GET /*`; `dir` is the console's build output (`services/console/dist`). */
export function registerConsoleStatic(app: FastifyInstance, dir: string): void {
  const root = normalize(dir + sep);
  const handler = async (path: string) => {
    if (path.startsWith("/v1/") || path === "/v1") return undefined;
    const file = normalize(join(root, decodeURIComponent(path)));
    if (file.startsWith(root) && extname(file) !== "") {
      const info = await stat(file).catch(() => undefined);
      if (info?.isFile()) {
        return { body: await readFile(file), type: TYPES[extname(file)] ?? "application/octet-stream", asset: true };
      }
      return undefined;
    }
    const index = await readFile(join(root, "index.html")).catch(() => undefined);
    return index ? { body: index, type: TYPES[".html"] as string, asset: false } : "unbuilt";
  };
  app.get("/*", async (request, reply) => {
    const path = request.url.split("?")[0] ?? "/";
    const found = await handler(path);
    if (found === undefined || found === "unbuilt") {
      const e =
        found === "unbuilt"
          ? apiError(404, "not_found", "the web console is not built: run `npm run build -w @fleet/console`")
          : apiError(404, "not_found", `no route ${request.method} ${path}`);
      return reply.code(e.status).type("application/json").send(errorBody(e));
    }
    reply.header(
      "cache-control",
      found.asset && path.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "no-cache",
    );
    return reply.code(200).type(found.type).send(found.body);
  });
}
