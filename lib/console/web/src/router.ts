import { useEffect, useState } from 'preact/hooks';

// A small history router: every screen and selection lives in the URL under the console's base (/console/),
// so any view can be bookmarked, shared and reloaded (the service answers index.html for deep links).

export interface Route {
  segments: string[];
  query: URLSearchParams;
}

const listeners = new Set<() => void>();

function basePath(): string {
  return new URL(document.baseURI).pathname;
}

export function currentRoute(): Route {
  const base = basePath();
  const rel = location.pathname.startsWith(base) ? location.pathname.slice(base.length) : '';
  return { segments: rel.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(location.search) };
}

/** A link target: segments under the base and the query (empty values dropped). */
export function href(segments: string[], query: Record<string, string | number | undefined | null> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const qs = q.toString();
  return basePath() + segments.map(encodeURIComponent).join('/') + (qs ? `?${qs}` : '');
}

export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  listeners.forEach((l) => l());
  if (!replace) window.scrollTo(0, 0);
}

/** Change some query parameters of the current URL (filters, paging, selection). */
export function setQuery(changes: Record<string, string | number | undefined | null>, replace = false): void {
  const r = currentRoute();
  const q: Record<string, string> = Object.fromEntries(r.query.entries());
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === null || v === '') delete q[k];
    else q[k] = String(v);
  }
  navigate(href(r.segments, q), replace);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const update = () => setRoute(currentRoute());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

/** Same-origin link clicks go through the router (no page load); modified clicks open tabs as usual. */
export function interceptLinks(): void {
  document.addEventListener('click', (e) => {
    const a = (e.target as Element | null)?.closest?.('a');
    if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey || a.target) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || !url.pathname.startsWith(basePath())) return;
    e.preventDefault();
    navigate(url.pathname + url.search);
  });
}
