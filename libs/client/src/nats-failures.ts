// Reading errors thrown by nats.js: their one-line text and whether the server refused the login's rights.

/** The server refused the operation for this login: the error, or a request error it caused. */
export function isPermissionDenied(err: unknown): boolean {
  const name = (e: unknown) => (e instanceof Error ? e.name : undefined);
  return (
    name(err) === "PermissionViolationError" || name((err as Error | undefined)?.cause) === "PermissionViolationError"
  );
}

/** An error's message (or name) as one line for a `FleetError`. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}
