import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GenerationSession, GenerationSessions } from '../../command-side/ai/generationSessions.ts';

const EXTENSIONS: Readonly<Record<string, string>> = { python: 'py', javascript: 'js' };

/**
 * GenerationSessions of one process: sessions in memory, the most recently used `capacity` kept,
 * each with its temporary module file `<root>/<sha256 of the session's key>/module.<py|js>` (written 0600 in a
 * private 0700 directory of the OS temp dir, made at start; a session's directory goes when the
 * session is dropped, the whole root at close). Another process of the same service does not know
 * the session: the call then starts it again (the client's messages and generated_content still work).
 */
export class TempGenerationSessions implements GenerationSessions {
  private readonly sessions = new Map<string, GenerationSession & { path: string | null }>();
  readonly root: string;

  constructor(private readonly capacity = 1000) {
    this.root = mkdtempSync(join(tmpdir(), 'orchestrator-ai-'));
  }

  get(key: string): GenerationSession | undefined {
    const session = this.sessions.get(key);
    if (!session) return undefined;
    this.sessions.delete(key);
    this.sessions.set(key, session);
    return { messages: session.messages, generatedContent: session.generatedContent };
  }

  async put(key: string, session: GenerationSession, module: { language: string; code: string } | null): Promise<string | null> {
    let path = this.sessions.get(key)?.path ?? null;
    if (module !== null) {
      const dir = this.dirOf(key);
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const file = join(dir, `module.${EXTENSIONS[module.language] ?? 'txt'}`);
      if (path !== null && path !== file) await rm(path, { force: true });
      await writeFile(file, module.code, { mode: 0o600 });
      path = file;
    }
    this.sessions.delete(key);
    this.sessions.set(key, { ...session, path });
    while (this.sessions.size > this.capacity) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
      await rm(this.dirOf(oldest), { recursive: true, force: true });
    }
    return module === null ? null : path;
  }

  /** Keys name users and chats: the directory is named by their hash. */
  private dirOf(key: string): string {
    return join(this.root, createHash('sha256').update(key).digest('hex').slice(0, 32));
  }

  close(): void {
    this.sessions.clear();
    rmSync(this.root, { recursive: true, force: true });
  }
}
