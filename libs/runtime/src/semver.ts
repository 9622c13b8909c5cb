/** Compares dotted numeric versions (`2.9.10` vs `2.10.0`); pre-release suffixes are ignored. */
export function compareVersions(a: string, b: string): number {
  const pa = a
    .split(/[.-]/)
    .slice(0, 3)
    .map((n) => Number.parseInt(n, 10) || 0);
  const pb = b
    .split(/[.-]/)
    .slice(0, 3)
    .map((n) => Number.parseInt(n, 10) || 0);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

export const atLeast = (version: string, min: string) => compareVersions(version, min) >= 0;
