/**
 * The SCIM client's delta watermark: a delta import asks the server for what it modified since the last
 * import, by `meta.lastModified` (RFC 7643 3.1), with an overlap margin. Pure, tested without a server.
 *
 * - `t`: the server's clock (its `Date` header) when the last read began, so the service's own clock plays no
 *   part. A write that lands while the read goes on has a later `lastModified` than `t`: the next delta reads it.
 * - The filter asks for `meta.lastModified gt "<t - overlap>"`, cut to whole seconds (many servers keep
 *   seconds; the margin also absorbs a server whose instances' clocks drift apart).
 * - `seen`: the `version` (else `lastModified`) of each resource the last read returned that falls inside that
 *   margin; the next delta leaves out those it returns again unchanged, so each change is reported once. Past
 *   {@link MAX_SEEN} of them (a burst) `seen` is left empty and they are reported again: the engine finds them
 *   unchanged by their content hash, so this costs work, never correctness.
 */
export const MAX_SEEN = 2000;

export interface ScimWatermark {
  /** ms since the epoch, server clock. */
  t: number;
  /** `<type>/<id>` -> version key. */
  seen: Record<string, string>;
}

/** What the watermark keeps of one resource read. */
export interface SeenResource {
  key: string;
  lastModified: number | undefined;
  version: string;
}

export function parseWatermark(text: string | null): ScimWatermark | null {
  if (!text) return null;
  try {
    const o = JSON.parse(text) as Partial<ScimWatermark> & { v?: number };
    if (o.v !== 1 || typeof o.t !== 'number' || !Number.isFinite(o.t) || !o.seen || typeof o.seen !== 'object') return null;
    return { t: o.t, seen: o.seen };
  } catch {
    return null;
  }
}

/** The instant the delta reads from: `t` less the overlap, cut to the whole second below. */
export function deltaSince(wm: ScimWatermark, overlapSeconds: number): number {
  return Math.floor((wm.t - overlapSeconds * 1000) / 1000) * 1000;
}

/** `meta.lastModified gt "2026-11-29T13:00:00Z"`: the filter of a delta import. */
export function deltaFilter(wm: ScimWatermark, overlapSeconds: number): string {
  return `meta.lastModified gt "${new Date(deltaSince(wm, overlapSeconds)).toISOString().replace(/\.\d{3}Z$/, 'Z')}"`;
}

/** Whether a resource a delta returned is new to the watermark (not the same version it reported last time). */
export function isFresh(wm: ScimWatermark, r: SeenResource): boolean {
  return wm.seen[r.key] !== r.version;
}

/** The watermark after a read that began at `t` (server clock) and returned `resources`. */
export function watermarkAfter(t: number, overlapSeconds: number, resources: Iterable<SeenResource>): string {
  const from = deltaSince({ t, seen: {} }, overlapSeconds);
  const seen: Record<string, string> = {};
  let n = 0;
  for (const r of resources) {
    if (r.lastModified !== undefined && r.lastModified < from) continue;
    if (++n > MAX_SEEN) return JSON.stringify({ v: 1, t, seen: {} });
    seen[r.key] = r.version;
  }
  return JSON.stringify({ v: 1, t, seen });
}
