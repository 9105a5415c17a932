import { isIP } from 'node:net';

// DNS-rebinding and cross-site guards. A web page can make a browser send requests to
// localhost; the Host header tells us which name the browser thinks it is talking to, and the
// Origin header which site started the request.

/** The host part of a Host header, without port and brackets, lower-cased. */
export function hostName(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end === -1 ? h : h.slice(1, end);
  }
  const colon = h.lastIndexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
}

export function isLoopbackName(name: string): boolean {
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (isIP(name) === 4) return name.startsWith('127.');
  if (isIP(name) === 6) return name === '::1' || name === '0:0:0:0:0:0:0:1' || name.startsWith('::ffff:127.');
  return false;
}

export function hostAllowed(header: string | undefined, allowedHosts: readonly string[]): boolean {
  if (!header) return false;
  const name = hostName(header);
  if (isLoopbackName(name)) return true;
  const lower = allowedHosts.map((h) => h.toLowerCase());
  return lower.includes(name) || lower.includes(header.trim().toLowerCase());
}

export function originAllowed(origin: string, allowedOrigins: readonly string[]): boolean {
  const o = origin.trim().replace(/\/+$/, '').toLowerCase();
  return allowedOrigins.some((a) => a.replace(/\/+$/, '').toLowerCase() === o);
}
