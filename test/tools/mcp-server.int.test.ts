// An MCP server as Fleet sees it (no NATS): the real servers from npm, stdio ones under the sandbox.
import { readlinkSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  type AnyToolDefinition,
  createMcpServerConnection,
  IDEMPOTENCY_META_KEY,
  type McpServerConnection,
  type McpServerEntry,
  openSandbox,
  type ToolContext,
  type ToolOutput,
} from "@fleet/tools";
import { createHarness, type Harness, processesMatching } from "@fleet/tools/testing";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  EVERYTHING,
  everythingStdio,
  FILESYSTEM,
  type HttpServerProcess,
  NODE_MODULES,
  startEverythingHttp,
} from "./mcp-support.js";
import { until } from "./support.js";

const silent = pino({ level: "silent" });
type Seen = { direction: "sent" | "received"; message: Record<string, unknown> };
type Params = { _meta?: Record<string, unknown>; requestId?: unknown };
const paramsOf = (seen: Seen | undefined): Params => (seen?.message.params ?? {}) as Params;

describe("MCP servers from npm (real processes, stdio ones sandboxed)", () => {
  let harness: Harness;
  let workDir: string;
  const open: McpServerConnection[] = [];

  async function connect(name: string, entry: McpServerEntry) {
    const seen: Seen[] = [];
    let changes = 0;
    const conn = createMcpServerConnection({
      name,
      entry,
      sandbox: await openSandbox(),
      workDir,
      logger: silent,
      backoff: { baseMs: 300, capMs: 2_000 },
      onToolsChanged: () => {
        changes++;
      },
      onMessage: (direction, message) => seen.push({ direction, message: message as Record<string, unknown> }),
    });
    open.push(conn);
    await conn.start();
    return { conn, seen, changes: () => changes };
  }

  const tool = (conn: McpServerConnection, name: string): AnyToolDefinition => {
    const found = conn.tools().find((t) => t.name === name);
    if (!found) throw new Error(`${name} not served: ${conn.tools().map((t) => t.name)}`);
    return found;
  };

  function context(over: Partial<ToolContext> = {}): ToolContext & { updates: unknown[]; extended: () => number } {
    const updates: unknown[] = [];
    let extended = 0;
    return {
      ...harness.ctx,
      signal: new AbortController().signal,
      onUpdate: (p) => updates.push(p),
      extendDeadline: () => {
        extended++;
      },
      sessionId: "s-mcp",
      toolCallId: "tc-1",
      ...over,
      updates,
      extended: () => extended,
    };
  }

  const run = async (t: AnyToolDefinition, args: unknown, ctx: ToolContext): Promise<ToolOutput> => {
    const out = await t.execute(args, ctx);
    return typeof out === "string" ? { content: [{ type: "text", text: out }] } : out;
  };
  const textOf = (out: ToolOutput) => out.content.map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join("\n");

  beforeAll(async () => {
    harness = await createHarness();
    workDir = await mkdtemp(join(tmpdir(), "fleet-mcp-"));
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.stop()));
  });
  afterAll(async () => {
    await harness.cleanup();
    await rm(workDir, { recursive: true, force: true });
  });

  describe("server-everything over stdio, sandboxed", () => {
    it("lists its tools under mcp__ names with their schema, description and retry policy, and calls them", async () => {
      const { conn, seen } = await connect("everything", everythingStdio());
      expect(conn.status().state).toBe("up");
      const echo = tool(conn, "mcp__everything__echo");
      expect(echo.description).toMatch(/echo/i);
      expect(echo.jsonSchema).toMatchObject({ type: "object", properties: { message: { type: "string" } } });
      expect(echo.retry).toBe("safe"); // readOnlyHint
      // toggle-simulated-logging is neither read-only nor idempotent.
      expect(tool(conn, "mcp__everything__toggle-simulated-logging").retry).toBe("never");
      // A tool that must run as an MCP task is not served.
      expect(conn.tools().some((t) => t.name.includes("simulate-research-query"))).toBe(false);

      const ctx = context();
      const out = await run(echo, { message: "hello mcp" }, ctx);
      expect(out.isError).toBe(false);
      expect(textOf(out)).toContain("hello mcp");
      const call = seen.find((s) => s.direction === "sent" && s.message.method === "tools/call");
      expect(paramsOf(call)._meta?.[IDEMPOTENCY_META_KEY]).toBe("s-mcp.tc-1");
    });

    it("keeps structured content and isError, and passes the trace context in _meta", async () => {
      const { conn, seen } = await connect("everything", everythingStdio());
      const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
      const structured = await run(
        tool(conn, "mcp__everything__get-structured-content"),
        { location: "Chicago" },
        context({ traceContext: { traceparent } }),
      );
      expect(structured.isError).toBe(false);
      expect(structured.details).toMatchObject({
        server: "everything",
        tool: "get-structured-content",
        structuredContent: { temperature: expect.any(Number), conditions: expect.any(String) },
      });
      const sent = seen.filter((s) => s.direction === "sent" && s.message.method === "tools/call").at(-1);
      expect(paramsOf(sent)._meta?.traceparent).toBe(traceparent);
      // Arguments the server refuses come back as its error result, kept as one.
      const refused = await run(tool(conn, "mcp__everything__get-sum"), { a: "one", b: 2 }, context());
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(/invalid|expected number/i);
    });

    it("turns progress notifications into updates that each extend the deadline", async () => {
      const { conn } = await connect("everything", everythingStdio());
      const ctx = context();
      const out = await run(
        tool(conn, "mcp__everything__trigger-long-running-operation"),
        { duration: 1.5, steps: 3 },
        ctx,
      );
      expect(textOf(out)).toContain("Long running operation completed");
      // The SDK handles notifications a tick after responses: the last one, arriving with the
      // result, may be dropped. Every one that arrived is an update and extended the deadline.
      expect(ctx.updates.length).toBeGreaterThanOrEqual(2);
      expect(ctx.updates).toEqual([1, 2, 3].slice(0, ctx.updates.length).map((progress) => ({ progress, total: 3 })));
      expect(ctx.extended()).toBe(ctx.updates.length);
    });

    it("sends notifications/cancelled for the call's request when the call is aborted", async () => {
      const { conn, seen } = await connect("everything", everythingStdio());
      const controller = new AbortController();
      const ctx = context({ signal: controller.signal });
      const started = Date.now();
      const call = run(tool(conn, "mcp__everything__trigger-long-running-operation"), { duration: 30, steps: 30 }, ctx);
      await until(() => ctx.updates.length > 0, 15_000, "first progress");
      controller.abort("cancel");
      await expect(call).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(15_000);
      const request = seen.find((s) => s.direction === "sent" && s.message.method === "tools/call");
      const cancelled = seen.find((s) => s.direction === "sent" && s.message.method === "notifications/cancelled");
      expect(paramsOf(cancelled).requestId).toBe(request?.message.id);
      // The server is still up and serves the next call.
      expect(textOf(await run(tool(conn, "mcp__everything__echo"), { message: "after" }, context()))).toContain(
        "after",
      );
    });

    it("re-lists on notifications/tools/list_changed: the roots tool appears, and answers with its workspace", async () => {
      const { conn, seen } = await connect("everything", everythingStdio());
      await until(
        () => conn.tools().some((t) => t.name === "mcp__everything__get-roots-list"),
        15_000,
        "get-roots-list listed",
      );
      const changed = seen.findIndex(
        (s) => s.direction === "received" && s.message.method === "notifications/tools/list_changed",
      );
      expect(changed).toBeGreaterThanOrEqual(0);
      await until(
        () => seen.slice(changed).some((s) => s.direction === "sent" && s.message.method === "tools/list"),
        10_000,
        "tools/list after list_changed",
      );
      const roots = await run(tool(conn, "mcp__everything__get-roots-list"), {}, context());
      expect(textOf(roots)).toContain(pathToFileURL(join(workDir, "everything")).href);
    });

    it("runs the server in the sandbox: only its own variables, its directory as home", async () => {
      process.env.FLEET_TEST_RUNNER_SECRET = "runner-only";
      try {
        const { conn } = await connect("everything", everythingStdio({ env: { GREETING: "hi" } }));
        const out = textOf(await run(tool(conn, "mcp__everything__get-env"), {}, context()));
        const env = JSON.parse(out) as Record<string, string>;
        expect(env.GREETING).toBe("hi");
        expect(env.FLEET_TEST_RUNNER_SECRET).toBeUndefined();
        expect(env.HOME).toBe(join(workDir, "everything"));
      } finally {
        delete process.env.FLEET_TEST_RUNNER_SECRET;
      }
    });

    it("runs the server in its own namespaces: no network unless its entry says so", async () => {
      const marker = `--fleet-ns-${process.pid}-${Date.now()}`;
      const nsOf = (pid: number | "self", ns: string) => readlinkSync(`/proc/${pid}/ns/${ns}`);
      const serverPid = (mark: string) => {
        const pids = processesMatching(
          new RegExp(`^${process.execPath} \\S+server-everything/dist/index\\.js stdio ${mark}$`),
        );
        expect(pids).toHaveLength(1);
        return pids[0] as number;
      };
      await connect("closed", everythingStdio({ args: [EVERYTHING, "stdio", marker] }));
      const closed = serverPid(marker);
      expect(nsOf(closed, "net")).not.toBe(nsOf("self", "net"));
      expect(nsOf(closed, "mnt")).not.toBe(nsOf("self", "mnt"));
      expect(nsOf(closed, "pid")).not.toBe(nsOf("self", "pid"));
      await connect("online", everythingStdio({ args: [EVERYTHING, "stdio", `${marker}-net`], network: true }));
      const online = serverPid(`${marker}-net`);
      expect(nsOf(online, "net")).toBe(nsOf("self", "net"));
      expect(nsOf(online, "mnt")).not.toBe(nsOf("self", "mnt"));
    });

    it("restarts a server killed mid-call: the call fails, calls fail at once while down, then it is back and re-listed", async () => {
      const { conn, seen } = await connect("everything", everythingStdio());
      const before = conn.status();
      if (before.state !== "up" || before.pid === undefined) throw new Error("not up");
      const ctx = context();
      const call = run(tool(conn, "mcp__everything__trigger-long-running-operation"), { duration: 30, steps: 30 }, ctx);
      await until(() => ctx.updates.length > 0, 15_000, "first progress");
      process.kill(-before.pid, "SIGKILL");
      await expect(call).rejects.toThrow(/MCP server everything went away during the call/);
      expect(conn.status().state).toBe("down");
      const t0 = Date.now();
      await expect(run(tool(conn, "mcp__everything__echo"), { message: "x" }, context())).rejects.toThrow(
        /MCP server everything is down \(its process exited\); restarting in \d+ ms/,
      );
      expect(Date.now() - t0).toBeLessThan(1_000);
      const listsBefore = seen.filter((s) => s.direction === "sent" && s.message.method === "tools/list").length;
      await until(() => conn.status().state === "up", 20_000, "restarted");
      const after = conn.status();
      expect(after).toMatchObject({ state: "up", restarts: 1 });
      expect(after.state === "up" && after.pid).not.toBe(before.pid);
      expect(seen.filter((s) => s.direction === "sent" && s.message.method === "tools/list").length).toBeGreaterThan(
        listsBefore,
      );
      expect(textOf(await run(tool(conn, "mcp__everything__echo"), { message: "back" }, context()))).toContain("back");
    });

    it("backs off while a server cannot start, failing calls at once", async () => {
      const { conn } = await connect("broken", everythingStdio({ args: [join(NODE_MODULES, "no-such-server.js")] }));
      expect(conn.status()).toMatchObject({ state: "down" });
      expect(conn.tools()).toEqual([]);
      await until(() => conn.status().restarts >= 2, 10_000, "two restarts");
      expect(conn.status().state).not.toBe("up");
    });
  });

  describe("server-everything over streamable HTTP", () => {
    let http: HttpServerProcess;
    beforeAll(async () => {
      http = await startEverythingHttp();
    });
    afterAll(async () => {
      await http?.stop();
    });

    it("lists, calls, reports progress, errors and structured content, and cancels", async () => {
      const { conn, seen } = await connect("web", { url: http.url, headers: { authorization: "Bearer test-token" } });
      expect(conn.status().state).toBe("up");
      expect(textOf(await run(tool(conn, "mcp__web__echo"), { message: "over http" }, context()))).toContain(
        "over http",
      );
      const ctx = context();
      await run(tool(conn, "mcp__web__trigger-long-running-operation"), { duration: 1, steps: 2 }, ctx);
      expect(ctx.updates[0]).toEqual({ progress: 1, total: 2 });
      expect(ctx.extended()).toBe(ctx.updates.length);
      const refused = await run(tool(conn, "mcp__web__get-sum"), { a: "one", b: 2 }, context());
      expect(refused.isError).toBe(true);
      const structured = await run(tool(conn, "mcp__web__get-structured-content"), { location: "New York" }, context());
      expect(structured.details).toMatchObject({ structuredContent: { humidity: expect.any(Number) } });

      const controller = new AbortController();
      const slow = context({ signal: controller.signal });
      const call = run(tool(conn, "mcp__web__trigger-long-running-operation"), { duration: 30, steps: 30 }, slow);
      await until(() => slow.updates.length > 0, 15_000, "first progress");
      controller.abort("cancel");
      await expect(call).rejects.toThrow();
      expect(seen.some((s) => s.direction === "sent" && s.message.method === "notifications/cancelled")).toBe(true);
    });

    it("fails calls when the HTTP server is gone, at once while it is down, and reconnects when it is back", async () => {
      const { conn } = await connect("web", { url: http.url, headers: {} });
      await http.stop();
      await expect(run(tool(conn, "mcp__web__echo"), { message: "x" }, context())).rejects.toThrow(
        /MCP server web went away during the call/,
      );
      const t0 = Date.now();
      await expect(run(tool(conn, "mcp__web__echo"), { message: "x" }, context())).rejects.toThrow(
        /MCP server web is down \(a call failed: .*\); restarting in \d+ ms/,
      );
      expect(Date.now() - t0).toBeLessThan(1_000);
      http = await startEverythingHttp("streamableHttp", http.port);
      await until(() => conn.status().state === "up", 20_000, "reconnected");
      expect(conn.status().restarts).toBeGreaterThanOrEqual(1);
      expect(textOf(await run(tool(conn, "mcp__web__echo"), { message: "back" }, context()))).toContain("back");
    });
  });

  describe("server-everything over the older HTTP+SSE transport", () => {
    it("is reached through the SSE fallback when streamable HTTP is refused", async () => {
      const sse = await startEverythingHttp("sse");
      try {
        const { conn, seen } = await connect("old", { url: sse.url, headers: {} });
        expect(conn.status()).toMatchObject({ state: "up" });
        // One initialize refused over streamable HTTP, one over HTTP+SSE.
        expect(seen.filter((s) => s.direction === "sent" && s.message.method === "initialize")).toHaveLength(2);
        expect(textOf(await run(tool(conn, "mcp__old__echo"), { message: "over sse" }, context()))).toContain(
          "over sse",
        );
      } finally {
        await sse.stop();
      }
    });
  });

  describe("server-filesystem over stdio, sandboxed", () => {
    it("reads and writes in its directory, with retry policies from its annotations", async () => {
      const dir = await mkdtemp(join(tmpdir(), "fleet-mcp-fs-"));
      try {
        await writeFile(join(dir, "hello.txt"), "from the host\n");
        const { conn } = await connect("fs", {
          command: process.execPath,
          args: [FILESYSTEM, dir, "/etc"],
          env: {},
          cwd: dir,
          network: false,
          readOnlyPaths: [NODE_MODULES],
        });
        const read = await run(tool(conn, "mcp__fs__read_text_file"), { path: join(dir, "hello.txt") }, context());
        expect(textOf(read)).toContain("from the host");
        const write = tool(conn, "mcp__fs__write_file");
        expect(write.retry).toBe("safe"); // idempotentHint
        expect(tool(conn, "mcp__fs__move_file").retry).toBe("never"); // neither read-only nor idempotent
        await run(write, { path: join(dir, "out.txt"), content: "from the server" }, context());
        expect(await readFile(join(dir, "out.txt"), "utf8")).toBe("from the server");
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
});
