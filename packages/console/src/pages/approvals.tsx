// Pending approvals (GET /v1/approvals?status=pending: every tenant's for the operator, its own for
// an admin), each with "Approve" and "Deny".
import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { useSession } from '../api/session';
import type { TenantApproval } from '../api/types';
import { ApprovalButtons } from '../components/approval-buttons';
import { formatJson, formatTime, shortId } from '../components/format';
import { PageTitle } from '../components/layout';
import { ErrorNote, Loading } from '../components/status';
import { useTenants } from '../components/tenant-picker';

/** The Approvals page. */
export const Approvals = () => {
  const session = useSession();
  const tenants = useTenants();
  const approvals = useQuery({
    queryKey: ['approvals', session.key],
    queryFn: () =>
      session.call<{ data: TenantApproval[] }>('/v1/approvals?status=pending').then((b) => b.data),
    refetchInterval: 3000,
  });
  const tenantName = (id: string) => tenants.data?.find((tenant) => tenant.id === id)?.name ?? shortId(id);
  return (
    <>
      <PageTitle title="Approvals" />
      {approvals.isPending && <Loading what="pending approvals" />}
      {approvals.isError && <ErrorNote error={approvals.error} />}
      {approvals.data && approvals.data.length === 0 && (
        <div className="card empty">
          <p>Nothing waits for a decision.</p>
        </div>
      )}
      {approvals.data && approvals.data.length > 0 && (
        <ul className="approval-list">
          {approvals.data.map((approval) => (
            <li key={approval.approvalId} className="card approval">
              <div className="approval-head">
                <strong>{approval.tool}</strong>
                {session.isOperator && <span className="muted">{tenantName(approval.tenantId)}</span>}
                <span className="muted">{formatTime(approval.requestedAt)}</span>
              </div>
              {approval.message && <p>{approval.message}</p>}
              <pre className="json">{formatJson(approval.args)}</pre>
              <div className="approval-foot">
                <Link
                  href={`/conversations/${encodeURIComponent(approval.conversationId)}`}
                  onClick={() => session.isOperator && session.chooseTenant(approval.tenantId)}
                >
                  Open conversation
                </Link>
                <ApprovalButtons
                  conversationId={approval.conversationId}
                  approvalId={approval.approvalId}
                  tenantId={approval.tenantId}
                />
              </div>
            </li>
          ))}
        </ul>
      )}
    </>
  );
};
