// The web console's static files at `/`: built assets by path, any other page path → index.html
// (the app routes itself). Paths under `/v1/` never fall back: they stay API 404s.
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";
import type { FastifyInstance } from "fastify";
import { apiError, excerpt } from "./api-error.js";
import { sendError } from "./error-answers.js";
import { CONSOLE_CSP } from "./security-headers.js";

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
    const decoded = safeDecode(path);
    if (decoded === undefined) return undefined;
    const file = normalize(join(root, decoded));
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
      return sendError(
        reply,
        found === "unbuilt"
          ? apiError(404, "not_found", "the web console is not built: run `npm run build -w @fleet/console`")
          : apiError(404, "not_found", `no route ${request.method} ${excerpt(path, 100)}`),
      );
    }
    reply.header("content-security-policy", CONSOLE_CSP);
    reply.header(
      "cache-control",
      found.asset && path.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "no-cache",
    );
    return reply.code(200).type(found.type).send(found.body);
  });
}

/** `decodeURIComponent`, or undefined for a malformed escape. */
function safeDecode(path: string): string | undefined {
  try {
    return decodeURIComponent(path);
  } catch {
    return undefined;
  }
}
