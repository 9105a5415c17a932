// Origins a page could send when server.allowedOrigins is ['http://localhost:5173']: the unit test
// of the guard and the HTTP test of the daemon both go through this one table.

export const ALLOWED_ORIGIN = 'http://localhost:5173';

/** Other origins that start with, end with, contain or resemble the allowed one: each is refused. */
export const FOREIGN_ORIGINS: readonly [string, string][] = [
  ['a longer host that starts with it', 'http://localhost:5173.evil.com'],
  ['the same, upper-cased', 'HTTP://LOCALHOST:5173.EVIL.COM'],
  ['user info before a foreign host', 'http://localhost:5173@evil.com'],
  ['a longer port', 'http://localhost:51730'],
  ['a prefix of it', 'http://localhost:517'],
  ['no port', 'http://localhost'],
  ['a trailing dot on the host', 'http://localhost.:5173'],
  ['a trailing dot after the port', 'http://localhost:5173.'],
  ['another scheme', 'https://localhost:5173'],
  ['a path after it', 'http://localhost:5173/evil'],
  ['it as the path of a foreign origin', 'http://evil.com/http://localhost:5173'],
  ['a subdomain of it', 'http://evil.localhost:5173'],
  ['two Origin headers joined', 'http://localhost:5173, http://evil.com'],
  ['the opaque origin', 'null'],
];

/** Spellings of the allowed origin itself: scheme and host are case-insensitive; a slash is tolerated. */
export const SAME_ORIGINS: readonly [string, string][] = [
  ['exactly', 'http://localhost:5173'],
  ['upper-cased', 'HTTP://LOCALHOST:5173'],
  ['with a trailing slash', 'http://localhost:5173/'],
];
