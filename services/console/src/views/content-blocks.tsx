// Message content: texts, and images shown; content by reference (PROTOCOL "Large inputs") is read
// from the gateway's blob route: a text's whole content on request, an image at once.
import { bytesToBase64 } from "@fleet/protocol";
import { useEffect, useState } from "preact/hooks";
import { apiBytes } from "../api.js";

interface BlobRefView {
  name: string;
  size: number;
  mimeType?: string;
}
type Block = { type: string; text?: string; data?: string; mimeType?: string; blob?: BlobRefView };

/** The session an object belongs to, from its name (`input/<session>/…`, `tool-output/<session>/…`). */
const sessionOfObject = (name: string) => name.split("/")[1] ?? "";

const blobPath = (ref: BlobRefView) =>
  `/v1/sessions/${encodeURIComponent(sessionOfObject(ref.name))}/blob?name=${encodeURIComponent(ref.name)}`;

export function Content({ content, pre = false }: { content: string | readonly Block[]; pre?: boolean }) {
  if (typeof content === "string") return pre ? <pre>{content}</pre> : <div class="text">{content}</div>;
  return (
    <>
      {content.map((block, i) => {
        if (block.type === "text") return <TextBlock key={i} block={block} pre={pre} />;
        if (block.type === "image") return <ImageBlock key={i} block={block} />;
        return (
          <div key={i} class="muted">
            [{block.type}]
          </div>
        );
      })}
    </>
  );
}

function TextBlock({ block, pre }: { block: Block; pre: boolean }) {
  const [full, setFull] = useState<string | undefined>();
  const [error, setError] = useState("");
  const text = full ?? block.text ?? "";
  const body = pre ? <pre>{text}</pre> : <div class="text">{text}</div>;
  if (!block.blob || full !== undefined) return body;
  const ref = block.blob;
  return (
    <div class="by-reference" data-testid="text-by-reference">
      {body}
      <button
        type="button"
        class="link"
        data-testid="load-text"
        onClick={async () => {
          const r = await apiBytes(blobPath(ref));
          if (r.ok) setFull(new TextDecoder().decode(r.body));
          else setError(r.message);
        }}
      >
        show all {ref.size.toLocaleString()} bytes
      </button>
      {error && <span class="error-text"> {error}</span>}
    </div>
  );
}

function ImageBlock({ block }: { block: Block }) {
  const ref = block.blob;
  const inline = block.data ? `data:${block.mimeType};base64,${block.data}` : undefined;
  const [src, setSrc] = useState(inline);
  const [error, setError] = useState("");
  useEffect(() => {
    if (!ref || inline) return;
    let stopped = false;
    void apiBytes(blobPath(ref)).then((r) => {
      if (stopped) return;
      if (r.ok) setSrc(`data:${block.mimeType};base64,${bytesToBase64(r.body)}`);
      else setError(r.message);
    });
    return () => {
      stopped = true;
    };
  }, [ref?.name]);
  if (error)
    return (
      <div class="error-text">
        image {ref?.name}: {error}
      </div>
    );
  if (!src) return <div class="muted">[image, {ref?.size.toLocaleString()} bytes, loading]</div>;
  return <img class="content-image" data-testid="content-image" src={src} alt={block.mimeType} />;
}
