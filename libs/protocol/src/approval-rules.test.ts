import { describe, expect, it } from "vitest";
import {
  ApprovalRule,
  evaluateApprovalPolicy,
  type ApprovalRule as Rule,
  resolvePointer,
  workerApprovalLayer,
} from "./approval-rules.js";

const rule = (r: Rule): Rule => ApprovalRule.parse(r);

describe("approval rules / evaluation", () => {
  const session = {
    scope: "session" as const,
    rules: [
      rule({ tool: "bash", args: { pointer: "/command", regex: "^rm\\s" }, action: "deny", reason: "no rm" }),
      rule({ tool: "bash", args: { pointer: "/command", regex: "^ls( |$)" }, action: "allow" }),
    ],
  };
  const tenant = {
    scope: "tenant" as const,
    rules: [rule({ tool: "b*", action: "ask", expiresInMs: 60_000 }), rule({ tool: "write_?", action: "deny" })],
  };
  const worker = workerApprovalLayer(["edit"]);
  const layers = [session, tenant, worker];

  it("the first matching rule wins, session before tenant before worker", () => {
    expect(evaluateApprovalPolicy(layers, "bash", { command: "rm -rf /" })).toMatchObject({
      action: "deny",
      rule: { scope: "session", index: 0, value: { reason: "no rm" } },
    });
    expect(evaluateApprovalPolicy(layers, "bash", { command: "ls -la" })).toMatchObject({
      action: "allow",
      rule: { scope: "session", index: 1 },
    });
    expect(evaluateApprovalPolicy(layers, "bash", { command: "cat x" })).toMatchObject({
      action: "ask",
      rule: { scope: "tenant", index: 0, value: { expiresInMs: 60_000 } },
    });
    expect(evaluateApprovalPolicy(layers, "edit", {})).toMatchObject({
      action: "ask",
      rule: { scope: "worker", index: 0 },
    });
  });

  it("globs match whole names; no rule matching is allow without a rule", () => {
    expect(evaluateApprovalPolicy(layers, "write_x", {}).action).toBe("deny");
    expect(evaluateApprovalPolicy(layers, "write_xy", {})).toEqual({ action: "allow" });
    expect(evaluateApprovalPolicy(layers, "abash", {})).toEqual({ action: "allow" });
    expect(evaluateApprovalPolicy([], "bash", { command: "rm -rf /" })).toEqual({ action: "allow" });
  });

  it("a pointer that finds nothing does not match; non-strings match as JSON", () => {
    const layer = {
      scope: "session" as const,
      rules: [rule({ tool: "*", args: { pointer: "/n", regex: "^4[0-9]$" }, action: "deny" })],
    };
    expect(evaluateApprovalPolicy([layer], "t", { n: 42 }).action).toBe("deny");
    expect(evaluateApprovalPolicy([layer], "t", { n: 7 }).action).toBe("allow");
    expect(evaluateApprovalPolicy([layer], "t", { m: 42 }).action).toBe("allow");
    expect(evaluateApprovalPolicy([layer], "t", "not an object").action).toBe("allow");
  });

  it("resolves RFC 6901 pointers", () => {
    const doc = { "a/b": { "c~d": [10, 20] } };
    expect(resolvePointer(doc, "/a~1b/c~0d/1")).toEqual({ ok: true, value: 20 });
    expect(resolvePointer(doc, "")).toEqual({ ok: true, value: doc });
    expect(resolvePointer(doc, "/a~1b/c~0d/2")).toEqual({ ok: false });
    expect(resolvePointer(doc, "/a~1b/c~0d/01")).toEqual({ ok: false });
    expect(resolvePointer({}, "/toString")).toEqual({ ok: false });
  });
});

describe("approval rules / schema", () => {
  it("refuses a pattern that does not compile, expiry on non-ask rules and bad globs", () => {
    expect(ApprovalRule.safeParse({ tool: "bash", args: { pointer: "/c", regex: "(" }, action: "ask" }).success).toBe(
      false,
    );
    expect(ApprovalRule.safeParse({ tool: "bash", action: "deny", expiresInMs: 1000 }).success).toBe(false);
    expect(ApprovalRule.safeParse({ tool: "a.b", action: "deny" }).success).toBe(false);
    expect(ApprovalRule.safeParse({ tool: "bash", args: { pointer: "c", regex: "x" }, action: "ask" }).success).toBe(
      false,
    );
    expect(ApprovalRule.safeParse({ tool: "bash", action: "ask", extra: 1 }).success).toBe(false);
  });
});
