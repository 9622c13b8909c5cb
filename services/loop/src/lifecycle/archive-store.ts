// Where archived sessions are kept: object store `fleet_archive` (default) or a directory
// (`FLEET_ARCHIVE_DIR`). Each archive is two files (`archiveNames`): the events, then the pi JSONL.
import { mkdir, readFile, rename, rm, rmdir, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { type ArchiveRef, archiveNames, OBJECT_STORES } from "@fleet/protocol";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { ObjectStore } from "@nats-io/obj";
import { removeObject } from "./remove-object.js";

export interface ArchiveFiles {
  /** `encodeArchive`'s text: the archive itself. */
  events: string;
  /** The session tree as pi v3 JSONL. */
  pi: string;
}

/**
 * Contract: `write` replaces a session's archive whole; its events file is written last, so a
 * readable events file is a complete archive. `read` answers the events file's text, or null when
 * there is none. `remove` is idempotent. Failures reject (the lifecycle step is retried).
 */
export interface ArchiveStore {
  ref(sessionId: string): ArchiveRef;
  write(sessionId: string, files: ArchiveFiles): Promise<void>;
  read(sessionId: string): Promise<string | null>;
  remove(sessionId: string): Promise<void>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** A read of an archive object being removed meanwhile waits for chunks that are gone: give up then. */
const READ_TIMEOUT_MS = 300_000;

/** Archives as objects of bucket `fleet_archive`; a write replaces an object atomically (its meta last). */
export function createObjectArchiveStore(store: ObjectStore, jsm: JetStreamManager): ArchiveStore {
  const bucket = OBJECT_STORES.archive.name;
  return {
    ref: (sessionId) => ({ store: "object_store", location: `${bucket}/${archiveNames(sessionId).events}` }),
    async write(sessionId, files) {
      const names = archiveNames(sessionId);
      await store.putBlob({ name: names.pi, description: "application/jsonl" }, encoder.encode(files.pi));
      await store.putBlob({ name: names.events, description: "application/jsonl" }, encoder.encode(files.events));
    },
    async read(sessionId) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`reading the archive of ${sessionId} timed out`)), READ_TIMEOUT_MS);
      });
      try {
        const bytes = await Promise.race([store.getBlob(archiveNames(sessionId).events), timeout]);
        return bytes === null ? null : decoder.decode(bytes);
      } finally {
        clearTimeout(timer);
      }
    },
    async remove(sessionId) {
      const names = archiveNames(sessionId);
      await removeObject(store, jsm, bucket, names.events);
      await removeObject(store, jsm, bucket, names.pi);
    },
  };
}

/**
 * Archives as files under `dir` (`<dir>/sessions/<sessionId>/events.jsonl`, `pi.jsonl`). Each file
 * is written to a temporary name and renamed, so a crash never leaves a cut file under its name.
 */
export function createDirectoryArchiveStore(dir: string): ArchiveStore {
  const root = resolve(dir);
  const pathOf = (name: string) => join(root, name);
  const writeAtomically = async (path: string, text: string) => {
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.tmp-${process.pid}`;
    await writeFile(tmp, text, { flush: true });
    await rename(tmp, path);
  };
  return {
    ref: (sessionId) => ({ store: "directory", location: pathOf(archiveNames(sessionId).events) }),
    async write(sessionId, files) {
      const names = archiveNames(sessionId);
      await writeAtomically(pathOf(names.pi), files.pi);
      await writeAtomically(pathOf(names.events), files.events);
    },
    async read(sessionId) {
      try {
        return await readFile(pathOf(archiveNames(sessionId).events), "utf8");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
        throw err;
      }
    },
    async remove(sessionId) {
      const names = archiveNames(sessionId);
      await rm(pathOf(names.events), { force: true });
      await rm(pathOf(names.pi), { force: true });
      await rmdir(dirname(pathOf(names.events))).catch(() => undefined);
    },
  };
}
