// The symlink race of the file tools, as an attacker runs it: a `bash` call swaps a workspace
// directory and a symlink to a directory outside (renameat2 RENAME_EXCHANGE, in a tight loop) while
// file tools run through that name. Used by the race tests at the tool level and through a runner.
import { lstat, mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** renameat2(2)'s syscall number by Node's `process.arch`. */
const RENAMEAT2: Partial<Record<NodeJS.Architecture, number>> = { x64: 316, arm64: 276, riscv64: 276 };

/** The marker in every file outside the workspace: a tool result that shows it read outside. */
export const OUTSIDE_MARK = "OUTSIDE-SECRET-7c1f";
export const OUTSIDE_ONLY = "outside-only-4d2a.txt";

/**
 * A bash command that swaps `a` and `b` (names in the working directory) atomically for `seconds`
 * to `seconds` + 1 seconds,
 * then prints `flips <n>`. Perl's `syscall` calls renameat2 directly (perl-base has no module for
 * it, and coreutils' `mv --exchange` is newer than Debian 12's).
 */
export function flipCommand(a: string, b: string, seconds: number): string {
  const nr = RENAMEAT2[process.arch];
  if (nr === undefined) throw new Error(`no renameat2 syscall number for ${process.arch}`);
  // syscall() takes pointers to the strings of variables (literals are read-only to it).
  const script = `my ($a, $b, $n) = ("${a}", "${b}", 0); my $end = time + ${seconds} + 1; while (time < $end) { syscall(${nr}, -100, $a, -100, $b, 2) == 0 or die "renameat2: $!"; $n++ } print "flips $n\\n";`;
  return `perl -e '${script}'`;
}

/**
 * Lays out the scene: `<root>/d/` (a real directory with `target.txt` and `edit-me.txt`) and
 * `<root>/l`, a symlink to `<outside>/o/`, which holds files of the same names with `OUTSIDE_MARK`
 * and `OUTSIDE_ONLY`. Returns a check of what is outside: every file, name and content.
 */
export async function layRaceScene(root: string, outside: string): Promise<{ snapshot(): Promise<string> }> {
  const d = join(root, "d");
  const o = join(outside, "o");
  await mkdir(d, { recursive: true });
  await mkdir(o, { recursive: true });
  await writeFile(join(d, "target.txt"), "inside target\n");
  await writeFile(join(d, "edit-me.txt"), "inside edit\n");
  await writeFile(join(o, "target.txt"), `${OUTSIDE_MARK} target\n`);
  await writeFile(join(o, "edit-me.txt"), `${OUTSIDE_MARK} edit\n`);
  await writeFile(join(o, OUTSIDE_ONLY), `${OUTSIDE_MARK} only\n`);
  await symlink(o, join(root, "l"));
  return {
    async snapshot() {
      const parts: string[] = [];
      const walk = async (dir: string): Promise<void> => {
        for (const name of (await readdir(dir)).sort()) {
          const path = join(dir, name);
          const info = await lstat(path);
          if (info.isDirectory()) await walk(path);
          else parts.push(`${path}: ${info.isFile() ? await readFile(path, "utf-8") : "(not a file)"}`);
        }
      };
      await walk(outside);
      return parts.join("\n");
    },
  };
}

/** The tool calls of one racing batch: `n` of each file tool through the flipped name `d`. */
export function racingCalls(round: number, n: number): Array<{ tool: string; args: Record<string, unknown> }> {
  const calls: Array<{ tool: string; args: Record<string, unknown> }> = [];
  for (let i = 0; i < n; i++) {
    calls.push({ tool: "write", args: { path: `d/new-${round}-${i}.txt`, content: `written ${round}-${i}\n` } });
    calls.push({ tool: "edit", args: { path: "d/edit-me.txt", edits: [{ oldText: "edit", newText: "edit!" }] } });
    calls.push({ tool: "read", args: { path: "d/target.txt" } });
    calls.push({ tool: "ls", args: { path: "d" } });
    calls.push({ tool: "find", args: { pattern: "*.txt", path: "d" } });
    calls.push({ tool: "grep", args: { pattern: "SECRET|target", path: "d" } });
  }
  return calls;
}

/** Resolves (epoch ms) once `<root>/d` has been seen both as a directory and as a symlink: the flipper runs. */
export async function untilFlipping(root: string, timeoutMs = 20_000): Promise<number> {
  const seen = new Set<string>();
  const end = Date.now() + timeoutMs;
  while (seen.size < 2) {
    if (Date.now() > end) throw new Error("the flipper never swapped d and l");
    const info = await lstat(join(root, "d")).catch(() => null);
    if (info) seen.add(info.isSymbolicLink() ? "link" : "dir");
  }
  return Date.now();
}

/** True when a tool's result text or details show anything that lives only outside the workspace. */
export function showsOutside(resultJson: string): boolean {
  return resultJson.includes(OUTSIDE_MARK) || resultJson.includes(OUTSIDE_ONLY);
}
