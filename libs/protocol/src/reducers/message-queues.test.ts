import { describe, expect, it } from "vitest";
import type { AgentMessage } from "../messages.js";
import {
  applyQueueUpdate,
  clearMessageQueues,
  drainMessageQueue,
  emptyMessageQueues,
  enqueueMessage,
  hasQueuedMessages,
  type MessageQueues,
  sameQueues,
} from "./message-queues.js";

const user = (text: string, timestamp = 1): AgentMessage => ({ role: "user", content: text, timestamp });

const given = (steer: string[], followUp: string[] = [], nextTurn: string[] = []): MessageQueues => ({
  steer: steer.map((t) => user(t)),
  followUp: followUp.map((t) => user(t)),
  nextTurn: nextTurn.map((t) => user(t)),
});

describe("message queues", () => {
  it("enqueues at the back without touching the input", () => {
    const before = given(["a"]);
    const after = enqueueMessage(before, "steer", user("b"));
    expect(after.steer).toEqual([user("a"), user("b")]);
    expect(before.steer).toEqual([user("a")]);
    expect(after.followUp).toBe(before.followUp);
  });

  it("one-at-a-time drains the oldest message per poll", () => {
    let queues = given(["s1", "s2"]);
    const first = drainMessageQueue(queues, "steer", "one-at-a-time");
    expect(first.drained).toEqual([user("s1")]);
    expect(first.queues.steer).toEqual([user("s2")]);
    queues = first.queues;
    const second = drainMessageQueue(queues, "steer", "one-at-a-time");
    expect(second.drained).toEqual([user("s2")]);
    expect(second.queues.steer).toEqual([]);
  });

  it("all drains everything at once, oldest first", () => {
    const result = drainMessageQueue(given([], ["f1", "f2", "f3"]), "followUp", "all");
    expect(result.drained).toEqual([user("f1"), user("f2"), user("f3")]);
    expect(result.queues).toEqual(given([], [], []));
  });

  it("draining an empty queue returns the same object and nothing", () => {
    const queues = given([], ["f1"]);
    const result = drainMessageQueue(queues, "steer", "all");
    expect(result.queues).toBe(queues);
    expect(result.drained).toEqual([]);
  });

  it("clears the chosen queues and reports what was cleared", () => {
    const result = clearMessageQueues(given(["s"], ["f"], ["n"]), ["steer", "followUp"]);
    expect(result.queues).toEqual(given([], [], ["n"]));
    expect(result.cleared).toEqual(given(["s"], ["f"], []));
    expect(clearMessageQueues(given(["s"], ["f"], ["n"])).queues).toEqual(emptyMessageQueues());
  });

  it("hasQueuedMessages looks at steer and followUp by default (pi), nextTurn on request", () => {
    expect(hasQueuedMessages(given([], [], ["n"]))).toBe(false);
    expect(hasQueuedMessages(given([], ["f"]))).toBe(true);
    expect(hasQueuedMessages(given([], [], ["n"]), ["nextTurn"])).toBe(true);
  });

  it("a queue_update replaces all three queues", () => {
    const event = given(["x"], [], ["y"]);
    expect(applyQueueUpdate(given(["a", "b"], ["c"]), event)).toEqual(event);
  });

  it("sameQueues compares messages by reference", () => {
    const queues = given(["a"]);
    expect(sameQueues(queues, { ...queues })).toBe(true);
    expect(sameQueues(queues, given(["a"]))).toBe(false);
  });
});
