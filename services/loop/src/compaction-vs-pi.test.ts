// Differential test: Fleet's compaction (cut point, summary requests, summary, overflow detection)
// against @mariozechner/pi-coding-agent 0.73.1's own functions on the same transcripts.
import {
  type AssistantMessage,
  type FleetEvent,
  foldSessionTreeEvents,
  getBranch,
  isContextOverflow,
  prepareCompaction,
  type SessionEntry,
  toPiEntry,
} from "@fleet/protocol";
import {
  assistantMessage,
  createLogBuilder,
  type EventInput,
  type LogBuilder,
  textOf,
  toolCall,
  toolResultMessage,
  userMessage,
} from "@fleet/protocol/testing";
import {
  type Context,
  fauxAssistantMessage,
  isContextOverflow as piIsContextOverflow,
  registerFauxProvider,
  type StreamOptions,
} from "@mariozechner/pi-ai";
import { compact as piCompact } from "@mariozechner/pi-coding-agent";
import { afterAll, describe, expect, it } from "vitest";
import { compactionSummaryRequests, type SummaryRequest } from "./compaction-prompts.js";
import { createScriptedProvider } from "./engine/scripted-provider.js";
import { summarizeForCompaction } from "./summarizer.js";

/** pi's `prepareCompaction` is not in the package's exports: loaded from its shipped file. */
const piCompactionModule = new URL(
  "../../../node_modules/@mariozechner/pi-coding-agent/dist/core/compaction/compaction.js",
  import.meta.url,
).href;
type PiPreparation = Parameters<typeof piCompact>[0] & {
  firstKeptEntryId: string;
  messagesToSummarize: { role: string }[];
  turnPrefixMessages: { role: string }[];
  isSplitTurn: boolean;
  tokensBefore: number;
  previousSummary: string | undefined;
};
const { prepareCompaction: piPrepareCompaction } = (await import(piCompactionModule)) as {
  prepareCompaction: (entries: unknown[], settings: object) => PiPreparation | undefined;
};

const faux = registerFauxProvider({ api: "faux-compaction", provider: "faux-compaction", models: [{ id: "faux-1" }] });
afterAll(() => faux.unregister());

// ---- transcripts ----------------------------------------------------------------------------------

const words = (seed: string, n: number) => Array.from({ length: n }, (_, i) => `${seed}${i}`).join(" ");

function exchange(log: LogBuilder, question: string, answer: string, tokens?: number): void {
  log.add({ type: "message_end", message: userMessage(question) });
  log.add({
    type: "message_end",
    message: assistantMessage([textOf(answer)], tokens !== undefined ? { tokens } : {}),
  });
}

function toolTurn(log: LogBuilder, id: string, name: string, args: Record<string, unknown>, output: string): void {
  log.add({ type: "message_end", message: assistantMessage([textOf(`Using ${name}.`), toolCall(id, name, args)]) });
  log.add({ type: "message_end", message: toolResultMessage(id, name, output) });
}

interface Transcript {
  name: string;
  path: SessionEntry[];
  keepRecentTokens: number;
  reserveTokens: number;
  instructions?: string;
}

function pathOf(events: FleetEvent[]): SessionEntry[] {
  const tree = foldSessionTreeEvents(events);
  const branch = getBranch(tree, tree.leafId);
  if (!branch.ok) throw new Error(branch.error);
  return branch.entries;
}

function plainChat(): Transcript {
  const log = createLogBuilder(40);
  for (let i = 0; i < 6; i++) exchange(log, words(`q${i}-`, 60), words(`a${i}-`, 80), 1_000 * (i + 1));
  return { name: "plain chat", path: pathOf(log.events), keepRecentTokens: 400, reserveTokens: 16_384 };
}

function toolResults(): Transcript {
  const log = createLogBuilder(41);
  log.add({ type: "message_end", message: userMessage("Fix the bug in src/app.ts and update the notes.") });
  toolTurn(log, "t1", "read", { path: "src/app.ts" }, "x".repeat(5_000));
  toolTurn(log, "t2", "read", { path: "README.md" }, words("readme", 200));
  toolTurn(log, "t3", "edit", { path: "src/app.ts", edits: [{ oldText: "a", newText: "b" }] }, "Edited.");
  toolTurn(log, "t4", "write", { path: "notes.md", content: words("note", 50) }, "Wrote 1 file.");
  log.add({ type: "message_end", message: assistantMessage([textOf(words("done", 40))], { tokens: 9_000 }) });
  exchange(log, words("next", 100), words("ok", 120), 10_000);
  return { name: "tool results", path: pathOf(log.events), keepRecentTokens: 300, reserveTokens: 8_192 };
}

function previousCompaction(): Transcript {
  const log = createLogBuilder(42);
  for (let i = 0; i < 3; i++) exchange(log, words(`old${i}-`, 50), words(`reply${i}-`, 50), 500 * (i + 1));
  const kept = log.nextId();
  exchange(log, words("kept", 60), words("keptreply", 60), 2_000);
  log.add({
    type: "compaction",
    summary: "## Goal\nShip v1.\n\n<read-files>\nold.txt\n</read-files>",
    firstKeptEntryId: kept,
    tokensBefore: 2_000,
    details: { readFiles: ["old.txt", "src/app.ts"], modifiedFiles: ["notes.md"] },
  });
  for (let i = 0; i < 4; i++) exchange(log, words(`new${i}-`, 60), words(`newreply${i}-`, 70), 3_000 + i);
  toolTurn(log, "t9", "read", { path: "src/app.ts" }, words("source", 30));
  log.add({ type: "message_end", message: assistantMessage([textOf(words("summary", 30))], { tokens: 4_000 }) });
  return {
    name: "previous compaction (iterative)",
    path: pathOf(log.events),
    keepRecentTokens: 500,
    reserveTokens: 16_384,
  };
}

function branched(): Transcript {
  const log = createLogBuilder(43);
  exchange(log, words("root", 80), words("rootreply", 80), 1_000);
  const fork = log.leaf();
  exchange(log, words("abandoned", 80), words("abandonedreply", 80), 2_000);
  log.add({ type: "leaf", targetId: fork as string });
  log.add(
    { type: "branch_summary", fromId: fork as string, summary: "The user explored a different approach." },
    { parentId: fork },
  );
  log.add({ type: "model_change", provider: "anthropic", modelId: "claude-opus-4-6" });
  exchange(log, words("second", 80), words("secondreply", 80), 3_000);
  log.add({ type: "label", targetId: fork as string, label: "fork point" });
  log.add({ type: "thinking_level_change", thinkingLevel: "high" });
  const thoughtful = assistantMessage(
    [{ type: "thinking", thinking: words("think", 40) }, textOf(words("answer", 60))],
    {
      tokens: 4_000,
    },
  );
  log.add({ type: "message_end", message: userMessage(words("third", 80)) });
  log.add({ type: "message_end", message: thoughtful });
  return {
    name: "a branch (branch summary, settings and labels on the path)",
    path: pathOf(log.events),
    keepRecentTokens: 150,
    reserveTokens: 16_384,
  };
}

function splitTurn(): Transcript {
  const log = createLogBuilder(44);
  exchange(log, words("before", 40), words("beforereply", 40), 800);
  log.add({ type: "message_end", message: userMessage("Refactor every module.") });
  for (let i = 0; i < 8; i++)
    toolTurn(log, `s${i}`, i % 2 ? "edit" : "read", { path: `src/m${i}.ts` }, words(`out${i}-`, 60));
  log.add({ type: "message_end", message: assistantMessage([textOf("All modules refactored.")], { tokens: 7_000 }) });
  return {
    name: "a split turn",
    path: pathOf(log.events),
    keepRecentTokens: 300,
    reserveTokens: 16_384,
    instructions: "Keep module names.",
  };
}

function customMessages(): Transcript {
  const log = createLogBuilder(45);
  exchange(log, words("intro", 50), words("introreply", 50), 900);
  const custom: EventInput = {
    type: "message_end",
    message: { role: "custom", customType: "note", content: words("note", 40), display: true, timestamp: 5 },
  };
  log.add(custom);
  log.add({ type: "custom", customType: "ext-state", data: { n: 1 } });
  exchange(log, words("after", 60), words("afterreply", 70), 1_800);
  log.add({ type: "session_info", name: "demo" });
  exchange(log, words("last", 60), words("lastreply", 70), 2_600);
  return {
    name: "custom messages and custom entries",
    path: pathOf(log.events),
    keepRecentTokens: 200,
    reserveTokens: 16_384,
    instructions: "Focus on notes.",
  };
}

const TRANSCRIPTS = [plainChat(), toolResults(), previousCompaction(), branched(), splitTurn(), customMessages()];

// ---- both sides -----------------------------------------------------------------------------------

const textOfRequest = (context: Pick<Context, "messages">): string => {
  const first = context.messages[0];
  const block = first && Array.isArray(first.content) ? first.content[0] : undefined;
  return block && block.type === "text" ? block.text : "";
};
const isPrefixRequest = (text: string) => text.includes("This is the PREFIX of a turn");

/** pi's `compact()` on pi's preparation, through the faux provider: the requests it made and its result. */
async function piSide(t: Transcript) {
  const settings = { enabled: true, reserveTokens: t.reserveTokens, keepRecentTokens: t.keepRecentTokens };
  const preparation = piPrepareCompaction(t.path.map(toPiEntry), settings);
  if (!preparation) throw new Error(`pi found nothing to compact in ${t.name}`);
  const requests: SummaryRequest[] = [];
  const answer = (context: Context, options: StreamOptions | undefined) => {
    const text = textOfRequest(context);
    requests.push({ systemPrompt: context.systemPrompt ?? "", text, maxTokens: options?.maxTokens ?? -1 });
    return fauxAssistantMessage(isPrefixRequest(text) ? "PREFIX SUMMARY" : "HISTORY SUMMARY");
  };
  faux.setResponses([answer, answer]);
  const result = await piCompact(preparation, faux.getModel(), "key", undefined, t.instructions, undefined, "off");
  return { preparation, requests, result };
}

async function fleetSide(t: Transcript) {
  const plan = prepareCompaction(t.path, t.keepRecentTokens);
  if (!plan.ok) throw new Error(`Fleet found nothing to compact in ${t.name}: ${plan.error}`);
  const { history, turnPrefix } = compactionSummaryRequests(plan, t.reserveTokens, t.instructions);
  const provider = createScriptedProvider({
    now: () => 0,
    steps: [0, 1].map(() => (request) => ({
      text: isPrefixRequest(textOfRequest(request.context as unknown as Context))
        ? "PREFIX SUMMARY"
        : "HISTORY SUMMARY",
    })),
  });
  const summary = await summarizeForCompaction({
    streamFn: provider.streamFn,
    model: { provider: "scripted", modelId: "scripted-1" },
    thinkingLevel: "off",
    plan,
    instructions: t.instructions,
    reserveTokens: t.reserveTokens,
    now: () => 0,
  });
  const sent = provider.requests.map((r) => ({
    systemPrompt: r.context.systemPrompt,
    text: textOfRequest(r.context as unknown as Context),
    maxTokens: r.options.maxTokens,
  }));
  return { plan, requests: [history, turnPrefix].filter((r) => r !== undefined), sent, summary };
}

describe("compaction against pi-coding-agent 0.73.1", () => {
  for (const t of TRANSCRIPTS) {
    it(`${t.name}: same cut point, same summary requests, same summary`, async () => {
      const pi = await piSide(t);
      const fleet = await fleetSide(t);
      const { preparation } = pi;
      // the cut point and what is summarised
      expect(fleet.plan.firstKeptEntryId).toBe(preparation.firstKeptEntryId);
      expect(fleet.plan.isSplitTurn).toBe(preparation.isSplitTurn);
      expect(fleet.plan.tokensBefore).toBe(preparation.tokensBefore);
      expect(fleet.plan.previousSummary).toBe(preparation.previousSummary);
      expect(fleet.plan.messages.map((m) => m.role)).toEqual(preparation.messagesToSummarize.map((m) => m.role));
      expect(fleet.plan.turnPrefixMessages.map((m) => m.role)).toEqual(
        preparation.turnPrefixMessages.map((m) => m.role),
      );
      // the requests: Fleet's pure requests, and what its summarizer sent, equal pi's
      const byKind = (rs: SummaryRequest[]) => [...rs].sort((a, b) => a.maxTokens - b.maxTokens);
      expect(byKind(fleet.requests)).toEqual(byKind(pi.requests));
      expect(byKind(fleet.sent as SummaryRequest[])).toEqual(byKind(pi.requests));
      // the stored result
      expect(fleet.summary).toEqual({ ok: true, summary: pi.result.summary, usage: expect.any(Object) });
      expect({ readFiles: fleet.plan.readFiles, modifiedFiles: fleet.plan.modifiedFiles }).toEqual(pi.result.details);
    });
  }

  it("the transcripts cover tool results, an iterative summary, a branch and a split turn", async () => {
    const plans = TRANSCRIPTS.map((t) => ({ t, plan: prepareCompaction(t.path, t.keepRecentTokens) }));
    const ok = plans.flatMap(({ plan }) => (plan.ok ? [plan] : []));
    expect(ok).toHaveLength(TRANSCRIPTS.length);
    expect(ok.some((p) => p.messages.some((m) => m.role === "toolResult"))).toBe(true);
    expect(ok.some((p) => p.previousSummary !== undefined)).toBe(true);
    expect(ok.some((p) => p.isSplitTurn && p.turnPrefixMessages.length > 0)).toBe(true);
    expect(ok.some((p) => p.messages.some((m) => m.role === "branchSummary"))).toBe(true);
    expect(ok.some((p) => p.messages.some((m) => m.role === "custom"))).toBe(true);
  });
});

describe("compaction / Fleet's one deliberate difference from pi's cut point", () => {
  it("the budget crossed inside trailing tool results: pi keeps everything (#7201), Fleet cuts at their assistant", () => {
    const log = createLogBuilder(46);
    exchange(log, words("early", 80), words("earlyreply", 80), 1_000);
    log.add({ type: "message_end", message: userMessage("Read the big file.") });
    toolTurn(log, "b1", "read", { path: "big.txt" }, "z".repeat(8_000));
    const path = pathOf(log.events);
    const pi = piPrepareCompaction(path.map(toPiEntry), {
      enabled: true,
      reserveTokens: 16_384,
      keepRecentTokens: 500,
    });
    const fleet = prepareCompaction(path, 500);
    expect(pi?.firstKeptEntryId).toBe(path[0]?.id);
    expect(pi?.messagesToSummarize).toEqual([]);
    const assistantEntry = path.at(-2);
    expect(fleet.ok && fleet.firstKeptEntryId).toBe(assistantEntry?.id);
    expect(fleet.ok && fleet.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });
});

describe("overflow detection against pi-ai 0.73.1's isContextOverflow", () => {
  const error = (errorMessage: string): AssistantMessage => assistantMessage([], { stopReason: "error", errorMessage });
  const cases: [string, AssistantMessage, number | undefined][] = [
    [
      "Anthropic prompt too long",
      error("400 invalid_request_error: prompt is too long: 213462 tokens > 200000 maximum"),
      undefined,
    ],
    [
      "Anthropic 413",
      error('413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}'),
      undefined,
    ],
    ["OpenAI", error("Your input exceeds the context window of this model"), undefined],
    ["Cerebras no body", error("400 status code (no body)"), undefined],
    [
      "throttling that mentions tokens",
      error("ThrottlingException: Too many tokens, please wait. rate limit"),
      undefined,
    ],
    ["overloaded", error("529 overloaded_error: Overloaded"), undefined],
    ["silent overflow", assistantMessage([textOf("x")], { tokens: 250_000 }), 200_000],
    ["within the window", assistantMessage([textOf("x")], { tokens: 150_000 }), 200_000],
    ["length stop, no output, window full", assistantMessage([], { stopReason: "length", tokens: 199_000 }), 200_000],
  ];
  for (const [name, message, window] of cases) {
    it(name, () => {
      expect(isContextOverflow(message, window)).toBe(piIsContextOverflow(message as never, window));
    });
  }
  it("the cases include overflows and non-overflows", () => {
    const answers = cases.map(([, m, w]) => isContextOverflow(m, w));
    expect(answers).toContain(true);
    expect(answers).toContain(false);
  });
});
