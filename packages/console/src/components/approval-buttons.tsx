// "Approve" and "Deny" for one pending approval (POST …/approvals/{approvalId}), acting in the
// approval's tenant when the operator decides.
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useSession } from '../api/session';
import { ErrorNote } from './status';

/** The decision on one pending approval, wherever it is shown (timeline, Approvals page). */
export const ApprovalButtons = ({
  conversationId,
  approvalId,
  tenantId,
}: {
  conversationId: string;
  approvalId: string;
  tenantId: string | undefined;
}) => {
  const session = useSession();
  const queryClient = useQueryClient();
  const decide = useMutation({
    mutationFn: (decision: 'approve' | 'deny') =>
      session.call(
        `/v1/conversations/${encodeURIComponent(conversationId)}/approvals/${encodeURIComponent(approvalId)}`,
        {
          method: 'POST',
          body: {
            decision,
            reason: `decided in the console by ${session.isOperator ? 'the operator' : session.me.role}`,
          },
          tenant: session.isOperator ? tenantId : undefined,
        },
      ),
    onSettled: async () => {
      await queryClient.invalidateQueries({ queryKey: ['approvals'] });
      await queryClient.invalidateQueries({ queryKey: ['conversation'] });
    },
  });
  if (decide.isSuccess) {
    return <span className="decided">{decide.variables === 'approve' ? 'Approved' : 'Denied'}</span>;
  }
  return (
    <span className="approval-buttons">
      <button
        type="button"
        className="approve"
        disabled={decide.isPending}
        onClick={() => decide.mutate('approve')}
      >
        Approve
      </button>
      <button
        type="button"
        className="deny"
        disabled={decide.isPending}
        onClick={() => decide.mutate('deny')}
      >
        Deny
      </button>
      {decide.isError && <ErrorNote error={decide.error} />}
    </span>
  );
};
