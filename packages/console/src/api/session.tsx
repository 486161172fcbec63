// Who is signed in: the key (kept in this tab's sessionStorage, never in a URL), what GET /v1/me
// says of it, and the tenant the operator acts in (sent as X-Keel-Tenant). A 401 from any call
// signs out with a message, back to the sign-in page.
import { useQueryClient } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { createContext, useCallback, useContext, useMemo, useState } from 'react';
import { ApiError, apiErrorOf, describeError } from './problem';
import type { Me } from './types';

const KEY_ITEM = 'keel.console.key';
const ME_ITEM = 'keel.console.me';
const TENANT_ITEM = 'keel.console.tenant';

/** How a call is made: method, JSON body, the tenant to act in, what to accept. */
export interface CallOptions {
  method?: string;
  body?: unknown;
  /** Acts inside this tenant (operator only): X-Keel-Tenant. */
  tenant?: string | undefined;
  accept?: string;
  /** Resumes an SSE feed after this frame id. */
  lastEventId?: string | undefined;
}

/** A signed-in key and the calls made with it: what every page uses. */
export interface Session {
  key: string;
  me: Me;
  /** The tenant pages about one tenant show: the admin's own, or the operator's pick (may be none). */
  tenantId: string | undefined;
  isOperator: boolean;
  chooseTenant: (tenantId: string | undefined) => void;
  signOut: (message?: string) => void;
  /** A JSON call on the API; throws ApiError. A 401 signs out. */
  call: <T>(path: string, options?: CallOptions) => Promise<T>;
  /** The raw response of a call (CSV, SSE); throws ApiError when it is not 2xx. */
  fetchRaw: (path: string, options?: CallOptions & { signal?: AbortSignal }) => Promise<Response>;
}

interface SessionState {
  session: Session | undefined;
  notice: string | undefined;
  signIn: (key: string) => Promise<void>;
}

const SessionContext = createContext<SessionState | undefined>(undefined);

const requestInit = (key: string, options: CallOptions & { signal?: AbortSignal }): RequestInit => {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.tenant !== undefined) headers['x-keel-tenant'] = options.tenant;
  if (options.accept !== undefined) headers.accept = options.accept;
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
  return {
    method: options.method ?? 'GET',
    headers,
    cache: 'no-store',
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  };
};

/** Sends one call with `key`; a non-2xx answer is thrown as ApiError naming the route. */
const send = async (
  key: string,
  path: string,
  options: CallOptions & { signal?: AbortSignal } = {},
): Promise<Response> => {
  const response = await fetch(path, requestInit(key, options));
  if (!response.ok) throw await apiErrorOf(response, `${options.method ?? 'GET'} ${path.split('?', 1)[0]}`);
  return response;
};

const readStored = (): { key: string; me: Me } | undefined => {
  const key = sessionStorage.getItem(KEY_ITEM);
  const me = sessionStorage.getItem(ME_ITEM);
  return key && me ? { key, me: JSON.parse(me) as Me } : undefined;
};

/** Holds the session for the whole app; signs in, signs out, and signs out on any 401. */
export const SessionProvider = ({ children }: { children: ReactNode }) => {
  const queryClient = useQueryClient();
  const [signedIn, setSignedIn] = useState(readStored);
  const [picked, setPicked] = useState(() => sessionStorage.getItem(TENANT_ITEM) ?? undefined);
  const [notice, setNotice] = useState<string | undefined>();

  const signOut = useCallback(
    (message?: string) => {
      sessionStorage.removeItem(KEY_ITEM);
      sessionStorage.removeItem(ME_ITEM);
      sessionStorage.removeItem(TENANT_ITEM);
      setSignedIn(undefined);
      setPicked(undefined);
      setNotice(message);
      queryClient.clear();
    },
    [queryClient],
  );

  const signIn = useCallback(async (key: string) => {
    const me = (await (await send(key, '/v1/me')).json()) as Me;
    sessionStorage.setItem(KEY_ITEM, key);
    sessionStorage.setItem(ME_ITEM, JSON.stringify(me));
    setNotice(undefined);
    setSignedIn({ key, me });
  }, []);

  const session = useMemo((): Session | undefined => {
    if (!signedIn) return undefined;
    const { key, me } = signedIn;
    const guarded = async (path: string, options: CallOptions & { signal?: AbortSignal } = {}) => {
      try {
        return await send(key, path, options);
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) {
          signOut(`Signed out: ${describeError(error)}`);
        }
        throw error;
      }
    };
    const isOperator = me.role === 'operator';
    return {
      key,
      me,
      isOperator,
      tenantId: isOperator ? picked : me.tenant?.id,
      chooseTenant: (tenantId) => {
        if (tenantId === undefined) sessionStorage.removeItem(TENANT_ITEM);
        else sessionStorage.setItem(TENANT_ITEM, tenantId);
        setPicked(tenantId);
      },
      signOut,
      fetchRaw: guarded,
      call: async <T,>(path: string, options: CallOptions = {}) => {
        const response = await guarded(path, options);
        const text = await response.text();
        return (text === '' ? undefined : JSON.parse(text)) as T;
      },
    };
  }, [signedIn, picked, signOut]);

  const value = useMemo(() => ({ session, notice, signIn }), [session, notice, signIn]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
};

/** The session if any, the sign-out notice and sign-in: for the sign-in page. */
export const useSessionState = (): SessionState => {
  const state = useContext(SessionContext);
  if (!state) throw new Error('useSessionState outside SessionProvider');
  return state;
};

/** The signed-in session (pages render only when there is one). */
export const useSession = (): Session => {
  const { session } = useSessionState();
  if (!session) throw new Error('useSession without a signed-in session');
  return session;
};

/** The X-Keel-Tenant to send for a page about one tenant: the operator's pick; admins send none. */
export const actingTenant = (session: Session): string | undefined =>
  session.isOperator ? session.tenantId : undefined;
