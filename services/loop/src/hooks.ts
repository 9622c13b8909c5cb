import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { subjects } from "@fleet/protocol";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import type { AfterToolCallResult, BeforeToolCallResult, EngineHooks, NextTurnUpdate } from "./engine/index.js";

const HOOK_NAMES = [
  "transformContext",
  "convertToLlm",
  "beforeToolCall",
  "afterToolCall",
  "shouldStopAfterTurn",
  "prepareNextTurn",
] as const;

/**
 * Loads in-process plugin modules (comma-separated paths or package names in `FLEET_PLUGINS`). A
 * module exports any of the engine's hooks by name, or a default object holding them.
 */
export async function loadPluginHooks(spec: string, cwd = process.cwd()): Promise<EngineHooks[]> {
  const hooks: EngineHooks[] = [];
  for (const raw of spec
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const target = raw.startsWith(".") || isAbsolute(raw) ? pathToFileURL(resolve(cwd, raw)).href : raw;
    const mod = (await import(target)) as Record<string, unknown> & { default?: Record<string, unknown> };
    const source = { ...(mod.default ?? {}), ...mod };
    const picked: Record<string, unknown> = {};
    for (const name of HOOK_NAMES) if (typeof source[name] === "function") picked[name] = source[name];
    if (Object.keys(picked).length === 0) throw new Error(`plugin ${raw} exports none of: ${HOOK_NAMES.join(", ")}`);
    hooks.push(picked as EngineHooks);
  }
  return hooks;
}

const BeforeReply = z.object({ block: z.boolean().optional(), reason: z.string().optional() });
const AfterReply = z.object({
  content: z
    .array(
      z.union([
        z.object({ type: z.literal("text"), text: z.string() }),
        z.object({ type: z.literal("image"), data: z.string(), mimeType: z.string() }),
      ]),
    )
    .optional(),
  details: z.unknown().optional(),
  isError: z.boolean().optional(),
  terminate: z.boolean().optional(),
});

/** Asks of one hook call while the bus is out (each up to the hook timeout) before it counts as timed out. */
const MAX_OUTAGE_ASKS = 10;

type RequestOutcome<T> =
  | { kind: "none" }
  | { kind: "reply"; value: T }
  | { kind: "failed"; reason: string; timedOut?: true };

async function ask<T>(
  nc: NatsConnection,
  subject: string,
  payload: unknown,
  schema: z.ZodType<T>,
  timeoutMs: number,
): Promise<RequestOutcome<T>> {
  try {
    const msg = await nc.request(subject, JSON.stringify(payload), { timeout: timeoutMs });
    const parsed = schema.safeParse(msg.json());
    return parsed.success
      ? { kind: "reply", value: parsed.data }
      : { kind: "failed", reason: `invalid reply from ${subject}` };
  } catch (err) {
    const e = err as { name?: string; code?: string; message?: string };
    if (e.name === "NoRespondersError" || e.code === "503" || /no responders/i.test(e.message ?? ""))
      return { kind: "none" };
    if (e.name === "TimeoutError" || /timeout/i.test(e.message ?? "")) {
      return { kind: "failed", reason: `Remote hook ${subject} timed out after ${timeoutMs} ms`, timedOut: true };
    }
    return { kind: "failed", reason: `Remote hook ${subject} failed: ${e.message ?? String(err)}` };
  }
}

/** Asks one hook subject; "no responders" is remembered for `recheckMs`, outages are asked across. */
export type HookAsker = <T>(subject: string, payload: unknown, schema: z.ZodType<T>) => Promise<RequestOutcome<T>>;
export type { RequestOutcome as HookRequestOutcome };

/**
 * The worker's one asker of hook subjects over NATS request/reply. "No responders" means the hook
 * is not installed; that answer is kept for `recheckMs` (0: ask on every call), so a worker without
 * remote hooks does not pay a request per call. A hook service that starts is used from the next
 * check on, at most `recheckMs` later.
 */
export function createHookAsker(
  nc: NatsConnection,
  opts: { timeoutMs: number; recheckMs: number; now: () => number },
): HookAsker {
  const absentUntil = new Map<string, number>();
  // A request that timed out while disconnected or across a reconnect is asked again: the outage,
  // not the hook, swallowed it (a short bus outage must not block tool calls).
  let outages = 0;
  let connected = true;
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect") connected = false;
      if (status.type === "reconnect") connected = true;
      if (status.type === "disconnect" || status.type === "reconnect") outages++;
    }
  })().catch(() => undefined);
  async function askAcrossOutages<T>(subject: string, payload: unknown, schema: z.ZodType<T>) {
    for (let attempt = 0; ; attempt++) {
      const seen = outages;
      const out = await ask(nc, subject, payload, schema, opts.timeoutMs);
      const outage = outages !== seen || !connected;
      if (out.kind !== "failed" || !out.timedOut || !outage || attempt >= MAX_OUTAGE_ASKS) return out;
    }
  }
  return async <T>(subject: string, payload: unknown, schema: z.ZodType<T>): Promise<RequestOutcome<T>> => {
    const until = absentUntil.get(subject);
    if (until !== undefined && opts.now() < until) return { kind: "none" };
    const out = await askAcrossOutages(subject, payload, schema);
    if (out.kind === "none" && opts.recheckMs > 0) absentUntil.set(subject, opts.now() + opts.recheckMs);
    else absentUntil.delete(subject);
    return out;
  };
}

/** The tool-call hooks of `fleet.hook.before_tool_call` / `after_tool_call`, for every session of a worker. */
export interface RemoteHookClient {
  forSession(sessionId: string): EngineHooks;
  /** The asker behind them, shared with the named hook servers. */
  readonly ask: HookAsker;
}

export function createRemoteHookClient(
  nc: NatsConnection,
  opts: { timeoutMs: number; recheckMs: number; now: () => number },
): RemoteHookClient {
  const askHook = createHookAsker(nc, opts);
  return {
    ask: askHook,
    // A timeout or failure of `before_tool_call` blocks the call with a clear reason; of
    // `after_tool_call` keeps the result as it was.
    forSession: (sessionId) => ({
      async beforeToolCall({ toolCall, args }) {
        const out = await askHook(subjects.hook("before_tool_call"), { sessionId, toolCall, args }, BeforeReply);
        if (out.kind === "none") return undefined;
        if (out.kind === "failed") return { block: true, reason: out.reason };
        return out.value;
      },
      async afterToolCall({ toolCall, args, result, isError }) {
        const out = await askHook(
          subjects.hook("after_tool_call"),
          { sessionId, toolCall, args, result, isError },
          AfterReply,
        );
        return out.kind === "reply" ? (out.value as AfterToolCallResult) : undefined;
      },
    }),
  };
}

/**
 * Composes hook sets in order. transformContext: chained; convertToLlm: the last one; beforeToolCall:
 * the first block wins, replacement `args` are passed on and returned; afterToolCall: overrides applied in order (later fields replace earlier);
 * shouldStopAfterTurn: any true; prepareNextTurn: updates merged in order.
 */
export function composeHooks(list: readonly EngineHooks[]): EngineHooks {
  const all = <K extends keyof EngineHooks>(k: K) =>
    list.map((h) => h[k]).filter((f): f is NonNullable<EngineHooks[K]> => !!f);
  const transforms = all("transformContext");
  const converts = all("convertToLlm");
  const befores = all("beforeToolCall");
  const afters = all("afterToolCall");
  const stops = all("shouldStopAfterTurn");
  const prepares = all("prepareNextTurn");
  const out: EngineHooks = {};
  if (transforms.length) {
    out.transformContext = async (messages, signal) => {
      let current = messages;
      for (const t of transforms) current = await t(current, signal);
      return current;
    };
  }
  const lastConvert = converts.at(-1);
  if (lastConvert) out.convertToLlm = lastConvert;
  if (befores.length) {
    out.beforeToolCall = async (ctx, signal) => {
      // Replacement arguments (an edited approval) go to the hooks after, and are the result.
      let replaced: BeforeToolCallResult | undefined;
      let current = ctx;
      for (const b of befores) {
        const r = await b(current, signal);
        if (r?.block) return r;
        if (r?.args !== undefined) {
          replaced = { args: r.args };
          current = { ...current, args: r.args };
        }
      }
      return replaced;
    };
  }
  if (afters.length) {
    out.afterToolCall = async (ctx, signal) => {
      let merged: AfterToolCallResult | undefined;
      let current = ctx;
      for (const a of afters) {
        const r = await a(current, signal);
        if (!r) continue;
        merged = { ...merged, ...r };
        current = {
          ...current,
          result: {
            ...current.result,
            ...(r.content ? { content: r.content } : {}),
            ...("details" in r ? { details: r.details } : {}),
            ...(r.terminate !== undefined ? { terminate: r.terminate } : {}),
          },
          isError: r.isError ?? current.isError,
        };
      }
      return merged;
    };
  }
  if (stops.length) {
    out.shouldStopAfterTurn = async (ctx) => {
      for (const s of stops) if (await s(ctx)) return true;
      return false;
    };
  }
  if (prepares.length) {
    out.prepareNextTurn = async (ctx) => {
      let merged: NextTurnUpdate | undefined;
      for (const p of prepares) {
        const r = await p(ctx);
        if (r) merged = { ...merged, ...r };
      }
      return merged;
    };
  }
  return out;
}
