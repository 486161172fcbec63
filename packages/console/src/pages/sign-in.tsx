// Sign-in with a key: the operator key shows every tenant, a tenant admin key its own tenant only.
import type { FormEvent } from 'react';
import { useState } from 'react';
import { InputError } from '../api/problem';
import { useSessionState } from '../api/session';
import { ErrorNote, Notice } from '../components/status';

/** The sign-in page, shown whenever no key is signed in. */
export const SignIn = () => {
  const { signIn, notice } = useSessionState();
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    if (key.trim() === '') {
      setError(new InputError('API key: enter a key first.'));
      return;
    }
    setBusy(true);
    try {
      await signIn(key.trim());
    } catch (failed) {
      setError(failed);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="signin">
      <form className="card signin-card" onSubmit={(event) => void submit(event)} noValidate>
        <h1>
          <span className="logo" aria-hidden="true">
            ⚓
          </span>{' '}
          Keel console
        </h1>
        <p className="muted">
          Sign in with the operator key to see every tenant, or with a tenant admin key to see your own.
        </p>
        {notice && <Notice>{notice}</Notice>}
        <label className="field">
          <span>API key</span>
          <input
            type="password"
            autoComplete="off"
            spellCheck={false}
            value={key}
            onChange={(event) => setKey(event.target.value)}
            placeholder="keel_…"
          />
        </label>
        {error !== undefined && <ErrorNote error={error} prefix="Could not sign in" />}
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </div>
  );
};
