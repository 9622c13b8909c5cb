// Liveness probe for a PID (signal 0 checks existence without signalling).

/** True while a process with this PID exists (zombies count as alive until reaped). */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
