// Container runtime detection (Docker/Podman via testcontainers) and backend selection.

import { findBinary, missingBinaryError } from "./find-binary.js";

/**
 * Where a server runs: a local binary spawned as a child process, or a testcontainers container.
 * `auto` prefers containers only when `FLEET_TEST_CONTAINERS=1` and a runtime exists, then the local binary,
 * then a container when the binary is missing.
 */
export type ServerBackend = "auto" | "process" | "container";

const DETECTION_TIMEOUT_MS = 1000;
let detection: Promise<boolean> | undefined;

/**
 * True when testcontainers can reach a container runtime. Decided within about a second; the answer is cached
 * for the life of the process. testcontainers is imported lazily (its import takes ~350 ms).
 * Contract: never rejects.
 */
export function hasContainerRuntime(): Promise<boolean> {
  detection ??= detectContainerRuntime();
  return detection;
}

async function detectContainerRuntime(): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), DETECTION_TIMEOUT_MS);
    timer.unref();
  });
  const probe = (async () => {
    try {
      const { getContainerRuntimeClient } = await import("testcontainers");
      await getContainerRuntimeClient();
      return true;
    } catch {
      return false;
    }
  })();
  try {
    return await Promise.race([probe, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A resolved backend: the local binary path, or a container. */
export type ResolvedBackend = { readonly kind: "process"; readonly binary: string } | { readonly kind: "container" };

/**
 * Picks the backend for a server.
 * Throws an Error naming the apt package when the binary is missing and no container runtime is available
 * (or when `container` is forced without a runtime).
 */
export async function resolveBackend(
  requested: ServerBackend | undefined,
  binaryName: string,
  aptPackage: string,
): Promise<ResolvedBackend> {
  const backend = requested ?? "auto";
  const binary = findBinary(binaryName);
  if (backend === "process") {
    if (binary === undefined) throw missingBinaryError(binaryName, aptPackage);
    return { kind: "process", binary };
  }
  if (backend === "container") {
    if (!(await hasContainerRuntime())) {
      throw new Error(`${binaryName}: backend "container" was requested but no container runtime is available`);
    }
    return { kind: "container" };
  }
  if (process.env.FLEET_TEST_CONTAINERS === "1" && (await hasContainerRuntime())) return { kind: "container" };
  if (binary !== undefined) return { kind: "process", binary };
  if (await hasContainerRuntime()) return { kind: "container" };
  throw missingBinaryError(binaryName, aptPackage);
}
