import { describe, expect, it } from "vitest";
import { issueTicket, ticketKeyOf, verifyTicket } from "./stream-ticket.js";

const key = ticketKeyOf("k".repeat(32));
const claims = { tenant: "acme", sessionId: "s-1", expiresAt: 10_000 };

describe("stream tickets", () => {
  it("grant the session's events to the tenant until they expire", () => {
    const ticket = issueTicket(claims, key);
    expect(verifyTicket(ticket, key, "s-1", 9_999)).toEqual({ ok: true, tenant: "acme" });
    expect(verifyTicket(ticket, key, "s-1", 10_000)).toEqual({
      ok: false,
      reason: "the ticket has expired; ask for a new one",
    });
  });

  it("are bound to one session", () => {
    expect(verifyTicket(issueTicket(claims, key), key, "s-2", 0)).toEqual({
      ok: false,
      reason: "the ticket is for another session",
    });
  });

  it("are refused when signed with another key or altered", () => {
    const ticket = issueTicket(claims, key);
    expect(verifyTicket(ticket, ticketKeyOf(undefined), "s-1", 0)).toMatchObject({ ok: false, reason: /signature/ });
    const [v, payload, sig] = ticket.split(".") as [string, string, string];
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload, "base64url").toString()), t: "globex" }),
    ).toString("base64url");
    expect(verifyTicket(`${v}.${forged}.${sig}`, key, "s-1", 0)).toMatchObject({ ok: false, reason: /signature/ });
  });

  it("are refused when malformed", () => {
    for (const bad of ["", "v1", "v1..", "v2.a.b", "v1.a.b.c", "v1.%%%.abc"]) {
      expect(verifyTicket(bad, key, "s-1", 0)).toMatchObject({ ok: false });
    }
  });

  it("differ each time (a nonce), even for the same claims", () => {
    expect(issueTicket(claims, key)).not.toBe(issueTicket(claims, key));
  });
});
