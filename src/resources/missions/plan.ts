import { AppError, type ErrorDetail } from '../../kernel/errors.js';

// The pure part of creating a mission: titles, dependencies by title, cycles, creation order.

export interface PlannedTask {
  title: string;
  dependsOn?: string[];
}

export interface Plan {
  /** Indexes into the input, in an order where every task comes after its dependencies. */
  order: number[];
  /** For each input task, the indexes of the tasks it depends on (duplicates dropped). */
  deps: number[][];
}

/**
 * Checks a mission's task list and orders it for creation. Duplicate titles and unknown
 * dependencies → 422 naming each; a dependency cycle → 422 naming the cycle ("a → b → a", read
 * "a depends on b, which depends on a"). `at` is the path of the tasks array in error details.
 */
export function planTasks(tasks: readonly PlannedTask[], at = 'body.tasks'): Plan {
  const index = new Map<string, number>();
  const problems: ErrorDetail[] = [];
  tasks.forEach((t, i) => {
    const first = index.get(t.title);
    if (first === undefined) index.set(t.title, i);
    else problems.push({ path: `${at}.${i}.title`, message: `duplicate title "${t.title}" (also task ${first}); titles must be unique within a mission` });
  });
  const deps = tasks.map((t, i) => {
    const out: number[] = [];
    (t.dependsOn ?? []).forEach((title, k) => {
      const j = index.get(title);
      if (j === undefined) problems.push({ path: `${at}.${i}.dependsOn.${k}`, message: `no task titled "${title}" in this mission` });
      else if (!out.includes(j)) out.push(j);
    });
    return out;
  });
  if (problems.length) {
    throw new AppError('unprocessable', `Mission tasks: ${problems.map((p) => p.message).join('; ')}.`, { details: problems });
  }
  const cycle = findCycle(deps);
  if (cycle) {
    const names = cycle.map((i) => tasks[i]!.title).join(' → ');
    throw new AppError('unprocessable', `Mission tasks form a dependency cycle: ${names}.`, {
      details: [{ path: `${at}.${cycle[0]}.dependsOn`, message: `dependency cycle: ${names}` }],
    });
  }
  return { order: stableTopoOrder(deps), deps };
}

/** The first cycle found, as indexes with the first repeated at the end; null when acyclic. */
export function findCycle(deps: readonly number[][]): number[] | null {
  const state = new Array<0 | 1 | 2>(deps.length).fill(0); // 0 unseen, 1 on the path, 2 done
  const path: number[] = [];
  const visit = (u: number): number[] | null => {
    state[u] = 1;
    path.push(u);
    for (const v of deps[u]!) {
      if (state[v] === 1) return [...path.slice(path.indexOf(v)), v];
      if (state[v] === 0) {
        const c = visit(v);
        if (c) return c;
      }
    }
    path.pop();
    state[u] = 2;
    return null;
  };
  for (let i = 0; i < deps.length; i++) {
    if (state[i] === 0) {
      const c = visit(i);
      if (c) return c;
    }
  }
  return null;
}

/**
 * Dependencies first, otherwise the input order: a list already written in dependency order comes
 * back unchanged, so task ids (time-ordered) follow the order the author wrote.
 */
function stableTopoOrder(deps: readonly number[][]): number[] {
  const placed = new Array<boolean>(deps.length).fill(false);
  const order: number[] = [];
  while (order.length < deps.length) {
    const next = deps.findIndex((d, i) => !placed[i] && d.every((j) => placed[j]));
    placed[next] = true;
    order.push(next);
  }
  return order;
}
