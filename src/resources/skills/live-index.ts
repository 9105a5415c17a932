import { resolve } from 'node:path';
import { serviceKey, type App } from '../../app.js';
import { errorFields } from '../../kernel/log.js';
import { scanSkills, type IndexedSkill } from './scan.js';
import type { SettledWatch } from '../../lib/watch.js';
import { watchSkillsDir } from './watch.js';

/**
 * The skills on disk, parsed, in memory. The files are the source of truth; this is a cache kept
 * current by a watcher. Writes through the API update it themselves before the watcher fires, so
 * the watcher's rescan finds nothing new and no event is emitted twice.
 */
export class SkillIndex {
  private skills: Map<string, IndexedSkill>;

  constructor(public dir: string) {
    this.skills = scanSkills(dir);
  }

  get(name: string): IndexedSkill | undefined {
    return this.skills.get(name);
  }

  list(): IndexedSkill[] {
    return [...this.skills.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  set(skill: IndexedSkill): void {
    this.skills.set(skill.name, skill);
  }

  delete(name: string): void {
    this.skills.delete(name);
  }

  /** Re-reads the folder (optionally a new one) and says which skills appeared and vanished; `apply()` makes it the index. */
  rescan(dir = this.dir): { added: string[]; removed: string[]; apply(): void } {
    const next = scanSkills(dir);
    const added = [...next.keys()].filter((n) => !this.skills.has(n));
    const removed = [...this.skills.keys()].filter((n) => !next.has(n)).sort();
    return {
      added,
      removed,
      apply: () => {
        this.dir = dir;
        this.skills = next;
      },
    };
  }
}

/** The daemon's skill index (provided by the skills' wire(), kept current by startSkills). */
export const SKILL_INDEX = serviceKey<SkillIndex>('skills.index');

export const skillsDirOf = (app: App): string => resolve(app.root, app.config().skillsDir);

export const skillIndex = (app: App): SkillIndex => app.services.get(SKILL_INDEX);

/**
 * Builds the index and keeps it current: changes made on disk by people, editors or git show up
 * within a second and emit skill:created / skill:removed. Never throws; a watcher failure is logged
 * and the index keeps what it knew. Follows `skillsDir` when a config reload changes it.
 */
export async function startSkills(app: App): Promise<{ close(): Promise<void> }> {
  const index = skillIndex(app);
  let closed = false;

  // One rescan at a time, and the index shows what it found only once its events are committed:
  // a reader who sees a skill can read its skill:created, and a failed write leaves the change
  // to the next rescan, which finds it again.
  let syncing: Promise<void> = Promise.resolve();
  const sync = (dir?: string): Promise<void> =>
    (syncing = syncing.then(async () => {
      if (closed) return;
      try {
        const { added, removed, apply } = index.rescan(dir);
        if (added.length || removed.length) {
          await app.events.write(async () => {
            for (const name of added) app.events.emit('skill:created', { name });
            for (const name of removed) app.events.emit('skill:removed', { name });
          });
        }
        apply();
        if (added.length || removed.length) app.log.info('skills changed on disk', { added, removed });
      } catch (err) {
        // A new folder is the one to look at from now on, whatever this rescan could not write.
        if (dir !== undefined) index.dir = dir;
        app.log.error('re-indexing skills failed', errorFields(err));
      }
    }));

  const arm = (dir: string): SettledWatch =>
    watchSkillsDir(
      dir,
      () => void sync(),
      (err) => app.log.warn('skills watcher error', errorFields(err)),
    );

  let watcher = arm(index.dir);
  let retarget: Promise<void> = Promise.resolve();
  const unsubscribe = app.events.subscribe((e) => {
    if (e.name !== 'config:reloaded') return;
    const next = skillsDirOf(app);
    if (next === index.dir) return;
    retarget = retarget.then(async () => {
      if (closed) return;
      await watcher.close().catch(() => undefined);
      watcher = arm(next);
      await watcher.ready;
      await sync(next);
      app.log.info('skills folder changed', { dir: next });
    });
  });

  await watcher.ready;
  // Whatever changed between the first scan and the watcher being ready.
  await sync();
  app.log.info('skills indexed', { dir: index.dir, count: index.list().length });

  return {
    async close() {
      closed = true;
      unsubscribe();
      await retarget.catch(() => undefined);
      await watcher.close().catch(() => undefined);
    },
  };
}
