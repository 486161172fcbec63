// The operator's choice of the tenant a page is about (X-Keel-Tenant); an admin has only its own.
import { useQuery } from '@tanstack/react-query';
import { useSession } from '../api/session';
import type { Tenant } from '../api/types';

/** Every tenant (operator only; an admin's query stays idle). */
export const useTenants = () => {
  const session = useSession();
  return useQuery({
    queryKey: ['tenants', session.key],
    queryFn: () => session.call<{ data: Tenant[] }>('/v1/tenants').then((body) => body.data),
    enabled: session.isOperator,
  });
};

/** The tenant select of the top bar (the admin's tenant name instead). */
export const TenantPicker = () => {
  const session = useSession();
  const tenants = useTenants();
  if (!session.isOperator) {
    return <span className="tenant-name">{session.me.tenant?.name ?? 'no tenant'}</span>;
  }
  return (
    <label className="tenant-picker">
      <span>Tenant</span>
      <select
        value={session.tenantId ?? ''}
        onChange={(event) => session.chooseTenant(event.target.value || undefined)}
      >
        <option value="">— choose —</option>
        {(tenants.data ?? []).map((tenant) => (
          <option key={tenant.id} value={tenant.id}>
            {tenant.name}
          </option>
        ))}
      </select>
    </label>
  );
};

/** For a page about one tenant: a prompt to pick one when the operator has not. */
export const NeedsTenant = ({ what }: { what: string }) => (
  <div className="empty">
    <p>Choose a tenant at the top to see its {what}.</p>
    <TenantPicker />
  </div>
);
