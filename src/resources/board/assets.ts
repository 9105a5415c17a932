import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exeAsset, exeBuild } from '../../lib/exe.js';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';

// Every read of the board's static files goes through this module. The daemon is handed an
// AssetSource (the daemon's board part wires boardFiles() by default); a single executable hands it
// boardAssets(bytesFromItsEmbeddedAssets) instead, and nothing else changes.

/** One file of the board, ready to serve: its bytes, compressed forms and validator. */
export interface BoardAsset {
  name: string;
  contentType: string;
  /** A strong ETag (quoted) derived from the bytes. */
  etag: string;
  body: Buffer;
  gzip: Buffer;
  br: Buffer;
}

/** The board's files by name (`index.html`, `app.js`...), or null when the board was not built. */
export type AssetSource = () => ReadonlyMap<string, BoardAsset> | null;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/** Names the board may have: flat, no dot-files, no path separators. */
export const ASSET_NAME = /^[a-z0-9][a-z0-9._-]*$/i;

/** Files as bytes (from the file system or embedded in an executable) to servable assets, compressed once. */
export function boardAssets(files: ReadonlyMap<string, Uint8Array> | Record<string, Uint8Array>): ReadonlyMap<string, BoardAsset> {
  const out = new Map<string, BoardAsset>();
  const entries = files instanceof Map ? [...files.entries()] : Object.entries(files);
  for (const [name, bytes] of entries) {
    if (!ASSET_NAME.test(name)) continue;
    const contentType = TYPES[extname(name).toLowerCase()];
    if (!contentType) continue;
    const body = Buffer.from(bytes);
    out.set(name, {
      name,
      contentType,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      body,
      gzip: gzipSync(body, { level: 9 }),
      br: brotliCompressSync(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: body.length } }),
    });
  }
  return out;
}

/**
 * Where the built board is, relative to this module: dist/board next to dist/src when running the
 * compiled package, dist/board under the repository when running the sources (tests).
 */
export function boardDir(): string | null {
  for (const rel of ['../../../board/', '../../../dist/board/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(join(dir, 'index.html'))) return dir;
  }
  return null;
}

/** The board from the file system: read and compressed at first use, then held (the files never change under a running daemon). */
export function boardFiles(dir: string | null = boardDir()): AssetSource {
  let cached: ReadonlyMap<string, BoardAsset> | null | undefined;
  return () => {
    if (cached !== undefined) return cached;
    if (!dir || !existsSync(join(dir, 'index.html'))) return (cached = null);
    const files = new Map<string, Uint8Array>();
    for (const name of readdirSync(dir)) if (ASSET_NAME.test(name) && TYPES[extname(name).toLowerCase()]) files.set(name, readFileSync(join(dir, name)));
    return (cached = boardAssets(files));
  };
}

/** The board carried in the single executable (scripts/build-exe.mjs: assets `board/<name>`, named in its build.json). */
export function embeddedBoardFiles(): AssetSource {
  let cached: ReadonlyMap<string, BoardAsset> | null | undefined;
  return () => {
    if (cached !== undefined) return cached;
    const files = new Map<string, Uint8Array>();
    for (const name of exeBuild()?.board ?? []) {
      const bytes = exeAsset(`board/${name}`);
      if (bytes) files.set(name, bytes);
    }
    return (cached = files.has('index.html') ? boardAssets(files) : null);
  };
}
