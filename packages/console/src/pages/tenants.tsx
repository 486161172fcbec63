// Tenants with their cost this month against their budget; for the operator: create a tenant, set
// its budget, issue and revoke its keys (a new key is shown once, with a copy button). A tenant
// admin sees its own tenant and its keys only.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { FormEvent } from 'react';
import { useState } from 'react';
import { InputError } from '../api/problem';
import { useSession } from '../api/session';
import type { Tenant, UsageReport } from '../api/types';
import { formatTime, formatUsd } from '../components/format';
import { PageTitle } from '../components/layout';
import { ErrorNote, Loading, Notice } from '../components/status';
import { Keys } from '../components/tenant-keys';
import { useTenants } from '../components/tenant-picker';
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

/** The Tenants page: every tenant for the operator, its own for an admin. */
export const Tenants = () => {
  const session = useSession();
  return (
    <>
      <PageTitle title="Tenants" />
      {session.isOperator ? <OperatorTenants /> : <OwnTenant />}
    </>
  );
};
