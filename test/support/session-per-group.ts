// Session ids spread over stream groups, for tests of a log of K groups.
import { groupOf, partitionOf } from "@fleet/protocol";

/** One session id `<prefix><i>` per stream group, in group order (partition p is in group p mod K). */
export function sessionPerGroup(prefix: string, partitions: number, groups: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < groups; i++) {
    const sid = `${prefix}${i}`;
    if (groupOf(partitionOf(sid, partitions), groups) === out.length) out.push(sid);
  }
  return out;
}
