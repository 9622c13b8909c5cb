// Who a request comes from: a bearer token of the tokens file, or (without one) a loopback client.
import { type ApiError, apiError } from "./api-error.js";
import { LOCAL_TENANT, type Principal, type Role, type TokenTable } from "./tokens-file.js";

/** What a route needs: nothing (`public`), the `read` role, or `operate`. */
export type Access = "public" | Role;

export const isLoopback = (address: string | undefined): boolean =>
  address !== undefined && (address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127."));

/**
 * Pure: the principal of a request, or its 401/403 answer. Public routes answer anyone.
 * - With a token table: `Authorization: Bearer <token>` must name a known token (else 401), and
 *   `operate` routes need the `operate` role (else 403).
 * - Without one: loopback clients act as tenant `local` with the `operate` role; others get 403.
 */
export function authenticate(
  authorization: string | undefined,
  remoteAddress: string | undefined,
  tokens: TokenTable | undefined,
  access: Access,
): Principal | ApiError {
  if (access === "public") return { tenant: "", role: "read" };
  if (!tokens) {
    if (!isLoopback(remoteAddress)) {
      return apiError(403, "forbidden", "this gateway has no tokens file and accepts loopback clients only");
    }
    return { tenant: LOCAL_TENANT, role: "operate" };
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  if (!match) return apiError(401, "unauthorized", "missing Authorization: Bearer <token>");
  const principal = tokens.lookup(match[1] as string);
  if (!principal) return apiError(401, "unauthorized", "unknown token");
  if (access === "operate" && principal.role !== "operate") {
    return apiError(403, "forbidden", "this token has the read role; the operation needs operate");
  }
  return principal;
}
