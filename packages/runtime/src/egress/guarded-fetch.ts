// The call-time half of the egress guard: a `fetch` that resolves the host once, refuses it if any
// address it resolves to is refused, and connects to the address it checked (the lookup of the
// socket itself is the check, so a rebinding name cannot switch between check and connect). TLS
// still verifies the certificate against the host name. Redirects are never followed.
import type { LookupAddress } from 'node:dns';
import { promises as dns } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { KeelError } from '@keel/core';
import { Agent, fetch as undiciFetch } from 'undici';
import type { EgressPolicy } from './egress-policy.js';

/** An outbound call a tenant aimed at an address the egress policy refuses. */
export class EgressDeniedError extends KeelError {
  constructor(
    readonly host: string,
    message: string,
  ) {
    super('PERMISSION_DENIED', message, { details: { host } });
  }
}

/** Resolves a host name to every address it has (`dns.lookup` with `all`); injectable for tests. */
export type EgressResolver = (hostname: string) => Promise<readonly LookupAddress[]>;

/** Options of `createEgressFetch`. */
export interface EgressFetchOptions {
  policy: EgressPolicy;
  /** Default: the system resolver (`dns.lookup`, all addresses). */
  resolve?: EgressResolver;
}

const systemResolve: EgressResolver = (hostname) => dns.lookup(hostname, { all: true });

const refusedLiteral = (host: string, reason: string): EgressDeniedError =>
  new EgressDeniedError(
    host,
    `egress to ${host} is refused: it is ${/^[aeiou]/i.test(reason) ? 'an' : 'a'} ${reason} address`,
  );

// The resolved addresses are not named: they may be internal, and the tenant only needs the host.
const refusedName = (host: string): EgressDeniedError =>
  new EgressDeniedError(host, `egress to ${host} is refused: it resolves to an address that is not public`);

/**
 * The socket's `lookup`: resolves once, refuses the host if any address is refused, and hands the
 * socket exactly the addresses it checked.
 */
const guardedLookup = (policy: EgressPolicy, resolve: EgressResolver): LookupFunction =>
  ((hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback) => {
    resolve(hostname).then(
      (addresses) => {
        if (addresses.length === 0) {
          const error = Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' });
          callback(error, '', 4);
          return;
        }
        if (addresses.some((entry) => !policy.checkAddress(entry.address).allowed)) {
          callback(refusedName(hostname), '', 4);
          return;
        }
        const family = options.family === 4 || options.family === 6 ? options.family : undefined;
        const usable =
          family === undefined ? addresses : addresses.filter((entry) => entry.family === family);
        const first = usable[0];
        if (first === undefined) {
          const error = Object.assign(new Error(`${hostname} has no IPv${family} address`), {
            code: 'ENOTFOUND',
          });
          callback(error, '', 4);
          return;
        }
        if (options.all) (callback as unknown as AllCallback)(null, [...usable]);
        else callback(null, first.address, first.family);
      },
      (error: unknown) => callback(error as NodeJS.ErrnoException, '', 4),
    );
  }) as unknown as LookupFunction;

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string, family: number) => void;
type AllCallback = (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void;

/** The EgressDeniedError somewhere in `error`'s cause chain, if any. */
export const egressDeniedIn = (error: unknown): EgressDeniedError | undefined => {
  for (let current = error, depth = 0; current instanceof Error && depth < 8; depth++) {
    if (current instanceof EgressDeniedError) return current;
    current = current.cause;
  }
  return undefined;
};

/**
 * A `fetch` for calls a tenant aims: the URL's host is checked against `policy` (a literal at
 * once, a name after resolution, on every new connection), the connection goes to the checked
 * address, and a redirect is returned as it is (3xx), never followed. Rejects with an
 * `EgressDeniedError` when the host is refused. Takes a URL (string or `URL`), not a `Request`.
 */
export const createEgressFetch = (options: EgressFetchOptions): typeof fetch => {
  const { policy } = options;
  const dispatcher = new Agent({
    connect: { lookup: guardedLookup(policy, options.resolve ?? systemResolve) },
  });
  const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (typeof input !== 'string' && !(input instanceof URL)) {
      throw new TypeError('the egress fetch takes a URL, not a Request');
    }
    const url = new URL(input);
    const literal = policy.checkHostLiteral(url.hostname);
    if (literal && !literal.allowed) throw refusedLiteral(url.hostname, literal.reason);
    try {
      const response = await undiciFetch(url, {
        ...(init as Parameters<typeof undiciFetch>[1]),
        redirect: 'manual',
        dispatcher,
      });
      return response as unknown as Response;
    } catch (error) {
      throw egressDeniedIn(error) ?? error;
    }
  };
  return guarded as typeof fetch;
};
