import { BlockList, isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { isLoopbackName } from './guards.js';

// Listening beyond loopback (DESIGN: "non-loopback listening only with TLS or a declared proxy,
// allowedHosts required"), and the client address a declared reverse proxy forwards.

export interface ExposureSettings {
  allowedHosts?: readonly string[];
  tls?: { cert: string; key: string };
  trustedProxy?: readonly string[];
}

/** Whether `host` (server.host or --host) listens on loopback only: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  return isLoopbackName(
    host
      .toLowerCase()
      .replace(/^\[(.*)\]$/, '$1')
      .replace(/\.$/, ''),
  );
}

/** What is missing for listening on `host`; empty when loopback, or when it is safe to expose. */
export function exposureIssues(host: string, s: ExposureSettings): { path: 'host' | 'allowedHosts'; message: string }[] {
  if (isLoopbackHost(host)) return [];
  const issues: { path: 'host' | 'allowedHosts'; message: string }[] = [];
  if (!s.tls && !s.trustedProxy?.length) {
    issues.push({
      path: 'host',
      message: `"${host}" is not a loopback address, so the API would be reachable from the network in clear text: set server.tls {cert, key} to serve HTTPS, or declare the reverse proxy in front of it in server.trustedProxy (its addresses), or listen on 127.0.0.1`,
    });
  }
  if (!s.allowedHosts?.length) {
    issues.push({ path: 'allowedHosts', message: `server.host "${host}" is not loopback: list the names clients use to reach it (e.g. "svc.example.com") in server.allowedHosts` });
  }
  return issues;
}

/** An IP address or a CIDR block. */
export function validProxyEntry(entry: string): boolean {
  const [addr = '', bits, extra] = entry.split('/');
  const family = isIP(addr);
  if (!family || extra !== undefined) return false;
  if (bits === undefined) return true;
  if (!/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

const unmapped = (a: string): string => (a.toLowerCase().startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a);

const lists = new WeakMap<readonly string[], BlockList>();

/** The BlockList of server.trustedProxy, made once per config (a reload brings a new array). */
function proxyList(entries: readonly string[]): BlockList {
  let list = lists.get(entries);
  if (!list) {
    list = new BlockList();
    for (const e of entries) {
      const [addr = '', bits] = e.split('/');
      const type = isIP(addr) === 6 ? 'ipv6' : 'ipv4';
      if (bits === undefined) list.addAddress(addr, type);
      else list.addSubnet(addr, Number(bits), type);
    }
    lists.set(entries, list);
  }
  return list;
}

function trusted(list: BlockList, address: string): boolean {
  const a = unmapped(address);
  const family = isIP(a);
  return family !== 0 && list.check(a, family === 6 ? 'ipv6' : 'ipv4');
}

/**
 * The client a request comes from: the direct peer, unless the peer is a declared proxy; then the
 * nearest address of X-Forwarded-For that is not itself a declared proxy (read from the right: the
 * left part is whatever the client chose to send). An X-Forwarded-For from anyone else is ignored.
 */
export function clientAddress(req: IncomingMessage, trustedProxy: readonly string[] | undefined): string | undefined {
  const peer = req.socket.remoteAddress;
  if (!peer || !trustedProxy?.length) return peer;
  const list = proxyList(trustedProxy);
  if (!trusted(list, peer)) return peer;
  const header = req.headers['x-forwarded-for'];
  if (!header) return peer;
  const hops = (Array.isArray(header) ? header.join(',') : header).split(',').map((h) => h.trim());
  let client = peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = unmapped(hops[i]!.replace(/^\[(.*)\]$/, '$1'));
    if (!isIP(hop)) break; // a malformed hop: believe nothing further left
    client = hop;
    if (!trusted(list, hop)) break;
  }
  return client;
}
