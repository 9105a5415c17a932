import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { clientAddress, exposureIssues, isLoopbackHost, validProxyEntry } from '../../src/kernel/exposure.js';

const req = (peer: string, xff?: string) => ({ socket: { remoteAddress: peer }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } }) as unknown as IncomingMessage;

describe('exposure rules', () => {
  it('loopback hosts need nothing; others need tls or a proxy, and allowedHosts', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST', 'a.localhost']) {
      expect(isLoopbackHost(h), h).toBe(true);
      expect(exposureIssues(h, {})).toEqual([]);
    }
    for (const h of ['0.0.0.0', '::', '10.0.0.5', 'svc.example.com', '128.0.0.1']) expect(isLoopbackHost(h), h).toBe(false);
    expect(exposureIssues('0.0.0.0', {}).map((i) => i.path)).toEqual(['host', 'allowedHosts']);
    expect(exposureIssues('0.0.0.0', { trustedProxy: [] }).map((i) => i.path)).toEqual(['host', 'allowedHosts']);
    expect(exposureIssues('0.0.0.0', { tls: { cert: 'c', key: 'k' } }).map((i) => i.path)).toEqual(['allowedHosts']);
    expect(exposureIssues('0.0.0.0', { trustedProxy: ['10.0.0.1'], allowedHosts: ['svc.example.com'] })).toEqual([]);
  });

  it('proxy entries are addresses or CIDR blocks', () => {
    for (const ok of ['10.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8', '0.0.0.0/0']) expect(validProxyEntry(ok), ok).toBe(true);
    for (const bad of ['proxy.local', '10.0.0.0/33', 'fd00::/129', '10.0.0.1/8/1', '10.0.0.0/', '10.0.0.0/x']) expect(validProxyEntry(bad), bad).toBe(false);
  });
});

describe('clientAddress', () => {
  it('is the peer without a declared proxy, or when the peer is not one', () => {
    expect(clientAddress(req('192.0.2.1', '203.0.113.7'), undefined)).toBe('192.0.2.1');
    expect(clientAddress(req('192.0.2.1', '203.0.113.7'), ['10.0.0.0/8'])).toBe('192.0.2.1');
  });

  it('from a declared proxy: the nearest forwarded address that is not a proxy', () => {
    const proxies = ['10.0.0.0/8', 'fd00::/8'];
    expect(clientAddress(req('10.0.0.11', '203.0.113.7'), proxies)).toBe('203.0.113.7');
    expect(clientAddress(req('::ffff:10.0.0.11', '1.1.1.1, 203.0.113.7, 10.0.0.12'), proxies)).toBe('203.0.113.7');
    expect(clientAddress(req('fd00::1', '2001:db8::5'), proxies)).toBe('2001:db8::5');
    expect(clientAddress(req('10.0.0.11', 'garbage, 203.0.113.7'), proxies)).toBe('203.0.113.7');
    expect(clientAddress(req('10.0.0.11', '203.0.113.7, garbage'), proxies)).toBe('10.0.0.11');
    expect(clientAddress(req('10.0.0.11'), proxies)).toBe('10.0.0.11');
    // Every hop a proxy: the leftmost one.
    expect(clientAddress(req('10.0.0.11', '10.0.0.13, 10.0.0.12'), proxies)).toBe('10.0.0.13');
  });
});
