// A tenant's keys: the list, a new key (shown this once, with a copy button), revoke. The
// operator manages any tenant's (`/v1/tenants/{id}/keys`), an admin its own (`/v1/keys`).
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useSession } from '../api/session';
import type { IssuedKey, KeyInfo } from '../api/types';
import { formatTime } from './format';
import { ErrorNote, Loading } from './status';

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

/** A new key of a chosen role and optional name; the key shows once below the form. */
const NewKey = ({ base }: { base: string }) => {
  const session = useSession();
  const queryClient = useQueryClient();
  const [role, setRole] = useState('admin');
  const [name, setName] = useState('');
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
  return (
    <>
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
    </>
  );
};

const KeysTable = ({ keys, onRevoke }: { keys: KeyInfo[]; onRevoke: (keyId: string) => void }) => {
  const session = useSession();
  return (
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
          {keys.map((key) => (
            <tr key={key.id}>
              <td title={key.id}>{key.name || key.id}</td>
              <td>{key.role}</td>
              <td>{formatTime(key.createdAt)}</td>
              <td>{formatTime(key.lastUsedAt)}</td>
              <td>
                {key.id !== session.me.keyId && (
                  <button type="button" className="danger small" onClick={() => onRevoke(key.id)}>
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
};

/** A tenant's keys: the list, a new key, revoke. `base` is `/v1/tenants/{id}` (operator) or `/v1`. */
export const Keys = ({ base }: { base: string }) => {
  const session = useSession();
  const queryClient = useQueryClient();
  const keys = useQuery({
    queryKey: ['keys', session.key, base],
    queryFn: () => session.call<{ data: KeyInfo[] }>(`${base}/keys`).then((body) => body.data),
  });
  const revoke = useMutation({
    mutationFn: (keyId: string) =>
      session.call(`${base}/keys/${encodeURIComponent(keyId)}`, { method: 'DELETE' }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['keys'] }),
  });
  return (
    <div className="keys">
      <h3>Keys</h3>
      <NewKey base={base} />
      {revoke.isError && <ErrorNote error={revoke.error} />}
      {keys.isPending && <Loading what="keys" />}
      {keys.isError && <ErrorNote error={keys.error} />}
      {keys.data && <KeysTable keys={keys.data} onRevoke={revoke.mutate} />}
    </div>
  );
};
