// Messages a consumer gave up on (GET /v1/dead-letters), each with "Replay" (operator).
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useSession } from '../api/session';
import type { DeadLetter } from '../api/types';
import { formatTime, shortId } from '../components/format';
import { PageTitle } from '../components/layout';
import { ErrorNote, Loading, Notice } from '../components/status';
import { useTenants } from '../components/tenant-picker';

const LettersTable = ({
  letters,
  onReplay,
  replaying,
}: {
  letters: DeadLetter[];
  onReplay: (id: string) => void;
  replaying: boolean;
}) => {
  const session = useSession();
  const tenants = useTenants();
  const tenantName = (id: string | null | undefined) =>
    session.isOperator
      ? (tenants.data?.find((tenant) => tenant.id === id)?.name ?? shortId(id ?? '—'))
      : (session.me.tenant?.name ?? '—');
  return (
    <div className="table-wrap">
      <table>
        <thead>
          <tr>
            <th>Failed</th>
            <th>Consumer</th>
            <th>Event</th>
            <th>Tenant</th>
            <th className="num">Attempts</th>
            <th>Error</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {letters.map((letter) => (
            <tr key={letter.id}>
              <td>{formatTime(letter.failedAt)}</td>
              <td>{letter.consumer}</td>
              <td>{letter.eventType}</td>
              <td title={letter.tenantId ?? ''}>{tenantName(letter.tenantId)}</td>
              <td className="num">{letter.attempts}</td>
              <td className="wrap">{letter.error}</td>
              <td>
                <button
                  type="button"
                  disabled={!session.isOperator || replaying}
                  title={session.isOperator ? undefined : 'Only the operator replays'}
                  onClick={() => onReplay(letter.id)}
                >
                  Replay
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
};

/** The Dead letters page. */
export const DeadLetters = () => {
  const session = useSession();
  const queryClient = useQueryClient();
  const letters = useQuery({
    queryKey: ['dead-letters', session.key],
    queryFn: () => session.call<{ data: DeadLetter[] }>('/v1/dead-letters').then((b) => b.data),
    refetchInterval: 10_000,
  });
  const replay = useMutation({
    mutationFn: (id: string) =>
      session.call(`/v1/dead-letters/${encodeURIComponent(id)}/replay`, { method: 'POST' }).then(() => id),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['dead-letters'] }),
  });
  return (
    <>
      <PageTitle title="Dead letters" />
      {replay.isError && <ErrorNote error={replay.error} prefix="Replay" />}
      {replay.isSuccess && <Notice>Replay of {shortId(replay.data)} queued.</Notice>}
      {letters.isPending && <Loading what="dead letters" />}
      {letters.isError && <ErrorNote error={letters.error} />}
      {letters.data && letters.data.length === 0 && (
        <div className="card empty">
          <p>No dead letters: every consumer is keeping up.</p>
        </div>
      )}
      {letters.data && letters.data.length > 0 && (
        <section className="card">
          <LettersTable letters={letters.data} onReplay={replay.mutate} replaying={replay.isPending} />
        </section>
      )}
    </>
  );
};
