// Tenants with their cost this month against their budget; for the operator: create a tenant, set
// its budget, issue and revoke its keys (a new key is shown once, with a copy button). A tenant
// admin sees its own tenant and its keys only.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { FormEvent } from 'react';
import { useState } from 'react';
import { InputError } from '../api/problem';
import { useSession } from '../api/session';
import type { IssuedKey, KeyInfo, Tenant, UsageReport } from '../api/types';
import { formatTime, formatUsd } from '../components/format';
import { PageTitle } from '../components/Layout';
import { ErrorNote, Loading, Notice } from '../components/status';
import { useTenants } from '../components/TenantPicker';
import { monthStart, todayIn } from './usage-range';

/** Cost against budget as a bar: green, amber past 80 %, red past the budget. */
const BudgetBar = ({ cost, budget }: { cost: number; budget: number | null | undefined }) => {
  if (budget === null || budget === undefined) return <span className="muted">no budget</span>;
  const share = budget === 0 ? (cost > 0 ? 1 : 0) : cost / budget;
  const level = share >= 1 ? 'over' : share >= 0.8 ? 'near' : 'ok';
  return (
    <span className="budget" title={`${Math.round(share * 100)} % of ${formatUsd(budget)}`}>
      <span className={`budget-bar budget-${level}`}>
        <span style={{ width: `${Math.min(100, share * 100)}%` }} />
      </span>
      <span className="budget-text">
        {Math.round(share * 100)} % of {formatUsd(budget)}
      </span>
    </span>
  );
};

const CreateTenant = () => {
  const session = useSession();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const create = useMutation({
    mutationFn: async (tenantName: string) => {
      if (tenantName.trim() === '') throw new InputError('Tenant name: enter a name (it cannot be empty).');
      return session.call<Tenant>('/v1/tenants', { method: 'POST', body: { name: tenantName.trim() } });
    },
    onSuccess: async () => {
      setName('');
      await queryClient.invalidateQueries({ queryKey: ['tenants'] });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate(name);
  };
  return (
    <form className="card inline-form" onSubmit={submit} noValidate aria-label="New tenant">
      <h2>New tenant</h2>
      <label className="field">
        <span>Tenant name</span>
        <input value={name} onChange={(event) => setName(event.target.value)} placeholder="Acme Inc." />
      </label>
      <button type="submit" className="primary" disabled={create.isPending}>
        Create tenant
      </button>
      {create.isError && <ErrorNote error={create.error} />}
      {create.isSuccess && <Notice>Created {create.data.name}.</Notice>}
    </form>
  );
};

const SetBudget = ({ tenant }: { tenant: Tenant }) => {
  const session = useSession();
  const queryClient = useQueryClient();
  const [value, setValue] = useState(tenant.monthlyUsd?.toString() ?? '');
  const save = useMutation({
    mutationFn: async (text: string) => {
      const monthlyUsd = Number(text);
      if (text.trim() === '' || !Number.isFinite(monthlyUsd) || monthlyUsd < 0) {
        throw new InputError('Monthly budget: enter an amount in USD of 0 or more.');
      }
      return session.call(`/v1/tenants/${encodeURIComponent(tenant.id)}/budget`, {
        method: 'PUT',
        body: { monthlyUsd },
      });
    },
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['tenants'] }),
  });
  return (
    <form
      className="inline-form"
      noValidate
      aria-label="Budget"
      onSubmit={(event) => {
        event.preventDefault();
        save.mutate(value);
      }}
    >
      <label className="field">
        <span>Monthly budget (USD)</span>
        <input inputMode="decimal" value={value} onChange={(event) => setValue(event.target.value)} />
      </label>
      <button type="submit" disabled={save.isPending}>
        Set budget
      </button>
      {save.isError && <ErrorNote error={save.error} />}
      {save.isSuccess && <Notice>Budget saved.</Notice>}
    </form>
  );
};

/** The key just issued, shown this once, with a copy button. */
const IssuedKeyBox = ({ issued }: { issued: IssuedKey }) => {
  const [copied, setCopied] = useState(false);
  return (
    <div className="issued-key" role="status">
      <p>New {issued.role} key — copy it now, it is not shown again:</p>
      <code data-testid="issued-key">{issued.key}</code>
      <button
        type="button"
        onClick={() => {
          void navigator.clipboard?.writeText(issued.key).then(() => setCopied(true));
        }}
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
};

/** A tenant's keys: the list, a new key, revoke. `base` is `/v1/tenants/{id}` (operator) or `/v1`. */
const Keys = ({ base }: { base: string }) => {
  const session = useSession();
  const queryClient = useQueryClient();
  const [role, setRole] = useState('admin');
  const [name, setName] = useState('');
  const keys = useQuery({
    queryKey: ['keys', session.key, base],
    queryFn: () => session.call<{ data: KeyInfo[] }>(`${base}/keys`).then((body) => body.data),
  });
  const issue = useMutation({
    mutationFn: () =>
      session.call<IssuedKey>(`${base}/keys`, {
        method: 'POST',
        body: { role, ...(name.trim() ? { name: name.trim() } : {}) },
      }),
    onSuccess: () => {
      setName('');
      return queryClient.invalidateQueries({ queryKey: ['keys'] });
    },
  });
  const revoke = useMutation({
    mutationFn: (keyId: string) =>
      session.call(`${base}/keys/${encodeURIComponent(keyId)}`, { method: 'DELETE' }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['keys'] }),
  });
  return (
    <div className="keys">
      <h3>Keys</h3>
      <form
        className="inline-form"
        aria-label="New key"
        onSubmit={(event) => {
          event.preventDefault();
          issue.mutate();
        }}
      >
        <label className="field">
          <span>Role</span>
          <select value={role} onChange={(event) => setRole(event.target.value)}>
            <option value="admin">admin</option>
            <option value="editor">editor</option>
            <option value="viewer">viewer</option>
          </select>
        </label>
        <label className="field">
          <span>Key name</span>
          <input value={name} onChange={(event) => setName(event.target.value)} placeholder="optional" />
        </label>
        <button type="submit" disabled={issue.isPending}>
          Create key
        </button>
      </form>
      {issue.isError && <ErrorNote error={issue.error} />}
      {issue.data && <IssuedKeyBox issued={issue.data} />}
      {revoke.isError && <ErrorNote error={revoke.error} />}
      {keys.isPending && <Loading what="keys" />}
      {keys.isError && <ErrorNote error={keys.error} />}
      {keys.data && (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Role</th>
                <th>Created</th>
                <th>Last used</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {keys.data.map((key) => (
                <tr key={key.id}>
                  <td title={key.id}>{key.name || key.id}</td>
                  <td>{key.role}</td>
                  <td>{formatTime(key.createdAt)}</td>
                  <td>{formatTime(key.lastUsedAt)}</td>
                  <td>
                    {key.id !== session.me.keyId && (
                      <button type="button" className="danger small" onClick={() => revoke.mutate(key.id)}>
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
};

const OperatorTenants = () => {
  const session = useSession();
  const tenants = useTenants();
  const [openId, setOpenId] = useState<string | undefined>(session.tenantId);
  const open = tenants.data?.find((tenant) => tenant.id === openId);
  return (
    <>
      <CreateTenant />
      {tenants.isPending && <Loading what="tenants" />}
      {tenants.isError && <ErrorNote error={tenants.error} />}
      {tenants.data && (
        <section className="card">
          <h2>Tenants ({tenants.data.length})</h2>
          <div className="table-wrap">
            <table className="tenants">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Created</th>
                  <th className="num">Cost this month</th>
                  <th>Budget</th>
                </tr>
              </thead>
              <tbody>
                {tenants.data.map((tenant) => (
                  <tr
                    key={tenant.id}
                    className={`clickable${tenant.id === openId ? ' selected' : ''}`}
                    onClick={() => setOpenId(tenant.id)}
                  >
                    <td>
                      <button type="button" className="link-button" title={tenant.id}>
                        {tenant.name}
                      </button>
                    </td>
                    <td>{formatTime(tenant.createdAt)}</td>
                    <td className="num">{formatUsd(tenant.costMonthUsd ?? null)}</td>
                    <td>
                      <BudgetBar cost={tenant.costMonthUsd ?? 0} budget={tenant.monthlyUsd} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}
      {open && (
        <section className="card" aria-label={`Tenant ${open.name}`}>
          <h2>
            {open.name} <span className="muted small">{open.id}</span>
          </h2>
          <SetBudget key={open.id} tenant={open} />
          <Keys base={`/v1/tenants/${encodeURIComponent(open.id)}`} />
        </section>
      )}
    </>
  );
};

/** An admin's own tenant: its cost this month (from usage) and its keys. */
const OwnTenant = () => {
  const session = useSession();
  const today = todayIn('UTC');
  const usage = useQuery({
    queryKey: ['own-usage', session.key],
    queryFn: () =>
      session.call<UsageReport>(`/v1/usage?from=${monthStart(today)}&to=${today}&tz=UTC&groupBy=day`),
  });
  return (
    <section className="card">
      <h2>{session.me.tenant?.name}</h2>
      <p>
        Cost this month: <strong>{usage.data ? formatUsd(usage.data.totals.costUsd ?? 0) : '…'}</strong>
      </p>
      {usage.isError && <ErrorNote error={usage.error} />}
      <Keys base="/v1" />
    </section>
  );
};

export const Tenants = () => {
  const session = useSession();
  return (
    <>
      <PageTitle title="Tenants" />
      {session.isOperator ? <OperatorTenants /> : <OwnTenant />}
    </>
  );
};
