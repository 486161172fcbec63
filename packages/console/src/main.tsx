// The console's entry: TanStack Query for the API calls, the session (key and tenant), the pages
// under /console (wouter), sign-in first.
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { Route, Router, Switch } from 'wouter';
import { ApiError } from './api/problem';
import { SessionProvider, useSessionState } from './api/session';
import { Layout } from './components/layout';
import { Approvals } from './pages/approvals';
import { Conversation } from './pages/conversation';
import { Conversations } from './pages/conversations';
import { DeadLetters } from './pages/dead-letters';
import { Overview } from './pages/overview';
import { SignIn } from './pages/sign-in';
import { Tenants } from './pages/tenants';
import { Usage } from './pages/usage';
import './styles.css';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A refusal (4xx) is an answer, not a blip: shown at once, not retried.
      retry: (failures, error) => !(error instanceof ApiError && error.status < 500) && failures < 2,
      refetchOnWindowFocus: false,
      staleTime: 2000,
    },
  },
});

const Pages = () => {
  const { session } = useSessionState();
  if (!session) return <SignIn />;
  return (
    <Layout>
      <Switch>
        <Route path="/" component={Overview} />
        <Route path="/tenants" component={Tenants} />
        <Route path="/conversations" component={Conversations} />
        <Route path="/conversations/:id">{(params) => <Conversation key={params.id} id={params.id} />}</Route>
        <Route path="/approvals" component={Approvals} />
        <Route path="/usage" component={Usage} />
        <Route path="/dead-letters" component={DeadLetters} />
        <Route>
          <p className="error" role="alert">
            No such page.
          </p>
        </Route>
      </Switch>
    </Layout>
  );
};

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <SessionProvider>
        <Router base="/console">
          <Pages />
        </Router>
      </SessionProvider>
    </QueryClientProvider>
  </StrictMode>,
);
