// The address classifier over the spellings an attacker tries: each URL goes through `new URL()`
// (as a webhook or provider URL does) and is judged on the host the WHATWG parser made of it.
import { describe, expect, it } from 'vitest';
import { DEV_EGRESS_ALLOW, EgressAllowListError, EgressPolicy, parseAllowList } from './egress-policy.js';

const strict = new EgressPolicy();

/** The policy's verdict on a URL's host as written (what PUT checks). */
const verdictOf = (url: string, policy = strict) => policy.checkHostLiteral(new URL(url).hostname);

describe('the egress classifier, on URL hosts as the WHATWG parser reads them', () => {
  const refused: Array<[string, string]> = [
    ['http://127.0.0.1/', 'loopback'],
    ['http://2130706433/', 'loopback'],
    ['http://0x7f.1/', 'loopback'],
    ['http://0x7f000001/', 'loopback'],
    ['http://0177.0.0.1/', 'loopback'],
    ['http://127.1/', 'loopback'],
    ['http://127.0.0.1./', 'loopback'],
    ['http://127.255.255.254/', 'loopback'],
    ['http://[::1]/', 'loopback'],
    ['http://[0:0:0:0:0:0:0:1]/', 'loopback'],
    ['http://[::ffff:127.0.0.1]/', 'loopback (IPv4-mapped)'],
    ['http://[::ffff:7f00:1]/', 'loopback (IPv4-mapped)'],
    ['http://[0:0:0:0:0:ffff:a9fe:a9fe]/', 'link-local (IPv4-mapped)'],
    ['http://[::ffff:10.0.0.1]/', 'private (IPv4-mapped)'],
    ['http://[64:ff9b::a9fe:a9fe]/', 'link-local (NAT64)'],
    ['http://[2002:7f00:1::]/', 'loopback (6to4)'],
    ['http://[::127.0.0.1]/', 'reserved (IPv4-compatible)'],
    ['http://[::8.8.8.8]/', 'reserved (IPv4-compatible)'],
    ['http://169.254.169.254/latest/meta-data/', 'link-local'],
    ['http://10.0.0.1/', 'private'],
    ['http://172.16.0.1/', 'private'],
    ['http://172.31.255.255/', 'private'],
    ['http://192.168.1.1/', 'private'],
    ['http://100.64.0.1/', 'shared (CGNAT)'],
    ['http://100.127.255.255/', 'shared (CGNAT)'],
    ['http://0.0.0.0/', 'unspecified'],
    ['http://0/', 'unspecified'],
    ['http://[::]/', 'unspecified'],
    ['http://224.0.0.1/', 'multicast'],
    ['http://239.255.255.250/', 'multicast'],
    ['http://255.255.255.255/', 'reserved'],
    ['http://240.0.0.1/', 'reserved'],
    ['http://192.0.2.1/', 'documentation'],
    ['http://198.18.0.1/', 'benchmarking'],
    ['http://[fd00::1]/', 'private (ULA)'],
    ['http://[fc00::1]/', 'private (ULA)'],
    ['http://[fe80::1]/', 'link-local'],
    ['http://[febf::1]/', 'link-local'],
    ['http://[fec0::1]/', 'site-local'],
    ['http://[ff02::1]/', 'multicast'],
    ['http://[2001:db8::1]/', 'documentation'],
    ['http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'reserved (Teredo)'],
    ['http://[100::1]/', 'reserved (discard)'],
    ['http://[4000::1]/', 'reserved'],
    ['http://localhost/', 'loopback'],
    ['http://LOCALHOST./', 'loopback'],
    ['http://foo.localhost/', 'loopback'],
    ['http://a.b.LocalHost:8080/', 'loopback'],
  ];
  it.each(refused)('refuses %s (%s)', (url, reason) => {
    expect(verdictOf(url)).toEqual({ allowed: false, reason });
  });

  const allowed = [
    'http://8.8.8.8/',
    'https://1.1.1.1/',
    'http://172.32.0.1/',
    'http://172.15.255.255/',
    'http://100.128.0.1/',
    'http://169.253.255.255/',
    'http://[2606:4700::1111]/',
    'http://[2001:4860:4860::8888]/',
    'http://[::ffff:8.8.8.8]/',
    'http://[64:ff9b::808:808]/',
    'http://[2002:808:808::1]/',
  ];
  it.each(allowed)('lets %s through', (url) => {
    expect(verdictOf(url)).toEqual({ allowed: true });
  });

  it('leaves names (not localhost) to the call-time check', () => {
    expect(verdictOf('https://hooks.example.com/x')).toBeUndefined();
    expect(verdictOf('https://localhost.example.com/x')).toBeUndefined();
    expect(verdictOf('https://mylocalhost/x')).toBeUndefined();
  });

  it('refuses a zone-scoped link-local address, should a resolver answer one', () => {
    expect(strict.checkAddress('fe80::1%eth0')).toEqual({ allowed: false, reason: 'link-local' });
    // The WHATWG parser refuses a zone in a URL altogether: PUT answers "not a URL".
    expect(() => new URL('http://[fe80::1%25eth0]/')).toThrow();
  });

  it('refuses what is not an address at all', () => {
    expect(strict.checkAddress('example.com')).toEqual({ allowed: false, reason: 'not an IP address' });
    expect(strict.checkAddress('1.2.3.256')).toEqual({ allowed: false, reason: 'not an IP address' });
    expect(strict.checkAddress('1::2::3')).toEqual({ allowed: false, reason: 'not an IP address' });
  });

  it('names the field and the host in the PUT refusal', () => {
    expect(strict.refusalOfUrl('url', new URL('http://0x7f.1/hook'))).toBe(
      'url must point to a public address: 127.0.0.1 is a loopback address (KEEL_EGRESS_ALLOW opens ranges on purpose)',
    );
    expect(strict.refusalOfUrl('baseUrl', new URL('http://169.254.169.254/'))).toMatch(
      /^baseUrl must point to a public address: 169\.254\.169\.254 is a link-local address/,
    );
    expect(strict.refusalOfUrl('url', new URL('https://hooks.example.com/'))).toBeUndefined();
  });
});

describe('the allow list (KEEL_EGRESS_ALLOW)', () => {
  it('opens exactly the listed ranges, IPv4 and IPv6', () => {
    const policy = EgressPolicy.fromAllowList(' 10.1.0.0/16 , fd00:1::/32,192.168.7.7 ');
    expect(policy.checkAddress('10.1.255.255')).toEqual({ allowed: true });
    expect(policy.checkAddress('10.2.0.1')).toEqual({ allowed: false, reason: 'private' });
    expect(policy.checkAddress('fd00:1::5')).toEqual({ allowed: true });
    expect(policy.checkAddress('fd00:2::5')).toEqual({ allowed: false, reason: 'private (ULA)' });
    expect(policy.checkAddress('192.168.7.7')).toEqual({ allowed: true });
    expect(policy.checkAddress('192.168.7.8')).toEqual({ allowed: false, reason: 'private' });
    // An IPv4 range also opens its IPv4-mapped form.
    expect(policy.checkAddress('::ffff:10.1.0.1')).toEqual({ allowed: true });
  });

  it("the dev mode's list opens loopback and localhost, nothing else", () => {
    const dev = EgressPolicy.fromAllowList(DEV_EGRESS_ALLOW);
    expect(verdictOf('http://127.0.0.1:8080/', dev)).toEqual({ allowed: true });
    expect(verdictOf('http://0x7f.1/', dev)).toEqual({ allowed: true });
    expect(verdictOf('http://[::1]:9/', dev)).toEqual({ allowed: true });
    expect(verdictOf('http://localhost:9/', dev)).toEqual({ allowed: true });
    expect(verdictOf('http://169.254.169.254/', dev)).toEqual({ allowed: false, reason: 'link-local' });
    expect(verdictOf('http://10.0.0.1/', dev)).toEqual({ allowed: false, reason: 'private' });
  });

  it('opens localhost only when both loopback families are open', () => {
    const v4Only = EgressPolicy.fromAllowList('127.0.0.0/8');
    expect(verdictOf('http://127.0.0.1/', v4Only)).toEqual({ allowed: true });
    expect(verdictOf('http://localhost/', v4Only)).toEqual({ allowed: false, reason: 'loopback' });
  });

  it('an empty or blank list opens nothing', () => {
    expect(parseAllowList('')).toEqual([]);
    expect(parseAllowList(' , ')).toEqual([]);
    expect(EgressPolicy.fromAllowList('').checkAddress('127.0.0.1')).toEqual({
      allowed: false,
      reason: 'loopback',
    });
  });

  it.each(['127.0.0.0/33', '::1/129', 'localhost', '10.0.0.0/8;', '0x7f.1/8', '010.0.0.1', '10.0.0.0/-1'])(
    'refuses %j as a CIDR',
    (entry) => {
      expect(() => parseAllowList(`127.0.0.0/8,${entry}`)).toThrow(EgressAllowListError);
      expect(() => parseAllowList(entry)).toThrow(/^must be comma-separated CIDRs/);
    },
  );
});
