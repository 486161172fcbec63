// The frame around every page: the brand, the page links, the tenant picker, who is signed in.
import type { ReactNode } from 'react';
import { Link, useRoute } from 'wouter';
import { useSession } from '../api/session';
import { TenantPicker } from './tenant-picker';

const PAGES: Array<[string, string]> = [
  ['/', 'Overview'],
  ['/tenants', 'Tenants'],
  ['/conversations', 'Conversations'],
  ['/approvals', 'Approvals'],
  ['/usage', 'Usage'],
  ['/dead-letters', 'Dead letters'],
];

const NavLink = ({ href, label }: { href: string; label: string }) => {
  const [exact] = useRoute(href);
  const [nested] = useRoute(`${href}/*`);
  const active = exact || (href !== '/' && nested);
  return (
    <Link href={href} className={active ? 'active' : ''} aria-current={active ? 'page' : undefined}>
      {label}
    </Link>
  );
};

/** The frame of every signed-in page. */
export const Layout = ({ children }: { children: ReactNode }) => {
  const session = useSession();
  const who = session.isOperator ? 'operator' : `${session.me.role} of ${session.me.tenant?.name ?? '?'}`;
  return (
    <div className="shell">
      <header className="topbar">
        <span className="brand">
          <span className="logo" aria-hidden="true">
            ⚓
          </span>
          Keel console
        </span>
        <TenantPicker />
        <span className="who" title={`key ${session.me.keyId}`}>
          {who}
        </span>
        <button type="button" className="link-button" onClick={() => session.signOut()}>
          Sign out
        </button>
      </header>
      <nav className="pages" aria-label="Pages">
        {PAGES.map(([href, label]) => (
          <NavLink key={href} href={href} label={label} />
        ))}
      </nav>
      <main className="content">{children}</main>
    </div>
  );
};

/** A page's heading (the page's name), with what goes beside it. */
export const PageTitle = ({ title, children }: { title: string; children?: ReactNode }) => (
  <div className="page-title">
    <h1>{title}</h1>
    {children}
  </div>
);
