import { stmt, type DB } from '../../db/open.js';
import { redactValue } from '../../lib/redact.js';
import type { ChatMessage } from './schema.js';

/** The newest messages a session keeps; older turns are dropped so a session cannot grow without bound. */
export const SESSION_MAX_MESSAGES = 200;

export interface Session {
  id: string;
  agent: string | null;
  model: string;
  messages: ChatMessage[];
}

interface Row {
  id: string;
  agent: string | null;
  model: string;
  messages: string;
}

export async function getSession(db: DB, id: string): Promise<Session | null> {
  const r = (await stmt(db, 'SELECT id, agent, model, messages FROM chat_sessions WHERE id = ?').get(id)) as Row | undefined;
  return r ? { id: r.id, agent: r.agent, model: r.model, messages: JSON.parse(r.messages) as ChatMessage[] } : null;
}

/** A conversation as it is stored: its newest messages, each of `secrets` replaced wherever it appears. */
export const storedMessages = (messages: ChatMessage[], secrets: readonly string[]): string => JSON.stringify(redactValue(messages.slice(-SESSION_MAX_MESSAGES), secrets));

/** Writes the session with each of `secrets` replaced wherever it appears in its messages. */
export async function saveSession(db: DB, s: Session, secrets: readonly string[], now: string): Promise<void> {
  await stmt(
    db,
    `INSERT INTO chat_sessions (id, agent, model, messages, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET model = excluded.model, messages = excluded.messages, updated_at = excluded.updated_at`,
  ).run(s.id, s.agent, s.model, storedMessages(s.messages, secrets), now, now);
}
