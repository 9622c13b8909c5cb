// Locates server binaries on PATH and in the Debian sbin dirs (not on a non-root PATH).

import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

const EXTRA_DIRS = ["/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin"] as const;

/** The absolute path of an executable named `name`, or undefined when it is neither on PATH nor in an sbin dir. */
export function findBinary(name: string): string | undefined {
  const pathDirs = (process.env.PATH ?? "").split(delimiter).filter((d) => d.length > 0);
  for (const dir of [...pathDirs, ...EXTRA_DIRS]) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The error thrown when a server binary is missing and no container runtime can replace it. */
export function missingBinaryError(binary: string, aptPackage: string): Error {
  return new Error(
    `${binary} was not found on PATH or in ${EXTRA_DIRS.join(", ")}, and no container runtime is available. ` +
      `Install it with \`apt-get install -y ${aptPackage}\` (or start Docker/Podman so testcontainers can be used).`,
  );
}
