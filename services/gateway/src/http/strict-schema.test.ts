import { describe, expect, it } from "vitest";
import { z } from "zod";
import { strictSchema } from "./strict-schema.js";

const Model = z.object({ provider: z.string(), modelId: z.string() });
const Body = z.object({
  name: z.string().optional(),
  config: z.object({ model: Model.optional(), tags: z.array(z.object({ k: z.string() })).default([]) }).optional(),
  kind: z.discriminatedUnion("type", [
    z.object({ type: z.literal("a"), a: z.number() }),
    z.object({ type: z.literal("b"), inner: z.union([z.object({ x: z.string() }), z.null()]) }),
  ]),
  meta: z.record(z.string(), z.object({ v: z.number() })).optional(),
  loose: z.looseObject({ id: z.string() }).optional(),
  data: z.unknown().optional(),
});

describe("gateway / strict body schemas", () => {
  const strict = strictSchema(Body);
  const ok = { kind: { type: "a", a: 1 } };

  it("refuses an unknown key at any depth, naming it", () => {
    const cases: Array<[unknown, string]> = [
      [{ ...ok, bogus: 1 }, ""],
      [{ ...ok, config: { systemPromt: "x" } }, "config"],
      [{ ...ok, config: { model: { provider: "p", modelId: "m", extra: true } } }, "config.model"],
      [{ ...ok, config: { tags: [{ k: "1" }, { k: "2", v: 3 }] } }, "config.tags.1"],
      [{ kind: { type: "a", a: 1, b: 2 } }, "kind"],
      [{ kind: { type: "b", inner: { x: "1", y: "2" } } }, "kind.inner"],
      [{ ...ok, meta: { any: { v: 1, w: 2 } } }, "meta.any"],
    ];
    for (const [value, path] of cases) {
      const result = strict.safeParse(value);
      expect(result.success, JSON.stringify(value)).toBe(false);
      const paths = result.error?.issues.map((i) => i.path.join(".")) ?? [];
      expect(paths.join("|")).toContain(path);
    }
    // The original schema stays as it was: it strips.
    expect(Body.parse({ ...ok, bogus: 1 })).toEqual(ok);
  });

  it("keeps what is valid, defaults, records' keys, loose objects and unknown data as they are", () => {
    const value = {
      name: "n",
      config: { model: { provider: "p", modelId: "m" } },
      kind: { type: "b", inner: null },
      meta: { anything: { v: 1 } },
      loose: { id: "1", extra: { deep: true } },
      data: { whatever: [1, { x: 2 }] },
    };
    expect(strict.parse(value)).toEqual({ ...value, config: { ...value.config, tags: [] } });
  });

  it("keeps refinements, and handles recursive (lazy) schemas", () => {
    const Refined = strictSchema(z.object({ a: z.number(), b: z.number() }).refine((v) => v.a < v.b, "a < b"));
    expect(Refined.safeParse({ a: 2, b: 1 }).success).toBe(false);
    expect(Refined.safeParse({ a: 1, b: 2, c: 3 }).success).toBe(false);
    expect(Refined.parse({ a: 1, b: 2 })).toEqual({ a: 1, b: 2 });
    type Tree = { name: string; children: Tree[] };
    const Tree: z.ZodType<Tree> = z.lazy(() => z.object({ name: z.string(), children: z.array(Tree) }));
    const StrictTree = strictSchema(Tree);
    expect(StrictTree.parse({ name: "r", children: [{ name: "c", children: [] }] })).toBeDefined();
    expect(StrictTree.safeParse({ name: "r", children: [{ name: "c", children: [], x: 1 }] }).success).toBe(false);
  });
});
