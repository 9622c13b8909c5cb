import { describe, expect, it } from "vitest";
import { addressRefusal, canonicalAddress, parseAllowance } from "./address-policy.js";

const NONE = { kind: "none" } as const;
const ALL = { kind: "all" } as const;

describe("addressRefusal", () => {
  it.each([
    ["127.0.0.1", "a loopback address"],
    ["127.255.0.9", "a loopback address"],
    ["::1", "a loopback address"],
    ["::ffff:127.0.0.1", "a loopback address"],
    ["::ffff:7f00:1", "a loopback address"],
    ["64:ff9b::7f00:1", "a loopback address"],
    ["2002:7f00:1::", "a loopback address"],
    ["0.0.0.0", "an unspecified address"],
    ["::", "an unspecified address"],
    ["169.254.1.1", "a link-local address"],
    ["fe80::1", "a link-local address"],
    ["10.1.2.3", "a private address"],
    ["172.16.0.1", "a private address"],
    ["172.31.255.255", "a private address"],
    ["192.168.1.1", "a private address"],
    ["100.64.0.1", "a private address"],
    ["fd12:3456::1", "a private address"],
    ["169.254.169.254", "a cloud metadata address"],
    ["169.254.170.2", "a cloud metadata address"],
    ["100.100.100.200", "a cloud metadata address"],
    ["fd00:ec2::254", "a cloud metadata address"],
    ["::ffff:169.254.169.254", "a cloud metadata address"],
    ["224.0.0.1", "a multicast address"],
    ["ff02::1", "a multicast address"],
    ["255.255.255.255", "a reserved address"],
    ["192.0.2.10", "a reserved address"],
    ["2001:db8::1", "a reserved address"],
    ["2001:0:4136:e378::1", "a reserved address"],
  ])("refuses %s as %s", (address, what) => {
    expect(addressRefusal(address, NONE)).toMatch(new RegExp(`is ${what}$`));
  });

  it.each(["93.184.215.14", "1.1.1.1", "172.32.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"])(
    "accepts the public address %s",
    (address) => {
      expect(addressRefusal(address, NONE)).toBeUndefined();
    },
  );

  it("allows private addresses with 1, but never a metadata address", () => {
    expect(addressRefusal("127.0.0.1", ALL)).toBeUndefined();
    expect(addressRefusal("10.0.0.1", ALL)).toBeUndefined();
    expect(addressRefusal("169.254.169.254", ALL)).toMatch(/cloud metadata/);
  });

  it("allows only the listed addresses and ranges with a list", () => {
    const allowance = parseAllowance("127.0.0.1, 10.1.0.0/16");
    if ("error" in allowance) throw new Error(allowance.error);
    expect(addressRefusal("127.0.0.1", allowance)).toBeUndefined();
    expect(addressRefusal("10.1.9.9", allowance)).toBeUndefined();
    expect(addressRefusal("127.0.0.2", allowance)).toMatch(/loopback/);
    expect(addressRefusal("10.2.0.1", allowance)).toMatch(/private/);
  });

  it("names what it cannot read", () => {
    expect(addressRefusal("example.com", NONE)).toBe("example.com is not an IP address");
  });
});

describe("parseAllowance", () => {
  it("reads none, all and lists, and names bad entries", () => {
    expect(parseAllowance(undefined)).toEqual({ kind: "none" });
    expect(parseAllowance("0")).toEqual({ kind: "none" });
    expect(parseAllowance("1")).toEqual({ kind: "all" });
    expect(parseAllowance("::1,127.0.0.0/8")).toEqual({ kind: "list", entries: ["::1", "127.0.0.0/8"] });
    expect(parseAllowance("10.0.0.0/33,foo")).toEqual({
      error: "not addresses or CIDR ranges: 10.0.0.0/33, foo (or use 1 for all)",
    });
  });
});

describe("canonicalAddress", () => {
  it("unwraps brackets and IPv4 inside IPv6", () => {
    expect(canonicalAddress("[::FFFF:127.0.0.1]")).toBe("127.0.0.1");
    expect(canonicalAddress("2001:db8::1")).toBe("2001:db8::1");
  });
});
