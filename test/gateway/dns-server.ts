// A real DNS server over UDP for tests: answers A queries for the names it is given, each from a
// list of answers used in turn (a name that resolves to another address on every query: DNS
// rebinding), with TTL 0; everything else gets an empty answer (NOERROR, no records).
import { createSocket, type RemoteInfo } from "node:dgram";
import type { AddressInfo } from "node:net";

export interface DnsServer {
  /** `127.0.0.1:<port>`, for FLEET_WEBHOOK_DNS_SERVERS. */
  readonly address: string;
  /** The A queries received, by name, in order. */
  readonly queries: string[];
  stop(): Promise<void>;
}

const TYPE_A = 1;

/** The question's name and type, and where the question ends, of a DNS query. */
function questionOf(msg: Buffer): { name: string; type: number; end: number } | undefined {
  const labels: string[] = [];
  let at = 12;
  while (at < msg.length) {
    const len = msg[at] as number;
    if (len === 0) break;
    labels.push(msg.subarray(at + 1, at + 1 + len).toString("ascii"));
    at += 1 + len;
  }
  if (at + 5 > msg.length) return undefined;
  return { name: labels.join(".").toLowerCase(), type: msg.readUInt16BE(at + 1), end: at + 5 };
}

export async function startDnsServer(answers: Record<string, string[]>): Promise<DnsServer> {
  const socket = createSocket("udp4");
  const queries: string[] = [];
  const served = new Map<string, number>();
  socket.on("message", (msg: Buffer, from: RemoteInfo) => {
    const q = questionOf(msg);
    if (!q) return;
    const list = q.type === TYPE_A ? answers[q.name] : undefined;
    let answer: Buffer = Buffer.alloc(0);
    if (list && list.length > 0) {
      queries.push(q.name);
      const n = served.get(q.name) ?? 0;
      served.set(q.name, n + 1);
      const ip = (list[n % list.length] as string).split(".").map(Number);
      answer = Buffer.from([0xc0, 0x0c, 0, TYPE_A, 0, 1, 0, 0, 0, 0, 0, 4, ...ip]);
    }
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // id
    header.writeUInt16BE(0x8180, 2); // response, recursion desired and available, NOERROR
    header.writeUInt16BE(1, 4); // one question
    header.writeUInt16BE(answer.length > 0 ? 1 : 0, 6);
    socket.send(Buffer.concat([header, msg.subarray(12, q.end), answer]), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const { port } = socket.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    queries,
    stop: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
