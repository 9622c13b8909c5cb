import { z } from "zod";

/**
 * Pointer to a payload stored in an object store (claim check): tool output in `fleet_blobs`, a
 * command's input part in `fleet_inputs` (until its command is accepted), then in `fleet_blobs`.
 * `digest` is the object store's (`SHA-256=<base64url>`).
 */
export const BlobRef = z.object({
  bucket: z.string(),
  name: z.string(),
  size: z.number().int().nonnegative(),
  digest: z.string().optional(),
  mimeType: z.string().optional(),
});
export type BlobRef = z.infer<typeof BlobRef>;
