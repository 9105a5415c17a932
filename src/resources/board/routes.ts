import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { route, serviceKey } from '../../app.js';
import { AppError } from '../../kernel/errors.js';
import type { KeyEntry } from '../../kernel/auth.js';
import { RAW_RESPONSE } from '../../kernel/route.js';
import { ASSET_NAME, type AssetSource, type BoardAsset } from './assets.js';
import { cookieNames, exchangeLogin, keyIsReadOnly, LOGIN_TTL_MS, mintLogin, peekLogin, revokeAll, type Exchange } from './sessions.js';

// The board: its static files at / and /board/<file>, the login exchange at /login, and the API
// the CLI signs in with (svc open). Everything else the board shows comes from the public API.

export interface BoardRuntime {
  assets: AssetSource;
  /** The keys in force now (a session ends with the key that minted it). */
  keys(): readonly KeyEntry[];
}

export const BOARD = serviceKey<BoardRuntime>('board');

const tag = 'Board';

/**
 * No inline script or style, no eval, nothing from another origin; the board talks to its own
 * daemon only and may not be framed.
 */
export const BOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const SECURITY_HEADERS = {
  'Content-Security-Policy': BOARD_CSP,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  // The login link's token must never leave in a Referer.
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
} as const;

/** The encoding to answer with: br, then gzip, when the client accepts it (q > 0); else none. */
export function pickEncoding(header: string | string[] | undefined): 'br' | 'gzip' | null {
  const accepted = new Set<string>();
  for (const part of String(header ?? '').split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    accepted.add(name.trim());
  }
  if (accepted.has('br')) return 'br';
  if (accepted.has('gzip') || accepted.has('*')) return 'gzip';
  return null;
}

/** Whether If-None-Match names this ETag (a list, weak forms and * included). */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

function sendAsset(req: IncomingMessage, res: ServerResponse, asset: BoardAsset): typeof RAW_RESPONSE {
  const headers: Record<string, string | number> = {
    ...SECURITY_HEADERS,
    'Content-Type': asset.contentType,
    ETag: asset.etag,
    // Always revalidated (a 304 costs a round trip on loopback): an upgraded daemon's board is seen at once.
    'Cache-Control': 'no-cache',
    Vary: 'Accept-Encoding',
  };
  if (matchesEtag(req.headers['if-none-match'], asset.etag)) {
    res.writeHead(304, headers);
    res.end();
    return RAW_RESPONSE;
  }
  const encoding = pickEncoding(req.headers['accept-encoding']);
  const body = encoding === 'br' ? asset.br : encoding === 'gzip' ? asset.gzip : asset.body;
  if (encoding) headers['Content-Encoding'] = encoding;
  headers['Content-Length'] = body.length;
  res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
  return RAW_RESPONSE;
}

function assetNamed(runtime: BoardRuntime, name: string): BoardAsset {
  const files = runtime.assets();
  if (!files) throw new AppError('unavailable', 'The board is not built into this installation (npm run build makes dist/board).');
  const asset = ASSET_NAME.test(name) ? files.get(name) : undefined;
  if (!asset) throw new AppError('not_found', `The board has no file ${name}.`);
  return asset;
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A plain page for a refused login link: it says why and what to do, and carries no script. */
function refusalPage(res: ServerResponse, title: string, message: string): typeof RAW_RESPONSE {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · svc board</title><link rel="stylesheet" href="/board/app.css"></head>
<body><main class="refusal"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>
<p>Run <code>svc open</code> again for a new link.</p></main></body></html>
`;
  res.writeHead(401, { ...SECURITY_HEADERS, 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(html), 'Cache-Control': 'no-store' });
  res.end(html);
  return RAW_RESPONSE;
}

const REFUSALS: Record<Exclude<Exchange, { ok: true }>['reason'], [string, string]> = {
  unknown: ['This login link is not valid', 'The link was not made by this daemon, or it was signed out with svc open --logout-all.'],
  used: ['This login link was already used', 'A login link signs in once. If that was not you, run svc open --logout-all.'],
  expired: ['This login link has expired', `A login link must be opened within ${LOGIN_TTL_MS / 1000} s of being made.`],
  key_gone: ['The key behind this link was removed', 'The API key that made this link is no longer configured.'],
};

const LoginOut = z
  .object({
    path: z.string().describe('The one-time login link, relative to the daemon URL: `/login?token=…`. Open it within `expiresAt`; it signs in once.'),
    expiresAt: z.string(),
    readOnly: z.boolean().describe('The session it makes can only read (asked for, or the key is limited to read-only tools or to database grants).'),
  })
  .meta({ id: 'BoardLogin' });

const SessionOut = z
  .object({
    name: z.string().describe('The API key the caller acts as (for a session, the key that minted its link).'),
    session: z.boolean().describe('Authenticated by a board session cookie (else by a bearer key).'),
    readOnly: z.boolean().describe('Whether the caller may only read: the board then shows no controls that change things.'),
    lastEventId: z.int().describe('The newest event id now (0: none yet): the board opens GET /v1/events with a Last-Event-ID a little before it, so its Events view starts with the recent history.'),
  })
  .meta({ id: 'BoardSession' });

export const boardRoutes = [
  route({
    method: 'GET',
    path: '/',
    operationId: 'getBoard',
    summary: 'The web board (HTML; sign in with `svc open`)',
    description: 'Static, compressed (br or gzip as accepted) and validated with an ETag (304 on If-None-Match), under a strict Content-Security-Policy.',
    tag,
    auth: 'public',
    rawContentType: 'text/html',
    response: z.string(),
    errors: ['unavailable'],
    handler: ({ app, req, res }) => sendAsset(req, res, assetNamed(app.services.get(BOARD), 'index.html')),
  }),
  route({
    method: 'GET',
    path: '/board/{file}',
    operationId: 'getBoardFile',
    summary: "One of the board's static files (script, style sheet, icon)",
    tag,
    auth: 'public',
    params: z.strictObject({ file: z.string().max(100) }),
    rawContentType: 'application/octet-stream',
    response: z.string(),
    errors: ['unavailable'],
    handler: ({ app, params, req, res }) => sendAsset(req, res, assetNamed(app.services.get(BOARD), params.file)),
  }),
  route({
    method: 'GET',
    path: '/login',
    operationId: 'boardLogin',
    summary: 'Exchange a one-time login link for a board session cookie, then go to the board',
    description:
      'Answers 303 to `/#csrf=<token>` with an `HttpOnly; SameSite=Strict` session cookie, so the login token leaves the address bar; the board sends the CSRF token from the fragment as X-CSRF-Token on every request. ' +
      'A link that is unknown, used or expired is answered 401 with a page that says so.',
    tag,
    auth: 'public',
    query: z.strictObject({ token: z.string().max(200).optional() }),
    rawContentType: 'text/html',
    response: z.string(),
    handler: async ({ app, query, req, res }): Promise<typeof RAW_RESPONSE> => {
      const runtime = app.services.get(BOARD);
      if (!query.token) return refusalPage(res, 'This login link is not valid', 'It carries no token.');
      // A HEAD (a link preview, a prefetcher) is answered as the GET would be, and does not spend the link.
      if (req.method === 'HEAD') {
        const peek = await peekLogin(app.db, query.token, runtime.keys(), app.clock.now());
        if (!peek.ok) return refusalPage(res, ...REFUSALS[peek.reason]);
        res.writeHead(303, { ...SECURITY_HEADERS, Location: '/', 'Cache-Control': 'no-store', 'Content-Length': 0 });
        res.end();
        return RAW_RESPONSE;
      }
      const result = await exchangeLogin(app.db, query.token, runtime.keys(), app.clock.now());
      if (!result.ok) {
        app.log.info('board login refused', { reason: result.reason });
        return refusalPage(res, ...REFUSALS[result.reason]);
      }
      const names = cookieNames(app.address().port);
      const secure = app.config().server.tls ? '; Secure' : '';
      res.writeHead(303, {
        ...SECURITY_HEADERS,
        // The CSRF token goes to the page in the fragment, which the browser never sends anywhere:
        // the board keeps it in its origin's localStorage and sends it on every request. A
        // cookie is sent to every port of the host, so the session cookie alone must not be enough.
        Location: `/#csrf=${result.csrf}`,
        'Cache-Control': 'no-store',
        'Set-Cookie': `${names.session}=${result.session}; Path=/; Max-Age=${result.maxAgeS}; HttpOnly; SameSite=Strict${secure}`,
        'Content-Length': 0,
      });
      res.end();
      app.log.info('board session started', { expiresAt: result.expiresAt });
      return RAW_RESPONSE;
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/board/logins',
    operationId: 'createBoardLogin',
    summary: 'Mint a one-time board login link (what `svc open` opens)',
    description: `The link signs in once, within ${LOGIN_TTL_MS / 1000} s; the session it makes acts as the calling key for 12 h, or until \`svc open --logout-all\`.`,
    tag,
    status: 201,
    body: z.strictObject({ readOnly: z.boolean().optional().describe('Make a session that can only read, whatever the key may do.') }),
    response: LoginOut,
    handler: async ({ app, body, principal }) => {
      const key = principal!;
      // A session minting its own next link would outlive its 12 h for ever.
      if (key.session) throw new AppError('forbidden', 'A board session cannot mint login links: run `svc open` (it uses a key).');
      const readOnly = body.readOnly === true || keyIsReadOnly(key);
      const { token, expiresAt } = await mintLogin(app.db, { keyId: key.keyId, readOnly, now: app.clock.now() });
      return { path: `/login?token=${token}`, expiresAt, readOnly };
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/board/session',
    operationId: 'getBoardSession',
    summary: 'Who the caller is to the board: key name, session or key, read-only or not',
    tag,
    response: SessionOut,
    handler: async ({ app, principal, req }) => {
      const p = principal!;
      let readOnly = keyIsReadOnly(p);
      if (p.session) {
        // The session's own flag (a read-only link) is on its row; the kernel enforces it.
        const session = await app.services.get(BOARD_SESSIONS)(req);
        readOnly = session?.readOnly ?? true;
      }
      return { name: p.name, session: p.session === true, readOnly, lastEventId: await app.events.lastId() };
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/v1/board/sessions',
    operationId: 'revokeBoardSessions',
    summary: 'Sign every board session out and void unused login links (`svc open --logout-all`)',
    tag,
    response: z.object({ revoked: z.int().describe('Sessions ended.') }),
    handler: async ({ app }) => {
      const revoked = await revokeAll(app.db);
      const streams = app.streams.closeSessions();
      app.log.info('board sessions revoked', { revoked, streams });
      return { revoked };
    },
  }),
];

/** The daemon's session lookup (the kernel's `session` option), for routes that need the session's own flags. */
export const BOARD_SESSIONS = serviceKey<(req: IncomingMessage) => Promise<{ readOnly: boolean } | null>>('board-sessions');
