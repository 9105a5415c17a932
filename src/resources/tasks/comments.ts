import type { App } from '../../app.js';
import { uuidv7 } from '../../lib/ids.js';
import { nowIso } from '../../lib/time.js';
import { toPage, type Page } from '../common.js';
import type { Comment, CommentInput, Task } from './schema.js';
import { requireTask } from './service.js';
import * as store from './store.js';

// A task's activity notes: what agents and people say about the work, kept with the task.

export async function addComment(app: App, taskId: string, input: CommentInput, defaultAuthor: string): Promise<Comment> {
  return await app.events.write(async () => {
    await requireTask(app, taskId);
    const comment: Comment = { id: uuidv7(), taskId, author: input.author ?? defaultAuthor, body: input.body, createdAt: nowIso(app.clock) };
    await store.insertComment(app.db, comment);
    app.events.emit('task:commented', { taskId, commentId: comment.id, author: comment.author });
    return comment;
  });
}

/** Newest first, paged by id like every other list; 404 for an unknown task. */
export async function listComments(app: App, taskId: string, q: { limit: number; cursor?: string }): Promise<Page<Comment>> {
  await requireTask(app, taskId);
  return toPage(await store.listComments(app.db, taskId, q.cursor, q.limit + 1), q.limit, (c) => c.id);
}

/** A task with its latest `n` notes, newest first; 404 for an unknown task. */
export async function taskWithComments(app: App, taskId: string, n: number): Promise<{ task: Task; comments: Comment[] }> {
  return { task: await requireTask(app, taskId), comments: await store.listComments(app.db, taskId, undefined, n) };
}
