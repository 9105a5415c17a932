import type { ResourceServer } from '../../app.js';
import { SKILL_INDEX, SkillIndex, skillsDirOf, startSkills } from './live-index.js';
import { skillRoutes } from './routes.js';

export const server: ResourceServer = {
  routes: skillRoutes,
  wire: (app) => {
    app.services.provide(SKILL_INDEX, new SkillIndex(skillsDirOf(app)));
  },
  parts: [
    {
      // The skills folder, watched: a SKILL.md written by hand is listed at once.
      name: 'skills watcher',
      start: async ({ app }) => {
        const watcher = await startSkills(app);
        return () => watcher.close();
      },
    },
  ],
};
