import type { Match, MsgHdrs } from "@nats-io/transport-node";

const HEADER_LINE = "NATS/1.0";

/**
 * The headers of one JetStream publish, as written on the wire (`NATS/1.0`, then `Key: value`
 * lines), built once per message. `MsgHdrs` for nats.js's `publish`, without the general header
 * object's work per header (key canonicalisation, lookups by key, a map of lists): keys are kept
 * exactly as given, in insertion order, and compared exactly (every `match` is taken as `Exact`).
 * nats.js writes a message's headers by calling their `encode()`, which this provides. A value
 * holding CR or LF is refused (`set` throws), as nats.js refuses it.
 */
export class PublishHeaders implements MsgHdrs {
  hasError = false;
  status = "";
  code = 0;
  description = "";
  /** Keys and values in insertion order, side by side. */
  private readonly keyList: string[] = [];
  private readonly valueList: string[] = [];

  static of(fields: Record<string, string | undefined>): PublishHeaders {
    const h = new PublishHeaders();
    for (const key in fields) {
      const value = fields[key];
      if (value !== undefined) h.append(key, value);
    }
    return h;
  }

  *[Symbol.iterator](): Iterator<[string, string[]]> {
    for (const key of this.keys()) yield [key, this.values(key)];
  }

  get(k: string, _match?: Match): string {
    const i = this.keyList.indexOf(k);
    return i < 0 ? "" : (this.valueList[i] as string);
  }

  last(k: string, _match?: Match): string {
    return this.values(k).at(-1) ?? "";
  }

  has(k: string, _match?: Match): boolean {
    return this.keyList.includes(k);
  }

  set(k: string, v: string, _match?: Match): void {
    this.delete(k);
    this.append(k, v);
  }

  append(k: string, v: string, _match?: Match): void {
    if (k.length === 0 || /[\s:]/.test(k)) throw new Error(`invalid header key: ${JSON.stringify(k)}`);
    if (v.includes("\r") || v.includes("\n")) throw new Error("header values cannot contain \\r or \\n");
    this.keyList.push(k);
    this.valueList.push(v.trim());
  }

  keys(): string[] {
    return [...new Set(this.keyList)];
  }

  values(k: string, _match?: Match): string[] {
    return this.valueList.filter((_, i) => this.keyList[i] === k);
  }

  delete(k: string, _match?: Match): void {
    for (let i = this.keyList.length - 1; i >= 0; i--) {
      if (this.keyList[i] !== k) continue;
      this.keyList.splice(i, 1);
      this.valueList.splice(i, 1);
    }
  }

  /** The wire form nats.js writes before the payload (a slice of Node's shared pool: no backing store each). */
  encode(): Uint8Array {
    let s = HEADER_LINE;
    for (let i = 0; i < this.keyList.length; i++) s += `\r\n${this.keyList[i]}: ${this.valueList[i]}`;
    return Buffer.from(`${s}\r\n\r\n`, "utf8");
  }

  toString(): string {
    return new TextDecoder().decode(this.encode());
  }
}
