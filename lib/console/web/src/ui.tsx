import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';
import { href, setQuery } from './router';

/** Load data for a view; `reload` fetches again. Keeps the previous data while a new load runs (no jump). */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: Error | undefined; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error: Error) => live && setState((s) => ({ data: s.data, error, loading: false })),
    );
    return () => {
      live = false;
    };
    // `deps` are the caller's: the load re-runs when they change.
  }, [...deps, tick]);
  return { data: state.data, error: state.error, loading: state.loading, reload: useCallback(() => setTick((t) => t + 1), []) };
}

/** Poll while `active`: a run's progress. */
export function useInterval(fn: () => void, ms: number, active: boolean): void {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    if (!active) return;
    const id = setInterval(() => saved.current(), ms);
    return () => clearInterval(id);
  }, [ms, active]);
}

export function ErrorBox({ error }: { error?: Error }) {
  if (!error) return null;
  const errs = error instanceof ApiError ? error.errors : [];
  return (
    <div class="error" role="alert">
      {error.message}
      {errs.length > 0 && (
        <ul>
          {errs.map((e) => (
            <li key={e.path}>
              {e.path}: {e.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export interface Column<T> {
  label: string;
  cell: (row: T) => ComponentChildren;
  width?: string;
}

/** A table whose rows keep their height while loading: skeleton rows hold the space of a page. */
export function Table<T>({
  columns,
  rows,
  loading,
  empty,
  rowKey,
  caption,
  skeletonRows = 8,
}: {
  columns: Column<T>[];
  rows: T[] | undefined;
  loading: boolean;
  empty: string;
  rowKey: (r: T) => string;
  caption: string;
  skeletonRows?: number;
}) {
  return (
    <div class="table-wrap" aria-busy={loading}>
      <table>
        <caption class="sr-only">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c.label} style={c.width ? { width: c.width } : undefined}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows === undefined
            ? Array.from({ length: skeletonRows }, (_, i) => (
                <tr key={i} class="skeleton">
                  {columns.map((c) => (
                    <td key={c.label}>
                      <span class="bar" />
                    </td>
                  ))}
                </tr>
              ))
            : rows.map((r) => (
                <tr key={rowKey(r)}>
                  {columns.map((c) => (
                    <td key={c.label}>{c.cell(r)}</td>
                  ))}
                </tr>
              ))}
          {rows !== undefined && rows.length === 0 && (
            <tr>
              <td colSpan={columns.length} class="empty">
                {empty}
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}

/** Paging through `skip`/`take` in the URL. */
export function Pager({ skip, take, total }: { skip: number; take: number; total: number | undefined }) {
  const last = total === undefined ? skip + take : Math.min(skip + take, total);
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={skip === 0} onClick={() => setQuery({ skip: Math.max(0, skip - take) || undefined })}>
        Previous
      </button>
      <span aria-live="polite">{total === undefined ? '…' : total === 0 ? 'none' : `${skip + 1}–${last} of ${total}`}</span>
      <button type="button" disabled={total === undefined || skip + take >= total} onClick={() => setQuery({ skip: skip + take })}>
        Next
      </button>
    </nav>
  );
}

export function Status({ value }: { value: string | null | undefined }) {
  return <span class={`status status-${(value ?? 'none').toLowerCase()}`}>{value ?? '–'}</span>;
}

export function When({ value }: { value: string | null | undefined }) {
  if (!value) return <span>–</span>;
  return (
    <time dateTime={value} title={value}>
      {new Date(value).toLocaleString()}
    </time>
  );
}

interface LinkProps {
  to: string[];
  query?: Record<string, string | number | undefined | null>;
  children: ComponentChildren;
  role?: 'tab';
  class?: string;
  title?: string;
  'aria-selected'?: boolean;
  'aria-label'?: string;
}

export function Link({ to, query, children, ...rest }: LinkProps) {
  return (
    <a href={href(to, query)} {...rest}>
      {children}
    </a>
  );
}

export function value(v: unknown): string {
  if (v === null || v === undefined) return '–';
  if (Array.isArray(v)) return v.map(value).join('; ');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** A button that runs an action, shows its error, and is disabled while it runs. Hidden when not `allowed`. */
export function Action({
  label,
  allowed,
  run,
  kind = 'secondary',
  confirm,
}: {
  label: string;
  allowed: boolean;
  run: () => Promise<unknown>;
  kind?: 'primary' | 'secondary' | 'danger';
  confirm?: string;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  if (!allowed) return null;
  return (
    <span class="action">
      <button
        type="button"
        class={kind}
        disabled={busy}
        onClick={async () => {
          if (confirm && !window.confirm(confirm)) return;
          setBusy(true);
          setError(undefined);
          try {
            await run();
          } catch (e) {
            setError(e as Error);
          } finally {
            setBusy(false);
          }
        }}
      >
        {label}
      </button>
      <ErrorBox error={error} />
    </span>
  );
}

export function Field({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <label class="field">
      <span>{label}</span>
      {children}
    </label>
  );
}

export function num(q: URLSearchParams, name: string, fallback: number): number {
  const n = Number(q.get(name));
  return Number.isInteger(n) && n >= 0 && q.get(name) !== null ? n : fallback;
}

/**
 * Another resource shown by its name, its id at hand: as the tooltip, and shown itself (small, monospace)
 * when the resource has no name or is gone.
 */
export function Named({ name, id, to }: { name: string | undefined; id: string; to?: string[] }) {
  const text = name ? name : <code class="id">{id}</code>;
  return to ? (
    <Link to={to} title={`id ${id}`}>
      {text}
    </Link>
  ) : (
    <span title={`id ${id}`}>{text}</span>
  );
}
