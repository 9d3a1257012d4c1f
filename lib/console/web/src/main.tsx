import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { configureApi } from './api';
import { completeSignIn, currentSession, signIn, signOut, type ConsoleConfig, type Session } from './auth';
import { currentRoute, href, interceptLinks, navigate, useRoute } from './router';
import { AuditScreen, ConfigScreen, RulesScreen, SchedulesScreen } from './screens/admin';
import { CasesScreen } from './screens/cases';
import { ConnectorsScreen } from './screens/connectors';
import { MeshScreen } from './screens/mesh';
import { Overview } from './screens/overview';
import { RunsScreen } from './screens/runs';
import './app.css';

const NAV: [string, string][] = [
  ['', 'Overview'],
  ['connectors', 'Connectors'],
  ['runs', 'Runs'],
  ['mesh', 'Mesh'],
  ['cases', 'Cases'],
  ['rules', 'Rules'],
  ['schedules', 'Schedules'],
  ['config', 'Configuration'],
  ['audit', 'Audit'],
];

function here(): string {
  const r = currentRoute();
  const qs = r.query.toString();
  return r.segments.join('/') + (qs ? `?${qs}` : '');
}

function App({ config }: { config: ConsoleConfig }) {
  const route = useRoute();
  const [session, setSession] = useState<Session | null>(currentSession);
  const [error, setError] = useState<string>();
  const [menu, setMenu] = useState(false);
  // Before the screens' first loads (their effects run before this component's): the API base, and a 401
  // (expired or revoked token) brings the sign-in screen back.
  configureApi(config.apiBase, () => {
    signOut();
    setSession(null);
  });
  useEffect(() => {
    if (route.segments[0] !== 'callback') return;
    completeSignIn(config, route.query).then(
      (next) => {
        setSession(currentSession());
        navigate(href([]).replace(/\/$/, '/') + next, true);
      },
      (e: Error) => setError(e.message),
    );
  }, [route.segments[0]]);
  // A new page (not a new filter): move the focus to the content, as a page load would reset it.
  const path = route.segments.join('/');
  const [shownPath, setShownPath] = useState(path);
  useEffect(() => {
    if (path === shownPath) return;
    setShownPath(path);
    document.getElementById('main')?.focus({ preventScroll: true });
  }, [path]);
  useEffect(() => {
    const title = NAV.find(([k]) => k === (route.segments[0] ?? ''))?.[1] ?? 'Console';
    document.title = `${title} · Identity Mesh Sync`;
  }, [route.segments[0]]);
  // /console/signin (the page's own sign-in form, usable before this script has loaded): start the sign-in now,
  // or go on if a session is already there.
  const signingIn = route.segments[0] === 'signin';
  useEffect(() => {
    if (!signingIn) return;
    const returnTo = route.query.get('returnTo') ?? '';
    if (session) navigate(href([]) + returnTo, true);
    else signIn(config, returnTo).catch((e: Error) => setError(e.message));
  }, [signingIn]);
  if (route.segments[0] === 'callback' || signingIn) {
    return (
      <main class="signin">
        {error ? (
          <p role="alert" class="error">
            {error} <a href={href([])}>Start again</a>
          </p>
        ) : (
          <p data-testid="signing-in">Signing in…</p>
        )}
      </main>
    );
  }
  if (!session) {
    return (
      <main class="signin">
        <h1>Identity Mesh Sync</h1>
        <p>Sign in to operate the service{config.developmentIssuer ? ' (development issuer: pick any user and role)' : ''}.</p>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
        <button type="button" class="primary" onClick={() => signIn(config, here()).catch((e: Error) => setError(e.message))}>
          Sign in
        </button>
      </main>
    );
  }
  const section = route.segments[0] ?? '';
  let screen;
  switch (section) {
    case 'connectors':
      screen = <ConnectorsScreen route={route} session={session} />;
      break;
    case 'runs':
      screen = <RunsScreen route={route} session={session} />;
      break;
    case 'mesh':
      screen = <MeshScreen route={route} session={session} />;
      break;
    case 'cases':
      screen = <CasesScreen route={route} session={session} />;
      break;
    case 'rules':
      screen = <RulesScreen route={route} />;
      break;
    case 'schedules':
      screen = <SchedulesScreen route={route} session={session} />;
      break;
    case 'config':
      screen = <ConfigScreen route={route} session={session} />;
      break;
    case 'audit':
      screen = <AuditScreen route={route} session={session} />;
      break;
    case '':
      screen = <Overview session={session} />;
      break;
    default:
      screen = (
        <p>
          No such page. <a href={href([])}>Overview</a>
        </p>
      );
  }
  return (
    <div class="shell">
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          // With <base href>, "#main" would load the base URL: move the focus instead.
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header>
        <button type="button" class="menu" aria-expanded={menu} aria-controls="nav" onClick={() => setMenu(!menu)}>
          Menu
        </button>
        <span class="brand">Identity Mesh Sync</span>
        <span class="who" data-testid="who">
          {session.user} · {session.roles.join(', ') || 'no role'}
        </span>
        <button type="button" onClick={() => (signOut(), setSession(null))}>
          Sign out
        </button>
      </header>
      <nav id="nav" aria-label="Sections" class={menu ? 'open' : ''}>
        <ul>
          {NAV.map(([k, label]) => (
            <li key={k}>
              <a href={href(k ? [k] : [])} aria-current={section === k ? 'page' : undefined} onClick={() => setMenu(false)}>
                {label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        {screen}
      </main>
    </div>
  );
}

async function boot() {
  interceptLinks();
  const root = document.getElementById('app')!;
  try {
    const res = await fetch('config.json');
    const config = (await res.json()) as ConsoleConfig;
    root.textContent = '';
    render(<App config={config} />, root);
  } catch (e) {
    root.textContent = `The console could not load its settings: ${(e as Error).message}`;
  }
}

void boot();
