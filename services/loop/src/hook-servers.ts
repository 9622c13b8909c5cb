// Named hook servers (change 53): `transform_context`, `convert_to_llm`, `on_payload`,
// `should_stop_after_turn` and `prepare_next_turn` asked over NATS, in the order the worker lists the
// servers, each seeing the previous one's output. A decision the log holds is used, never asked again.
import {
  type BlobRef,
  ContextMessage,
  type EventDraft,
  type HookDecisionRecord,
  LlmMessage,
  ModelRef,
  OBJECT_STORES,
  type RemoteHookName,
  runCursorOf,
  type SessionState,
  subjects,
  ThinkingLevel,
} from "@fleet/protocol";
import type { BlobAccess } from "@fleet/runtime";
import { z } from "zod";
import {
  decideHookAnswer,
  type HookAnswer,
  hookDecisionBody,
  hookInputHash,
  hookOutputObjectName,
  lookupHookDecision,
} from "./decide/hook-decision.js";
import {
  defaultConvertToLlm,
  type EngineHooks,
  type LlmContext,
  type StreamFn,
  type ToolDefinition,
} from "./engine/index.js";
import type { HookAsker } from "./hooks.js";
import { failedCall } from "./provider-port.js";

const ToolSpec = z.object({
  name: z.string().min(1),
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
});

/** What each hook's server may return (`output`): fields that replace the input's fields of the same name. */
const OUTPUTS = {
  transform_context: z.object({ messages: z.array(ContextMessage) }).partial(),
  convert_to_llm: z.object({ messages: z.array(LlmMessage) }).partial(),
  on_payload: z.object({ systemPrompt: z.string(), messages: z.array(LlmMessage), tools: z.array(ToolSpec) }).partial(),
  should_stop_after_turn: z.object({ stop: z.boolean() }).partial(),
  prepare_next_turn: z.object({ model: ModelRef, thinkingLevel: ThinkingLevel, systemPrompt: z.string() }).partial(),
} satisfies Record<RemoteHookName, z.ZodType>;

type Output = Record<string, unknown>;
const Reply = (hook: RemoteHookName) => z.object({ output: OUTPUTS[hook].optional() });

/** What the servers of one session need from its shell. */
export interface HookSessionPort {
  sessionId: string;
  /** The session's fold, as of the last appended event. */
  fold(): SessionState;
  /** Appends a `hook_decision` (stamped with the open run's id) and folds it. */
  record(body: EventDraft): Promise<void>;
  blobs: BlobAccess;
}

/** The named servers of a worker, in order. */
export interface HookServers {
  readonly servers: readonly string[];
  /** Runs `input` through every server of `hook`; returns it with each changed answer's fields replaced. */
  run(hook: RemoteHookName, input: Output, port: HookSessionPort): Promise<Output>;
}

/**
 * Named servers answer `fleet.hook.<hook>.<server>` with `{output?}` (absent: no change). Timeout,
 * "no responders" and outages as for the tool-call hooks (`asker`). A timeout, an error or an invalid
 * reply fails closed: `run` throws `Remote hook <subject> …`, and the run ends on pi's failure path.
 */
export function createHookServers(asker: HookAsker, servers: readonly string[]): HookServers {
  async function one(hook: RemoteHookName, server: string, input: Output, port: HookSessionPort): Promise<Output> {
    // Hashed only when needed: to look a decision up (the run has some), or to log one.
    let hashed: string | undefined;
    const inputHash = () => {
      hashed ??= hookInputHash(hook, input);
      return hashed;
    };
    const state = port.fold();
    const found = state.hookDecisions.size > 0 ? lookupHookDecision(state, hook, server, inputHash()) : undefined;
    if (found?.kind === "recorded") {
      const recorded = await recordedOutput(hook, found.record, port.blobs);
      if (recorded) return { ...input, ...recorded };
    }
    const subject = subjects.hookServer(hook, server);
    const turn = turnOf(state);
    const request = { sessionId: port.sessionId, runId: state.status.runId, turn, hook, server, input };
    const out = await asker(subject, request, Reply(hook));
    const answer: HookAnswer =
      out.kind === "reply" ? { kind: "reply", output: out.value.output as Output | undefined } : out;
    const outcome = decideHookAnswer(input, answer);
    if (outcome.kind === "fail") throw new Error(outcome.reason);
    if (outcome.kind === "unchanged") return input;
    let outputRef: BlobRef | undefined;
    if (!outcome.inline) {
      const name = hookOutputObjectName(port.sessionId, hook, server, inputHash());
      const bucket = OBJECT_STORES.blobs.name;
      const stored = await port.blobs.write(bucket, name, Buffer.from(outcome.json), "application/json");
      outputRef = { bucket, name, size: stored.size, mimeType: "application/json" };
    }
    await port.record(
      hookDecisionBody({
        hook,
        server,
        inputHash: inputHash(),
        turn,
        output: outcome.output,
        ...(outputRef ? { outputRef } : {}),
      }),
    );
    return { ...input, ...outcome.output };
  }
  return {
    servers,
    async run(hook, input, port) {
      let current = input;
      for (const server of servers) current = await one(hook, server, current, port);
      return current;
    },
  };
}

/** The run's turn as the log has it (`turn_start`s of the open run). */
function turnOf(state: SessionState): number {
  const cursor = runCursorOf(state);
  return cursor.kind === "idle" ? 0 : cursor.turns;
}

/** A recorded decision's output; `undefined` when it no longer reads as one (then the server is asked). */
async function recordedOutput(
  hook: RemoteHookName,
  record: HookDecisionRecord,
  blobs: BlobAccess,
): Promise<Output | undefined> {
  let value = record.output;
  if (record.outputRef) {
    const bytes = await blobs.read(record.outputRef);
    if (!bytes) return undefined;
    value = JSON.parse(Buffer.from(bytes).toString("utf8"));
  }
  const parsed = OUTPUTS[hook].safeParse(value);
  return parsed.success ? (parsed.data as Output) : undefined;
}

/**
 * `local` with the servers' hooks after it: `transformContext` and `convertToLlm` (the local
 * conversion first) chain into the servers; `shouldStopAfterTurn` gets the local answer as `stop`;
 * `prepareNextTurn`'s servers see the model, thinking level and system prompt after the local update.
 */
export function withHookServers(local: EngineHooks, hs: HookServers, port: HookSessionPort): EngineHooks {
  const localTransform = local.transformContext;
  const localConvert = local.convertToLlm;
  const localStop = local.shouldStopAfterTurn;
  const localPrepare = local.prepareNextTurn;
  return {
    ...local,
    async transformContext(messages, signal) {
      const own = localTransform ? await localTransform(messages, signal) : messages;
      const out = await hs.run("transform_context", { messages: own }, port);
      return out.messages as ContextMessage[];
    },
    async convertToLlm(messages) {
      const own = localConvert ? await localConvert(messages) : defaultConvertToLlm(messages);
      const out = await hs.run("convert_to_llm", { messages: own }, port);
      return out.messages as LlmMessage[];
    },
    async shouldStopAfterTurn(turn) {
      const stop = localStop ? await localStop(turn) : false;
      const input = { stop, message: turn.message, toolResults: turn.toolResults };
      return (await hs.run("should_stop_after_turn", input, port)).stop === true;
    },
    async prepareNextTurn(turn) {
      const own = localPrepare ? await localPrepare(turn) : undefined;
      const state = port.fold().status;
      const model = own?.model ?? state.model;
      const before = {
        model: model ? { provider: model.provider, modelId: model.modelId } : undefined,
        thinkingLevel: own?.thinkingLevel ?? state.thinkingLevel,
        systemPrompt: (own?.context ?? turn.context).systemPrompt,
      };
      const out = await hs.run(
        "prepare_next_turn",
        { message: turn.message, toolResults: turn.toolResults, ...before },
        port,
      );
      const next = { ...own };
      const outModel = out.model as ModelRef | undefined;
      if (outModel && canonicalModel(outModel) !== canonicalModel(before.model)) next.model = outModel;
      if (out.thinkingLevel !== before.thinkingLevel) next.thinkingLevel = out.thinkingLevel as ThinkingLevel;
      if (out.systemPrompt !== before.systemPrompt) {
        next.context = { ...(own?.context ?? turn.context), systemPrompt: out.systemPrompt as string };
      }
      return Object.keys(next).length > 0 ? next : undefined;
    },
  };
}

const canonicalModel = (m: ModelRef | undefined) => (m ? `${m.provider}/${m.modelId}` : "");

/**
 * `inner` with `on_payload` before it: the servers see the request as it goes to the provider
 * (system prompt, messages, tools; the model and thinking level read-only) and may replace the first
 * three. A failure ends the call as an error message, as a provider error would.
 */
export function withPayloadHook(inner: StreamFn, hs: HookServers, port: HookSessionPort, now: () => number): StreamFn {
  return (context, options, signal) => ({
    async *[Symbol.asyncIterator]() {
      let payload: LlmContext;
      try {
        const input = {
          model: { provider: options.model.provider, modelId: options.model.modelId },
          thinkingLevel: options.thinkingLevel,
          systemPrompt: context.systemPrompt,
          messages: context.messages,
          tools: context.tools.map(({ name, description, parameters }) => ({ name, description, parameters })),
        };
        const out = await hs.run("on_payload", input, port);
        payload =
          out === input
            ? context
            : {
                systemPrompt: out.systemPrompt as string,
                messages: out.messages as LlmMessage[],
                tools: out.tools === input.tools ? context.tools : (out.tools as ToolDefinition[]),
              };
      } catch (err) {
        yield failedCall(options.model, (err as Error).message, now());
        return;
      }
      yield* inner(payload, options, signal);
    },
  });
}
