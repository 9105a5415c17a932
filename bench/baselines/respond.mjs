// What every raw baseline does the same way, and the way svc does it: a JSON answer with its
// length, the bearer key compared in constant time, and the task JSON svc answers with.
import { timingSafeEqual } from 'node:crypto';

export function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** Whether a request carries `Bearer <key>`. */
export function bearer(key) {
  const expected = Buffer.from(`Bearer ${key}`);
  return (req) => {
    const auth = Buffer.from(req.headers.authorization ?? '');
    return auth.length === expected.length && timingSafeEqual(auth, expected);
  };
}

/** A tasks row (its dependencies as a JSON array in `deps`) as svc's task JSON. */
export const toTask = (r) => ({
  id: r.id,
  title: r.title,
  description: r.description,
  assignTo: r.assign_to,
  missionId: r.mission_id,
  dependsOn: JSON.parse(r.deps),
  status: r.status,
  priority: r.priority,
  labels: JSON.parse(r.labels),
  retries: r.retries,
  maxRetries: r.max_retries,
  sideEffects: r.side_effects === 1,
  result: r.result === null ? null : JSON.parse(r.result),
  revisionCount: r.revision_count,
  // Absent from a row that does not select it (the SQLite baseline's): JSON leaves it out.
  leaseExpiresAt: r.lease_expires_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** Reads a POST /api/v1/tasks body and hands a valid one to `use`: 400 for JSON that does not parse, 422 without a title. */
export function taskInput(req, res, use) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let b;
    try {
      b = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return send(res, 400, { ok: false, error: { code: 'invalid_request' } });
    }
    if (typeof b?.title !== 'string' || !b.title) return send(res, 422, { ok: false, error: { code: 'invalid_request' } });
    use(b);
  });
}
