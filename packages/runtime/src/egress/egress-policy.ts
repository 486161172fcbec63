// The egress policy (API.md "Running contract", Egress): which addresses an outbound call that a
// tenant aims (webhook tools, provider base URLs, later MCP servers and hooks) may reach. Pure:
// deciders check literal hosts with it at PUT time; the guarded fetch checks resolved addresses.
import type { Cidr, IpAddress } from './ip-address.js';
import { cidrContains, parseCidr, parseIp } from './ip-address.js';

/** Why an address is refused: a word for messages (`loopback`, `private`, `link-local`, …). */
export type RefusalReason = string;

const range = (text: string, reason: RefusalReason): { cidr: Cidr; reason: RefusalReason } => {
  const cidr = parseCidr(text);
  if (!cidr) throw new Error(`bad built-in range ${text}`);
  return { cidr, reason };
};

/** IPv4 ranges that are not the public internet (RFC 6890 and its updates). */
const REFUSED_IPV4 = [
  range('0.0.0.0/8', 'unspecified'),
  range('10.0.0.0/8', 'private'),
  range('100.64.0.0/10', 'shared (CGNAT)'),
  range('127.0.0.0/8', 'loopback'),
  range('169.254.0.0/16', 'link-local'),
  range('172.16.0.0/12', 'private'),
  range('192.0.0.0/24', 'reserved'),
  range('192.0.2.0/24', 'documentation'),
  range('192.88.99.0/24', 'reserved'),
  range('192.168.0.0/16', 'private'),
  range('198.18.0.0/15', 'benchmarking'),
  range('198.51.100.0/24', 'documentation'),
  range('203.0.113.0/24', 'documentation'),
  range('224.0.0.0/4', 'multicast'),
  range('240.0.0.0/4', 'reserved'),
];

/**
 * IPv6 forms that carry an IPv4 address: judged by the address they carry. IPv4-mapped
 * (::ffff:a.b.c.d) is how a dual-stack socket reaches IPv4; NAT64 (64:ff9b::/96) is what DNS64
 * answers on IPv6-only networks; 6to4 (2002::/16) embeds its IPv4 in bits 16-48.
 */
const EMBEDDING_IPV6: ReadonlyArray<{ cidr: Cidr; offset: number; form: string }> = [
  { cidr: parseCidr('::ffff:0:0/96')!, offset: 12, form: 'IPv4-mapped' },
  { cidr: parseCidr('64:ff9b::/96')!, offset: 12, form: 'NAT64' },
  { cidr: parseCidr('2002::/16')!, offset: 2, form: '6to4' },
];

/**
 * IPv6 ranges refused whatever they carry. The deprecated IPv4-compatible (::/96) and
 * IPv4-translated (::ffff:0:0:0/96) forms, local-use NAT64 and Teredo (whose client address is
 * obfuscated) are refused outright: nothing public needs them.
 */
const REFUSED_IPV6 = [
  range('::/128', 'unspecified'),
  range('::1/128', 'loopback'),
  range('::/96', 'reserved (IPv4-compatible)'),
  range('::ffff:0:0:0/96', 'reserved (IPv4-translated)'),
  range('64:ff9b:1::/48', 'reserved (local NAT64)'),
  range('100::/64', 'reserved (discard)'),
  range('2001::/32', 'reserved (Teredo)'),
  range('2001:2::/48', 'benchmarking'),
  range('2001:db8::/32', 'documentation'),
  range('fc00::/7', 'private (ULA)'),
  range('fe80::/10', 'link-local'),
  range('fec0::/10', 'site-local'),
  range('ff00::/8', 'multicast'),
];

/** Global unicast: every other IPv6 address outside it (and outside the embeddings) is reserved. */
const GLOBAL_UNICAST = parseCidr('2000::/3')!;

/** The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4), if any. */
const embeddedIpv4 = (address: IpAddress): { ipv4: IpAddress; form: string } | undefined => {
  if (address.family !== 6) return undefined;
  for (const { cidr, offset, form } of EMBEDDING_IPV6) {
    if (cidrContains(cidr, address)) {
      return { ipv4: { family: 4, bytes: address.bytes.slice(offset, offset + 4) }, form };
    }
  }
  return undefined;
};

/** Why `address` is not public, or undefined when it is (the allow list aside). */
export const refusalOf = (address: IpAddress): RefusalReason | undefined => {
  if (address.family === 4) return REFUSED_IPV4.find(({ cidr }) => cidrContains(cidr, address))?.reason;
  const embedded = embeddedIpv4(address);
  if (embedded) {
    const reason = refusalOf(embedded.ipv4);
    return reason === undefined ? undefined : `${reason} (${embedded.form})`;
  }
  const refused = REFUSED_IPV6.find(({ cidr }) => cidrContains(cidr, address));
  if (refused) return refused.reason;
  return cidrContains(GLOBAL_UNICAST, address) ? undefined : 'reserved';
};

/** `KEEL_EGRESS_ALLOW` that does not parse. */
export class EgressAllowListError extends Error {}

/** Parses a comma-separated CIDR list (`127.0.0.0/8,::1/128`); blank: empty. Throws EgressAllowListError. */
export const parseAllowList = (text: string | undefined): Cidr[] => {
  const parts = (text ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  return parts.map((part) => {
    const cidr = parseCidr(part);
    if (!cidr) {
      throw new EgressAllowListError(
        `must be comma-separated CIDRs such as 127.0.0.0/8,::1/128; ${JSON.stringify(part)} is not one`,
      );
    }
    return cidr;
  });
};

/** The dev mode's allow list when KEEL_EGRESS_ALLOW is unset: loopback, so local webhooks work. */
export const DEV_EGRESS_ALLOW = '127.0.0.0/8,::1/128';

/** A verdict on one address or host. */
export type EgressVerdict = { allowed: true } | { allowed: false; reason: RefusalReason };

/**
 * The egress policy: public addresses pass, the rest is refused unless the allow list (from
 * `KEEL_EGRESS_ALLOW`) holds it or the IPv4 address it carries.
 */
export class EgressPolicy {
  readonly allow: readonly Cidr[];

  constructor(allow: readonly Cidr[] = []) {
    this.allow = allow;
  }

  /** The policy of an allow list's text (`KEEL_EGRESS_ALLOW`); throws EgressAllowListError. */
  static fromAllowList(text: string | undefined): EgressPolicy {
    return new EgressPolicy(parseAllowList(text));
  }

  /** Verdict on one address (text from a resolver or a URL host); a non-address is refused. */
  checkAddress(text: string): EgressVerdict {
    const address = parseIp(text);
    if (!address) return { allowed: false, reason: 'not an IP address' };
    if (this.#allowed(address)) return { allowed: true };
    const reason = refusalOf(address);
    return reason === undefined ? { allowed: true } : { allowed: false, reason };
  }

  /**
   * Verdict on a URL's host, as far as it is known without resolving: a literal address or
   * `localhost` (and `*.localhost`) is judged now; any other name is undefined (judged at call
   * time, after resolution). `hostname` is `new URL(…).hostname`, so `0x7f.1` is `127.0.0.1`.
   */
  checkHostLiteral(hostname: string): EgressVerdict | undefined {
    const host = hostname.toLowerCase().replace(/\.$/, '');
    if (host === 'localhost' || host.endsWith('.localhost')) {
      // A name the resolver answers with loopback (RFC 6761): both families must be allowed.
      const v4 = this.checkAddress('127.0.0.1');
      const v6 = this.checkAddress('::1');
      return v4.allowed && v6.allowed ? { allowed: true } : { allowed: false, reason: 'loopback' };
    }
    if (parseIp(host) === undefined) return undefined;
    return this.checkAddress(host);
  }

  /**
   * The refusal of a URL whose host is literal and refused, as a sentence naming `field`;
   * undefined when the URL may be stored (a name is checked at each call). Pure: no I/O.
   */
  refusalOfUrl(field: string, url: URL): string | undefined {
    const verdict = this.checkHostLiteral(url.hostname);
    if (verdict === undefined || verdict.allowed) return undefined;
    return `${field} must point to a public address: ${url.hostname} is ${article(verdict.reason)} address (KEEL_EGRESS_ALLOW opens ranges on purpose)`;
  }

  #allowed(address: IpAddress): boolean {
    if (this.allow.length === 0) return false;
    const embedded = embeddedIpv4(address);
    return this.allow.some(
      (cidr) => cidrContains(cidr, address) || (embedded !== undefined && cidrContains(cidr, embedded.ipv4)),
    );
  }
}

const article = (word: string): string => (/^[aeiou]/i.test(word) ? `an ${word}` : `a ${word}`);
