import { stmt, type DB } from '../../db/open.js';
import type { ChatMessage } from './schema.js';
import { storedMessages } from './sessions.js';

/** Stored responses kept at most; the oldest go first (a response older than that cannot be continued). */
export const RESPONSES_KEPT = 10_000;

export interface StoredResponse {
  id: string;
  sessionId: string;
  agent: string | null;
  model: string;
  /** The conversation through this response, as the next turn continues it. */
  messages: ChatMessage[];
}

interface Row {
  id: string;
  session_id: string;
  agent: string | null;
  model: string;
  messages: string;
}

export async function getResponse(db: DB, id: string): Promise<StoredResponse | null> {
  const r = (await stmt(db, 'SELECT id, session_id, agent, model, messages FROM chat_responses WHERE id = ?').get(id)) as Row | undefined;
  return r ? { id: r.id, sessionId: r.session_id, agent: r.agent, model: r.model, messages: JSON.parse(r.messages) as ChatMessage[] } : null;
}

const INSERT = {
  sqlite: 'INSERT INTO chat_responses (id, session_id, agent, model, messages, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  // PostgreSQL has no last rowid: the bridge's run() reports a returned `id` instead.
  postgres: 'INSERT INTO chat_responses (id, session_id, agent, model, messages, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING seq AS id',
};

/** Writes a response's conversation with each of `secrets` replaced, and drops the oldest beyond the cap. */
export async function saveResponse(db: DB, r: StoredResponse, secrets: readonly string[], now: string): Promise<void> {
  const { lastInsertRowid } = await stmt(db, INSERT).run(r.id, r.sessionId, r.agent, r.model, storedMessages(r.messages, secrets), now);
  await stmt(db, 'DELETE FROM chat_responses WHERE seq <= ?').run(Number(lastInsertRowid) - RESPONSES_KEPT);
}
