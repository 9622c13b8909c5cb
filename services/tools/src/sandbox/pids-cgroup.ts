// A pids cgroup per sandboxed command: the fork-bomb limit when the runner is root (the kernel
// never applies RLIMIT_NPROC to uid 0, user namespace or not).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join, posix } from "node:path";
import { isProcessAlive } from "../builtin/process-group.js";

/** Where this process's pids cgroup is, from /proc/self/cgroup and /proc/self/mountinfo. */
export type CgroupLocation = { ok: true; version: 1 | 2; dir: string } | { ok: false; reason: string };

interface Mount {
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

function parseMountinfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split("\n")) {
    const [left, right] = line.split(" - ");
    if (!left || !right) continue;
    const fields = left.split(" ");
    const [fsType, , superOptions = ""] = right.split(" ");
    const root = fields[3];
    const mountPoint = fields[4];
    if (!fsType || root === undefined || mountPoint === undefined) continue;
    mounts.push({ root, mountPoint, fsType, superOptions: superOptions.split(",") });
  }
  return mounts;
}

/** `mountPoint` + the part of `path` below the mount's `root`, or undefined when `path` is not under it. */
function under(mount: Mount, path: string): string | undefined {
  const rel = posix.relative(mount.root, path);
  if (rel.startsWith("..")) return undefined;
  return posix.join(mount.mountPoint, rel);
}

/**
 * Finds the directory of this process's pids cgroup: the v1 `pids` hierarchy when the controller is
 * bound there, else the v2 unified hierarchy. Pure: takes the texts of /proc/self/cgroup and
 * /proc/self/mountinfo.
 */
export function locatePidsCgroup(cgroupText: string, mountinfoText: string): CgroupLocation {
  const mounts = parseMountinfo(mountinfoText);
  const lines = cgroupText
    .split("\n")
    .filter(Boolean)
    .map((l) => {
      const [id, controllers = "", ...path] = l.split(":");
      return { id, controllers: controllers.split(","), path: path.join(":") };
    });
  const v1 = lines.find((l) => l.controllers.includes("pids"));
  if (v1) {
    const mount = mounts.find((m) => m.fsType === "cgroup" && m.superOptions.includes("pids"));
    const dir = mount && under(mount, v1.path);
    if (!dir) return { ok: false, reason: `the v1 pids hierarchy of cgroup ${v1.path} is not mounted here` };
    return { ok: true, version: 1, dir };
  }
  const v2 = lines.find((l) => l.id === "0" && l.controllers.join("") === "");
  const mount = mounts.find((m) => m.fsType === "cgroup2");
  const dir = v2 && mount && under(mount, v2.path);
  if (!dir) return { ok: false, reason: "no pids controller: neither a v1 pids hierarchy nor a mounted cgroup2" };
  return { ok: true, version: 2, dir };
}

/** One command's cgroup. */
export interface CallCgroup {
  dir: string;
  /** Writing a pid here moves that process (and its future children) into the cgroup. */
  procsFile: string;
  isEmpty(): boolean;
  /** Waits (bounded) until every process in it is gone, then removes it. Never throws. */
  remove(): Promise<void>;
}

/** Creates child cgroups of `parent`, each limited to `maxPids` tasks. */
export interface PidsCgroupFactory {
  readonly version: 1 | 2;
  readonly parent: string;
  create(maxPids: number): Promise<CallCgroup>;
}

const PREFIX = "fleet-sandbox-";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Opens this process's pids cgroup for per-command children: checks that the controller is
 * available there (v2: enables it in `cgroup.subtree_control`), removes empty leftovers of runners
 * that are gone, and creates and removes a trial child. Resolves `ok: false` with the reason when
 * any step fails.
 */
export async function openPidsCgroup(): Promise<
  { ok: true; factory: PidsCgroupFactory } | { ok: false; reason: string }
> {
  let location: CgroupLocation;
  try {
    location = locatePidsCgroup(
      readFileSync("/proc/self/cgroup", "utf-8"),
      readFileSync("/proc/self/mountinfo", "utf-8"),
    );
  } catch (err) {
    return { ok: false, reason: `cannot read /proc/self/cgroup: ${(err as Error).message}` };
  }
  if (!location.ok) return location;
  const { dir, version } = location;
  try {
    if (version === 2) {
      const enabled = (await readFile(join(dir, "cgroup.subtree_control"), "utf-8")).split(/\s+/);
      if (!enabled.includes("pids")) await writeFile(join(dir, "cgroup.subtree_control"), "+pids");
    }
    removeLeftovers(dir);
    let counter = 0;
    const factory: PidsCgroupFactory = {
      version,
      parent: dir,
      async create(maxPids) {
        const child = join(dir, `${PREFIX}${process.pid}-${++counter}`);
        await mkdir(child);
        try {
          await writeFile(join(child, "pids.max"), String(maxPids));
        } catch (err) {
          await rmdir(child).catch(() => undefined);
          throw err;
        }
        return callCgroup(child);
      },
    };
    const trial = await factory.create(8);
    await trial.remove();
    if (existsSync(trial.dir)) return { ok: false, reason: `cannot remove the trial cgroup ${trial.dir}` };
    return { ok: true, factory };
  } catch (err) {
    return { ok: false, reason: `pids cgroup ${dir} (v${version}) is not writable: ${(err as Error).message}` };
  }
}

function callCgroup(dir: string): CallCgroup {
  const procsFile = join(dir, "cgroup.procs");
  const isEmpty = () => {
    try {
      return readFileSync(procsFile, "utf-8").trim() === "";
    } catch {
      return true;
    }
  };
  return {
    dir,
    procsFile,
    isEmpty,
    async remove() {
      const end = Date.now() + 5_000;
      for (;;) {
        if (isEmpty()) {
          try {
            await rmdir(dir);
            return;
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
          }
        }
        if (Date.now() > end) return;
        await sleep(10);
      }
    },
  };
}

/** Removes empty per-command cgroups left by runners that died (their pid is in the name). */
function removeLeftovers(parent: string): void {
  for (const name of readdirSync(parent)) {
    const match = name.startsWith(PREFIX) ? /^(\d+)-\d+$/.exec(name.slice(PREFIX.length)) : null;
    if (!match || isProcessAlive(Number(match[1]))) continue;
    void rmdir(join(parent, name)).catch(() => undefined);
  }
}
