// Which network addresses a webhook may be delivered to (server-side request forgery protection).
// Pure: addresses in, a refusal out; name resolution and connecting are webhooks/safe-post.ts's.
import { BlockList, isIP } from "node:net";

/** A class of addresses a webhook is refused, with the ranges it covers. */
interface AddressClass {
  name: string;
  v4: readonly string[];
  v6: readonly string[];
}

/**
 * Cloud metadata services (AWS, GCP, Azure, Oracle, DigitalOcean: 169.254.169.254; ECS task
 * metadata: 169.254.170.2; Alibaba: 100.100.100.200; AWS over IPv6: fd00:ec2::254). Refused even
 * when private addresses are allowed, unless listed one by one in FLEET_WEBHOOK_ALLOW_PRIVATE.
 */
const METADATA: AddressClass = {
  name: "a cloud metadata address",
  v4: ["169.254.169.254/32", "169.254.170.2/32", "100.100.100.200/32"],
  v6: ["fd00:ec2::254/128"],
};

/** Every class refused by default, most specific first (the first match names the refusal). */
const PRIVATE_CLASSES: readonly AddressClass[] = [
  { name: "a loopback address", v4: ["127.0.0.0/8"], v6: ["::1/128"] },
  { name: "an unspecified address", v4: ["0.0.0.0/8"], v6: ["::/128"] },
  { name: "a link-local address", v4: ["169.254.0.0/16"], v6: ["fe80::/10"] },
  {
    name: "a private address",
    v4: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"],
    v6: ["fc00::/7"],
  },
  { name: "a multicast address", v4: ["224.0.0.0/4"], v6: ["ff00::/8"] },
  {
    name: "a reserved address",
    v4: ["192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4"],
    // IPv4-compatible (deprecated), discard, documentation, Teredo (an IPv4 address in disguise),
    // local-use NAT64.
    v6: ["::/96", "100::/64", "2001:db8::/32", "2001::/32", "64:ff9b:1::/48"],
  },
];

const listOf = (classes: readonly AddressClass[]) =>
  classes.map((c) => {
    const list = new BlockList();
    for (const cidr of c.v4) addCidr(list, cidr);
    for (const cidr of c.v6) addCidr(list, cidr);
    return { name: c.name, list };
  });

const METADATA_LIST = listOf([METADATA])[0] as { name: string; list: BlockList };
const PRIVATE_LISTS = listOf(PRIVATE_CLASSES);

function addCidr(list: BlockList, cidr: string): void {
  const [address = "", bits] = cidr.split("/");
  const family = isIP(address) === 6 ? "ipv6" : "ipv4";
  if (bits === undefined) list.addAddress(address, family);
  else list.addSubnet(address, Number(bits), family);
}

/**
 * What may be reached besides public addresses (`FLEET_WEBHOOK_ALLOW_PRIVATE`): nothing (unset,
 * `0`), every private, loopback and link-local address (`1`), or only the listed addresses and
 * CIDR ranges (metadata addresses too, when listed).
 */
export type AddressAllowance = { kind: "none" } | { kind: "all" } | { kind: "list"; entries: readonly string[] };

/** Parses `FLEET_WEBHOOK_ALLOW_PRIVATE`; an error names the entries that are not addresses or ranges. */
export function parseAllowance(value: string | undefined): AddressAllowance | { error: string } {
  const v = (value ?? "").trim();
  if (v === "" || v === "0" || v.toLowerCase() === "false") return { kind: "none" };
  if (v === "1" || v.toLowerCase() === "true") return { kind: "all" };
  const entries = v
    .split(",")
    .map((e) => e.trim())
    .filter(Boolean);
  const bad = entries.filter((e) => !isCidr(e));
  if (bad.length > 0) return { error: `not addresses or CIDR ranges: ${bad.join(", ")} (or use 1 for all)` };
  return { kind: "list", entries };
}

function isCidr(entry: string): boolean {
  const [address = "", bits, extra] = entry.split("/");
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (bits === undefined) return true;
  const n = Number(bits);
  return /^\d+$/.test(bits) && n >= 0 && n <= (family === 4 ? 32 : 128);
}

/** An address in canonical form: IPv4 as dotted quad, an IPv4-mapped or NAT64 IPv6 as its IPv4. */
export function canonicalAddress(address: string): string {
  const bare = address.replace(/^\[|\]$/g, "").toLowerCase();
  if (isIP(bare) !== 6) return bare;
  const embedded = embeddedIpv4(bare);
  return embedded ?? bare;
}

/** The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), NAT64 (`64:ff9b::/96`) or 6to4 address. */
function embeddedIpv4(v6: string): string | undefined {
  const groups = expandIpv6(v6);
  if (!groups) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  if (zero(0, 5) && groups[5] === 0xffff) return v4(groups[6] as number, groups[7] as number);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zero(2, 6)) return v4(groups[6] as number, groups[7] as number);
  if (groups[0] === 0x2002) return v4(groups[1] as number, groups[2] as number);
  return undefined;
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 included). */
function expandIpv6(v6: string): number[] | undefined {
  let text = v6.split("%")[0] as string;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = (dotted[1] as string).split(".").map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((g) => Number.parseInt(g, 16)));
  const front = parse(head);
  const back = tail === undefined ? [] : parse(tail);
  const missing = 8 - front.length - back.length;
  if (missing < 0 || (tail === undefined && missing !== 0)) return undefined;
  return [...front, ...Array.from({ length: missing }, () => 0), ...back];
}

/**
 * Undefined when a webhook may be delivered to `address`, else why not: `<address> is a loopback
 * address` (the class names: loopback, unspecified, link-local, private, multicast, reserved, cloud
 * metadata). An address that is not an IP address is refused.
 */
export function addressRefusal(address: string, allowance: AddressAllowance): string | undefined {
  const canonical = canonicalAddress(address);
  const family = isIP(canonical);
  if (family === 0) return `${address} is not an IP address`;
  const type = family === 4 ? "ipv4" : "ipv6";
  if (allowance.kind === "list") {
    const allowed = new BlockList();
    for (const entry of allowance.entries) addCidr(allowed, entry);
    if (allowed.check(canonical, type)) return undefined;
  }
  const shown = canonical === address ? address : `${address} (${canonical})`;
  if (METADATA_LIST.list.check(canonical, type)) return `${shown} is ${METADATA_LIST.name}`;
  if (allowance.kind === "all") return undefined;
  for (const c of PRIVATE_LISTS) if (c.list.check(canonical, type)) return `${shown} is ${c.name}`;
  return undefined;
}
